"""OpenAI's grader types, scored in the worker: ``string_check``, ``text_similarity``,
``python`` (run only in ``workers.sandbox``) and ``multi``.

``validation`` checks a grader object before a job is created (the platform imports it);
``scoring`` turns (grader, sample, item) into a clipped score or a counted error.
"""
