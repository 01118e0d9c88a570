"""Graders: OpenAI's types scored as documented, clipped to range, errors counted not raised."""

from __future__ import annotations

import math
import shutil

import pytest

from workers.graders import formula
from workers.graders.scoring import Scorer
from workers.graders.templates import render, sample_of
from workers.graders.validation import GraderInvalid, grader_validate


def check(operation: str, reference: str = "{{item.answer}}") -> dict:
    return {"type": "string_check", "name": "check", "input": "{{sample.output_text}}",
            "reference": reference, "operation": operation}


def score(grader: dict, text: str, item: dict | None = None):
    with Scorer(grader, sandbox_workers=1) as scorer:
        return scorer.grade(sample_of(text), item or {})


@pytest.mark.parametrize(("operation", "text", "answer", "expected"), [
    ("eq", "42", "42", 1.0), ("eq", "42 ", "42", 0.0), ("eq", "Paris", "paris", 0.0),
    ("ne", "41", "42", 1.0), ("ne", "42", "42", 0.0),
    ("like", "the answer is 42.", "42", 1.0), ("like", "The Answer", "answer", 0.0),
    ("ilike", "The ANSWER is here", "answer", 1.0), ("ilike", "nothing", "answer", 0.0),
])
def test_string_check_operations(operation, text, answer, expected):
    assert score(check(operation), text, {"answer": answer}).score == expected


def test_templates_reach_nested_item_keys_and_json_output():
    sample = sample_of('{"total": 7}')

    assert sample["output_json"] == {"total": 7}
    assert render("{{ item.meta.id }}/{{sample.output_json.total}}", sample=sample,
                  item={"meta": {"id": "x1"}}) == "x1/7"


def test_a_missing_item_key_is_an_error_for_that_sample_not_a_crash():
    result = score(check("eq", "{{item.nope}}"), "42", {"answer": "42"})

    assert result.score == 0.0 and "item.nope" in result.error


@pytest.mark.parametrize(("metric", "text", "reference", "low", "high"), [
    ("fuzzy_match", "kitten", "sitting", 0.55, 0.65),
    ("fuzzy_match", "same words", "same words", 1.0, 1.0),
    ("bleu", "the cat sat on the mat", "the cat sat on the mat", 0.99, 1.0),
    ("bleu", "a dog barked", "the cat sat on the mat", 0.0, 0.05),
    ("gleu", "the cat sat on the mat", "the cat sat on the mat", 1.0, 1.0),
    ("rouge_1", "the cat sat", "the cat sat on the mat", 0.6, 0.7),
    ("rouge_2", "the cat sat", "the cat sat on the mat", 0.5, 0.6),
    ("rouge_l", "the cat sat", "the cat sat on the mat", 0.6, 0.7),
])
def test_text_similarity_metrics_through_their_libraries(metric, text, reference, low, high):
    grader = {"type": "text_similarity", "input": "{{sample.output_text}}",
              "reference": "{{item.reference}}", "evaluation_metric": metric}

    result = score(grader, text, {"reference": reference})

    assert result.error is None and low <= result.score <= high


def test_multi_combines_sub_graders_with_the_formula_and_clips_to_its_range():
    grader = {"type": "multi", "graders": {"exact": check("eq"), "near": check("like")},
              "calculate_output": "0.75 * exact + 0.5 * near", "range": [0, 1]}

    assert score(grader, "42", {"answer": "42"}).score == 1.0  # 1.25 clipped
    partial = score(grader, "x42", {"answer": "42"})
    assert partial.score == 0.5 and partial.sub_scores == {"exact": 0.0, "near": 1.0}


def test_a_formula_that_divides_by_zero_is_an_error_for_that_sample():
    grader = {"type": "multi", "graders": {"exact": check("eq")},
              "calculate_output": "1 / exact"}

    result = score(grader, "41", {"answer": "42"})

    assert result.score == 0.0 and "ZeroDivisionError" in result.error


@pytest.mark.parametrize("expression", [
    "__import__('os').system('id')", "exact.__class__", "(lambda: 1)()", "exact[0]",
    "open('x')", "[1, 2]", "'text'", "exact if exact else 1", "max(x=1)",
])
def test_the_formula_evaluator_refuses_anything_but_arithmetic(expression):
    with pytest.raises(formula.FormulaError):
        formula.parse(expression, {"exact"})


def test_the_formula_evaluator_computes_arithmetic_and_functions():
    tree = formula.parse("max(a, b) ** 2 - abs(-b) + (a >= 0.5)", {"a", "b"})

    assert formula.evaluate(tree, {"a": 0.5, "b": 0.25}) == pytest.approx(1.0)


def test_a_huge_exponent_is_refused_at_evaluation():
    tree = formula.parse("a ** 1000000", {"a"})

    with pytest.raises(formula.FormulaError):
        formula.evaluate(tree, {"a": 10.0})


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
class TestPythonGraders:
    def test_a_python_grader_scores_in_the_sandbox(self):
        grader = {"type": "python", "source":
                  "def grade(sample, item):\n"
                  "    return 1.0 if sample['output_text'] == item['answer'] else 0.25\n"}

        assert score(grader, "42", {"answer": "42"}).score == 1.0
        assert score(grader, "41", {"answer": "42"}).score == 0.25

    @pytest.mark.parametrize(("value", "expected_error"), [
        ("float('nan')", "nan"), ("float('inf')", "inf"), ("'high'", "returned str")])
    def test_nan_infinity_and_text_are_counted_errors(self, value, expected_error):
        grader = {"type": "python", "source": f"def grade(sample, item):\n    return {value}\n"}

        result = score(grader, "42")

        assert result.score == 0.0 and expected_error in result.error

    def test_python_results_are_clipped_to_the_range(self):
        grader = {"type": "python", "range": [0, 1],
                  "source": "def grade(sample, item):\n    return 7\n"}

        assert score(grader, "x").score == 1.0

    def test_a_multi_grader_with_a_python_sub_grader_fans_out_over_the_pool(self):
        grader = {"type": "multi", "calculate_output": "(exact + py) / 2",
                  "graders": {"exact": check("eq"), "py": {
                      "type": "python",
                      "source": "def grade(s, i):\n    return len(s['output_text']) / 10\n"}}}

        with Scorer(grader, sandbox_workers=2) as scorer:
            grades = scorer.grade_many([(sample_of(str(n)), {"answer": "12345"})
                                        for n in (1, 12345, 22)])
        assert [g.score for g in grades] == pytest.approx([0.05, 0.75, 0.1])


def test_validation_points_at_the_nested_field():
    grader = {"type": "multi", "calculate_output": "a",
              "graders": {"a": {"type": "text_similarity", "input": "{{sample.output_text}}",
                                "reference": "x", "evaluation_metric": "cosine"}}}

    with pytest.raises(GraderInvalid) as caught:
        grader_validate(grader)
    assert caught.value.path == ".graders.a.evaluation_metric"


def test_results_stay_finite():
    result = score(check("eq"), "42", {"answer": "42"})
    assert math.isfinite(result.score)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_python_graders_keep_working_across_many_batches():
    """Sandboxes outlive each batch (they die with the thread that started them)."""
    grader = {"type": "python", "source": "def grade(s, i):\n    return 1.0\n"}

    with Scorer(grader, sandbox_workers=2) as scorer:
        for _ in range(3):
            grades = scorer.grade_many([(sample_of("x"), {})] * 4)
            assert [g.error for g in grades] == [None] * 4
