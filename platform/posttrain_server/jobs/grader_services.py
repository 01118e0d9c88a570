"""Graders on one sample, before paying for a run: OpenAI's ``alpha/graders`` endpoints.

The scoring is the worker's own (``workers.graders``), so what this returns is what a
reinforcement job would reward; python graders run in the same sandbox as in training.
"""

from __future__ import annotations

import time
from typing import Any

from posttrain_server.api.errors import ApiError
from workers.graders.scoring import Scorer
from workers.graders.templates import sample_of
from workers.graders.validation import GraderInvalid, grader_validate
from workers.sandbox.pool import SandboxUnavailable

ERROR_FLAGS = ("formula_parse_error", "invalid_variable_error", "model_grader_parse_error",
               "model_grader_refusal_error", "model_grader_server_error",
               "other_error", "python_grader_runtime_error", "python_grader_server_error",
               "sample_parse_error", "truncated_observation_error",
               "unresponsive_reward_error")


def grader_check(*, grader: Any) -> dict[str, Any]:
    """The grader as it will be used, or an ApiError whose param names the bad field."""
    try:
        grader_validate(grader)
    except GraderInvalid as exc:
        raise ApiError(f"Invalid grader: {exc.message}", param=f"grader{exc.path}",
                       code="invalid_grader") from exc
    return grader


def _flags(error: str | None, grader: dict[str, Any]) -> dict[str, Any]:
    flags: dict[str, Any] = dict.fromkeys(ERROR_FLAGS, False)
    flags["python_grader_runtime_error_details"] = None
    if error is None:
        return flags
    if "is missing from this" in error:
        flags["invalid_variable_error"] = True
    elif "calculate_output" in error:
        flags["formula_parse_error"] = True
    elif "longer than" in error:
        flags["unresponsive_reward_error"] = True
    elif "exceeded" in error:
        flags["truncated_observation_error"] = True
    elif grader.get("type") == "python" or "grade" in error:
        flags["python_grader_runtime_error"] = True
        flags["python_grader_runtime_error_details"] = error
    else:
        flags["other_error"] = True
    return flags


def grader_run(*, grader: Any, model_sample: str, item: dict[str, Any] | None) -> dict[str, Any]:
    """Score one model sample against one dataset item, in OpenAI's response shape."""
    grader_check(grader=grader)
    started = time.monotonic()
    try:
        with Scorer(grader, sandbox_workers=1) as scorer:
            grade = scorer.grade(sample_of(model_sample), item or {})
    except SandboxUnavailable as exc:
        raise ApiError(str(exc), param="grader.type", code="sandbox_unavailable",
                       status_code=503) from exc
    return {
        "reward": grade.score,
        "metadata": {
            "name": grader.get("name", ""),
            "type": grader["type"],
            "errors": _flags(grade.error, grader),
            "execution_time": round(time.monotonic() - started, 4),
            "scores": grade.sub_scores or {},
            "token_usage": None,
            "sampled_model_name": None,
        },
        "sub_rewards": grade.sub_scores or {},
        "model_grader_token_usage_per_model": {},
        # Posttrain extension: the reason, when the sample could not be graded.
        "error": grade.error,
    }
