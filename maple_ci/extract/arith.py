"""Bash's arithmetic expansion `$(( ))` over signed 64-bit integers (bash(1) "ARITHMETIC EVALUATION"),
worked out without running anything: the names in it are looked up, and an unknown one leaves the
whole expression unknown."""

from __future__ import annotations

import ast
import re
from typing import Callable, Optional

Lookup = Callable[[str], Optional[object]]  # a name's value: str, list (array), or None when unknown

_WORD = 1 << 64  # bash's arithmetic is on signed 64-bit integers and wraps around


def _wrap(value: int) -> int:
    value %= _WORD
    return value - _WORD if value >= _WORD >> 1 else value


def _divide(left: int, right: int) -> int:  # C's division: truncated toward zero
    quotient = abs(left) // abs(right)
    return quotient if (left < 0) == (right < 0) else -quotient


def _power(left: int, right: int) -> int:
    if right < 0:
        raise ValueError("exponent less than 0")  # bash refuses it too
    return pow(left, right, _WORD)  # modular: 9**9**9 takes microseconds, as in bash


_ARITH_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.FloorDiv: _divide, ast.Mod: lambda a, b: a - _divide(a, b) * b, ast.Pow: _power,
              ast.LShift: lambda a, b: a << (b & 63), ast.RShift: lambda a, b: a >> (b & 63),
              ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}
def arith(expr: str, lookup: Lookup) -> Optional[int]:
    """Value of a $(( )) expression; None if a name in it is unknown or it is not arithmetic."""
    unknown = []

    def name(match):
        value = lookup(match.group(1))
        text = str(value).strip() if isinstance(value, str) else ""
        if not re.fullmatch(r"-?\d+", text):
            unknown.append(match.group(1))
            return "0"
        return f"({text})"

    expr = re.sub(r"\$\{?([A-Za-z_]\w*)\}?", r"\1", expr)  # inside $(( )) a name needs no $
    expr = re.sub(r"\b([A-Za-z_]\w*)\b", name, expr)
    if unknown:
        return None

    def evaluate(node):  # every intermediate value wrapped to 64 bits, as bash computes it
        if isinstance(node, ast.Expression):
            return evaluate(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return _wrap(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            operand = evaluate(node.operand)
            return _wrap(-operand if isinstance(node.op, ast.USub) else ~operand if isinstance(node.op, ast.Invert)
                         else operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            return _wrap(_ARITH_OPS[type(node.op)](evaluate(node.left), evaluate(node.right)))
        raise ValueError("unsupported")

    try:
        return evaluate(ast.parse(expr.strip().replace("/", "//"), mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, OverflowError):
        return None
