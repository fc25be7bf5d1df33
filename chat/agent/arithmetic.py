"""Safe arithmetic for the calculator tool: a small AST walker, never eval."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

MAX_LENGTH = 200
MAX_EXPONENT = 1000
MAX_MAGNITUDE = 10**100

BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
FUNCTIONS: dict[str, Callable[[Any], Any]] = {"sqrt": math.sqrt, "abs": abs, "round": round}


class ArithmeticError_(ValueError):
    """The expression is not plain arithmetic, or its result is out of range."""


def evaluate(expression: str) -> int | float:
    text = expression.replace("×", "*").replace("÷", "/").replace("^", "**").strip()
    if not text:
        raise ArithmeticError_("empty expression")
    if len(text) > MAX_LENGTH:
        raise ArithmeticError_("expression too long")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ArithmeticError_("not an arithmetic expression") from None
    result = _walk(tree.body)
    if isinstance(result, float) and not math.isfinite(result):
        raise ArithmeticError_("result out of range")
    if isinstance(result, float) and result.is_integer() and abs(result) < 2**53:
        return int(result)
    return result


def _walk(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value  # type: ignore[return-value]  # checked on the line above
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_walk(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _walk(node.left), _walk(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ArithmeticError_("exponent too large")
        try:
            result = BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ArithmeticError_("division by zero") from None
        except OverflowError:
            raise ArithmeticError_("result out of range") from None
        if isinstance(result, complex) or abs(result) > MAX_MAGNITUDE:
            raise ArithmeticError_("result out of range")
        return result
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and len(node.args) == 1
        and not node.keywords
    ):
        try:
            return FUNCTIONS[node.func.id](_walk(node.args[0]))
        except ValueError:
            raise ArithmeticError_(f"{node.func.id} of a negative number") from None
    raise ArithmeticError_("only numbers, + - * / // % ** and sqrt, abs, round are allowed")
