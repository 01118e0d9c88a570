"""Scoring one sample with one grader: a number in the grader's range, or an error.

An error (a missing ``item`` key, NaN or infinity, a python grader that failed) never raises
out of here: it scores 0 for training and is counted, so a bad sample cannot crash a job.
Python graders run only through a ``SandboxPool``; this module never executes user code.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from workers.graders import formula, templates
from workers.graders.validation import grader_range
from workers.sandbox.pool import SandboxPool


@dataclass(frozen=True)
class Grade:
    score: float  # clipped to the grader's range; 0 (or the low end) on error
    error: str | None = None
    sub_scores: dict[str, float] | None = None


class Scorer:
    """One grader, ready to score: python graders get their sandbox pools started lazily."""

    def __init__(self, grader: dict[str, Any], *, sandbox_workers: int = 2) -> None:
        self.grader, self.sandbox_workers = grader, sandbox_workers
        self._pools: dict[str, SandboxPool] = {}
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def grade(self, sample: dict[str, Any], item: dict[str, Any]) -> Grade:
        low, high = grader_range(self.grader)
        try:
            value, subs = self._score(self.grader, "", sample, item)
        except _SampleError as exc:
            return Grade(score=max(low, 0.0) if low <= 0 <= high else low, error=str(exc))
        if not math.isfinite(value):
            return Grade(score=max(low, 0.0) if low <= 0 <= high else low,
                         error=f"the grader returned {value}")
        return Grade(score=min(high, max(low, value)), sub_scores=subs or None)

    def grade_many(self, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Grade]:
        """Grades in order; python graders fan out over the pool's sandboxes."""
        if not _uses_python(self.grader) or self.sandbox_workers <= 1:
            return [self.grade(sample, item) for sample, item in pairs]
        if self._executor is None:
            # Long-lived threads: a sandbox dies with the thread that started it
            # (bubblewrap's --die-with-parent is a per-thread parent-death signal).
            self._executor = ThreadPoolExecutor(self.sandbox_workers,
                                                thread_name_prefix="grader")
        return list(self._executor.map(lambda pair: self.grade(*pair), pairs))

    def _score(self, grader: dict[str, Any], path: str, sample: dict[str, Any],
               item: dict[str, Any]) -> tuple[float, dict[str, float]]:
        kind = grader["type"]
        if kind == "string_check":
            return _string_check(grader, sample, item), {}
        if kind == "text_similarity":
            return _text_similarity(grader, sample, item), {}
        if kind == "python":
            outcome = self._pool(path, grader["source"]).grade(sample, item)
            if outcome.error is not None or outcome.score is None:
                raise _SampleError(outcome.error or "no score")
            return outcome.score, {}
        values: dict[str, float] = {}
        for name, sub in grader["graders"].items():
            value, _ = self._score(sub, f"{path}.{name}", sample, item)
            if not math.isfinite(value):
                raise _SampleError(f"sub-grader {name} returned {value}")
            low, high = grader_range(sub)
            values[name] = min(high, max(low, value))
        tree = formula.parse(grader["calculate_output"], set(values))
        try:
            return formula.evaluate(tree, values), values
        except formula.FormulaError as exc:
            raise _SampleError(f"calculate_output {exc}") from exc

    def _pool(self, path: str, source: str) -> SandboxPool:
        with self._lock:
            if path not in self._pools:
                self._pools[path] = SandboxPool(source, size=self.sandbox_workers)
            return self._pools[path]

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SampleError(Exception):
    pass


def _uses_python(grader: dict[str, Any]) -> bool:
    if grader.get("type") == "python":
        return True
    return any(_uses_python(sub) for sub in (grader.get("graders") or {}).values())


def _inputs(grader: dict[str, Any], sample: dict[str, Any], item: dict[str, Any]
            ) -> tuple[str, str]:
    try:
        return (templates.render(grader["input"], sample=sample, item=item),
                templates.render(grader["reference"], sample=sample, item=item))
    except templates.TemplateError as exc:
        raise _SampleError(str(exc)) from exc


def _string_check(grader: dict[str, Any], sample: dict[str, Any], item: dict[str, Any]
                  ) -> float:
    text, reference = _inputs(grader, sample, item)
    operation = grader["operation"]
    if operation == "eq":
        return float(text == reference)
    if operation == "ne":
        return float(text != reference)
    if operation == "like":
        return float(reference in text)
    return float(reference.lower() in text.lower())  # ilike


def _text_similarity(grader: dict[str, Any], sample: dict[str, Any], item: dict[str, Any]
                     ) -> float:
    text, reference = _inputs(grader, sample, item)
    metric = grader["evaluation_metric"]
    if metric == "fuzzy_match":
        from rapidfuzz import fuzz

        return fuzz.ratio(text, reference) / 100.0
    if metric in {"bleu", "gleu"}:
        import sacrebleu

        if metric == "bleu":
            return sacrebleu.sentence_bleu(text, [reference]).score / 100.0
        return _gleu(text, reference)
    from rouge_score import rouge_scorer

    kind = "rougeL" if metric == "rouge_l" else f"rouge{metric[-1]}"
    scorer = rouge_scorer.RougeScorer([kind], use_stemmer=False)
    return float(scorer.score(reference, text)[kind].fmeasure)


def _gleu(text: str, reference: str, max_n: int = 4) -> float:
    """Google-BLEU (Wu et al., 2016): min(precision, recall) of 1..4-grams, as NLTK defines
    it; computed here because sacrebleu has no GLEU."""
    hyp, ref = text.split(), reference.split()

    def grams(words: list[str]) -> dict[tuple[str, ...], int]:
        counts: dict[tuple[str, ...], int] = {}
        for n in range(1, max_n + 1):
            for i in range(len(words) - n + 1):
                gram = tuple(words[i:i + n])
                counts[gram] = counts.get(gram, 0) + 1
        return counts

    hyp_grams, ref_grams = grams(hyp), grams(ref)
    overlap = sum(min(count, ref_grams.get(gram, 0)) for gram, count in hyp_grams.items())
    total_hyp, total_ref = sum(hyp_grams.values()), sum(ref_grams.values())
    if not total_hyp or not total_ref:
        return 0.0
    return min(overlap / total_hyp, overlap / total_ref)
