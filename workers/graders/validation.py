"""Checking a grader object at create time, with the path of the bad field.

The platform turns ``GraderInvalid.path`` into the error's ``param``
(``method.reinforcement.grader.graders.exact.operation``), so a user sees which field to fix.
"""

from __future__ import annotations

import math
from typing import Any

from workers.graders import formula, templates
from workers.sandbox.pool import source_check

STRING_CHECK_OPERATIONS = {"eq", "ne", "like", "ilike"}
SIMILARITY_METRICS = {"fuzzy_match", "bleu", "gleu", "meteor", "cosine", "rouge_1", "rouge_2",
                      "rouge_3", "rouge_4", "rouge_5", "rouge_l"}
SUPPORTED_SIMILARITY = {"fuzzy_match", "bleu", "gleu", "rouge_1", "rouge_2", "rouge_3",
                        "rouge_4", "rouge_5", "rouge_l"}
GRADER_TYPES = {"string_check", "text_similarity", "python", "multi"}
MAX_DEPTH = 3


class GraderInvalid(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path, self.message = path, f"{path.lstrip('.')}: {message}" if path else message


def grader_validate(grader: Any, path: str = "", depth: int = 0) -> None:
    """Raise GraderInvalid for the first problem; return quietly for a usable grader."""
    if not isinstance(grader, dict):
        raise GraderInvalid(path, "must be an object")
    kind = grader.get("type")
    if kind in {"score_model", "label_model", "endpoint"}:
        raise GraderInvalid(f"{path}.type", f"{kind} graders are not available on this "
                            f"server; use one of {', '.join(sorted(GRADER_TYPES))}")
    if kind not in GRADER_TYPES:
        raise GraderInvalid(f"{path}.type", f"must be one of {', '.join(sorted(GRADER_TYPES))}")
    name = grader.get("name", "")
    if not isinstance(name, str) or len(name) > 200:
        raise GraderInvalid(f"{path}.name", "must be a string of at most 200 characters")
    _validate_range(grader, path)
    if kind in {"string_check", "text_similarity"}:
        for field in ("input", "reference"):
            if field not in grader:
                raise GraderInvalid(f"{path}.{field}", "is required")
            problem = templates.template_errors(grader[field])
            if problem:
                raise GraderInvalid(f"{path}.{field}", problem)
    if kind == "string_check":
        if grader.get("operation") not in STRING_CHECK_OPERATIONS:
            raise GraderInvalid(f"{path}.operation",
                                f"must be one of {', '.join(sorted(STRING_CHECK_OPERATIONS))}")
    elif kind == "text_similarity":
        metric = grader.get("evaluation_metric")
        if metric not in SIMILARITY_METRICS:
            raise GraderInvalid(f"{path}.evaluation_metric",
                                f"must be one of {', '.join(sorted(SIMILARITY_METRICS))}")
        if metric not in SUPPORTED_SIMILARITY:
            raise GraderInvalid(f"{path}.evaluation_metric", f"{metric} is not available on "
                                "this server yet")
        threshold = grader.get("pass_threshold")
        if threshold is not None and not _number(threshold):
            raise GraderInvalid(f"{path}.pass_threshold", "must be a number")
    elif kind == "python":
        problem = source_check(grader.get("source"))
        if problem:
            raise GraderInvalid(f"{path}.source", problem)
    elif kind == "multi":
        _validate_multi(grader, path, depth)


def _validate_multi(grader: dict[str, Any], path: str, depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise GraderInvalid(path, f"multi graders nest at most {MAX_DEPTH} deep")
    graders = grader.get("graders")
    if not isinstance(graders, dict) or not graders or len(graders) > 16:
        raise GraderInvalid(f"{path}.graders", "must be an object of 1 to 16 named graders")
    for key, sub in graders.items():
        if not key.isidentifier():
            raise GraderInvalid(f"{path}.graders.{key}", "names must be identifiers, so the "
                                "formula can refer to them")
        grader_validate(sub, f"{path}.graders.{key}", depth + 1)
    try:
        formula.parse(grader.get("calculate_output"), set(graders))
    except formula.FormulaError as exc:
        raise GraderInvalid(f"{path}.calculate_output", str(exc)) from exc


def _number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _validate_range(grader: dict[str, Any], path: str) -> None:
    value = grader.get("range")
    if value is None:
        return
    if (not isinstance(value, list) or len(value) != 2 or not all(map(_number, value))
            or value[0] >= value[1]):
        raise GraderInvalid(f"{path}.range", "must be [low, high] with low < high")


def grader_range(grader: dict[str, Any]) -> tuple[float, float]:
    """Scores are clipped to this: the grader's ``range``, else [0, 1]."""
    low, high = grader.get("range") or (0.0, 1.0)
    return float(low), float(high)
