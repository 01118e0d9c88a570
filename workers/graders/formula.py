"""A safe arithmetic evaluator for ``multi`` graders' ``calculate_output``: never ``eval``.

The formula is parsed with ``ast`` and only numbers, sub-grader names, ``+ - * / **``,
unary minus, comparisons and a few functions (min, max, abs, floor, ceil, sqrt, log, exp) are
walked; anything else (attributes, calls to other names, subscripts, lambdas) is refused when
the grader is validated, before any job exists.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.Mod: operator.mod,
}
COMPARE: dict[type, Callable[[float, float], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min, "max": max, "abs": abs, "floor": math.floor, "ceil": math.ceil,
    "sqrt": math.sqrt, "log": math.log, "exp": math.exp,
}
MAX_FORMULA_CHARS = 2000


class FormulaError(Exception):
    pass


def parse(formula: Any, names: set[str]) -> ast.Expression:
    """The checked syntax tree; FormulaError says what is not allowed."""
    if not isinstance(formula, str) or not formula.strip():
        raise FormulaError("must be a non-empty string")
    if len(formula) > MAX_FORMULA_CHARS:
        raise FormulaError(f"is longer than {MAX_FORMULA_CHARS} characters")
    try:
        tree = ast.parse(formula.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"is not a valid expression: {exc.msg}") from exc
    for node in ast.walk(tree):
        _check(node, names)
    return tree


def _check(node: ast.AST, names: set[str]) -> None:
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Name,
               ast.Constant, ast.Load, ast.USub, ast.UAdd, *BINARY, *COMPARE)
    if not isinstance(node, allowed):
        raise FormulaError(f"may not use {type(node).__name__}")
    if isinstance(node, ast.Constant) and (isinstance(node.value, bool)
                                           or not isinstance(node.value, int | float)):
        raise FormulaError(f"may not use the constant {node.value!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise FormulaError(f"may call only {', '.join(sorted(FUNCTIONS))}")
        if node.keywords:
            raise FormulaError("may not use keyword arguments")
    elif isinstance(node, ast.Name) and node.id not in names and node.id not in FUNCTIONS:
        raise FormulaError(f"refers to {node.id!r}, which is not a sub-grader "
                           f"({', '.join(sorted(names)) or 'none'})")


def evaluate(tree: ast.Expression, values: dict[str, float]) -> float:
    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.UnaryOp):
            operand = walk(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise FormulaError("exponent too large")
            return BINARY[type(node.op)](left, right)
        if isinstance(node, ast.Compare):
            left = walk(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = walk(comparator)
                if not COMPARE[type(op)](left, right):
                    return 0.0
                left = right
            return 1.0
        if isinstance(node, ast.Call):
            return FUNCTIONS[node.func.id](*(walk(arg) for arg in node.args))  # type: ignore[attr-defined]
        raise FormulaError(f"may not use {type(node).__name__}")

    try:
        return float(walk(tree))
    except (ArithmeticError, ValueError, TypeError, OverflowError) as exc:
        raise FormulaError(f"failed: {type(exc).__name__}: {exc}") from exc
