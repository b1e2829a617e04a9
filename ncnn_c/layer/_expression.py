"""ncnn's shape expressions: sizes computed at run time from the shapes of a layer's inputs.

Some layers take a string param holding a comma-separated list of expressions (Interp's
``size_expr``, Reshape's ``shape_expr``, Crop's ``starts_expr`` / ``ends_expr`` /
``axes_expr``). The syntax is prefix calls, ``op(arg, arg)``, nested freely::

    //(0w,2),*(0h,2),0c        ->  [in0.w // 2, in0.h * 2, in0.c]

Semantics, as ncnn's evaluator defines them (src/expression.cpp):

* The text is cut at ``(``, ``)`` and ``,`` into tokens; the brackets carry no structure. The
  tokens are then read from the last to the first with a value stack: an operand is pushed,
  an operator pops its operands (the first one popped is its first argument) and pushes the
  result. Whatever remains on the stack, from the top down, is the result list; each result
  is converted to int by truncation. So an operator's arity decides the grouping, not the
  brackets: ``+(1,2,3)`` yields ``[3, 3]``.
* Operands: ``<i><x>`` (exactly two characters: blob index 0-9 and one of ``w h d c n``) is
  that dimension of input ``i`` (of its unpacked shape: a 2-D blob has ``d = c = 1``; ``n``
  is the batch count, 1 outside batch mode); any other token is a number read the way C's
  ``sscanf`` reads ``%d`` and ``%f`` (a leading prefix, so ``10w`` reads as 10). A literal
  whose float and int readings agree is an int, otherwise a float.
* Values are int32 or float32. ``+ - * // max min`` and ``abs neg sign square`` keep ints
  as ints (C arithmetic: wrapping, ``//`` truncating toward zero) and work in float32 when an
  operand is a float (``//`` then floors). ``trunc ceil floor round`` turn a float into an
  int (``round``: halves away from zero). The math functions (``exp``, ``sqrt``, ``sin`` ...,
  ``/``, ``pow``, ``fmod``, ``atan2``, ``remainder``, ``logaddexp``) always give a float.
  ``and or xor lshift rshift`` work on the raw 32 bits of their operands.
* A float that is not finite or does not fit an int32 converts to INT_MIN (x86's answer).

Where ncnn's C++ would read an empty stack or divide an int by zero, this module raises
``ExpressionError`` with a message; layers log it and fail. ``ShapeExpression`` validates the
token list once (every token known, every operator fed) so that malformed models are refused
at load time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

INT_MIN = -(2**31)

_SEPARATORS = re.compile(r"[(),]")

# operator name -> arity
_BINARY_TYPED = ("+", "-", "*", "//", "max", "min")
_UNARY_TYPED = ("abs", "neg", "sign", "square")
_ROUNDING = ("trunc", "ceil", "floor", "round")
_UNARY_FLOAT = (
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "exp", "log",
    "log10", "reciprocal", "rsqrt", "sin", "sinh", "sqrt", "tan", "tanh",
)  # fmt: skip
_BINARY_FLOAT = ("/", "atan2", "fmod", "pow", "remainder", "logaddexp")
_BITWISE = ("and", "or", "xor", "lshift", "rshift")

ARITY: dict[str, int] = {
    **{op: 2 for op in _BINARY_TYPED + _BINARY_FLOAT + _BITWISE},
    **{op: 1 for op in _UNARY_TYPED + _ROUNDING + _UNARY_FLOAT},
}

_BLOB_DIMS = "whdcn"

# sscanf-like prefixes: optional leading white space, then the number
_INT_PREFIX = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_FLOAT_PREFIX = re.compile(
    r"[ \t\n\v\f\r]*("
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[+-]?(?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?)"
    r")"
)


class ExpressionError(ValueError):
    """A malformed expression, or one that cannot be evaluated on the given inputs."""


# -- values: (is_float, value) with value a Python int in int32 range or an np.float32 -----------
Value = tuple[bool, "int | np.float32"]


def _wrap(v: int) -> int:
    """C int32 wrap-around of an exact integer result."""
    return ((v + 2**31) & 0xFFFFFFFF) - 2**31


def _f32(v) -> np.float32:
    return np.float32(v)


def _to_int(f) -> int:
    """C's (int) conversion of a float: truncation; nan, inf and out-of-range give INT_MIN."""
    x = float(f)
    if not math.isfinite(x):
        return INT_MIN
    t = math.trunc(x)
    return t if -(2**31) <= t < 2**31 else INT_MIN


def _as_float(v: Value) -> np.float32:
    return v[1] if v[0] else _f32(v[1])  # type: ignore[return-value]


def _bits(v: Value) -> int:
    """The operand's 32 bits as an int (ncnn reads the union's int member, even for a float)."""
    if v[0]:
        return int(np.asarray(v[1], np.float32).view(np.int32))
    return int(v[1])


def _literal(tok: str) -> Value:
    mi = _INT_PREFIX.match(tok)
    mf = _FLOAT_PREFIX.match(tok)
    if mf is None:
        raise ExpressionError(f"malformed literal token {tok!r}")
    s = mf.group(1)
    try:
        vf = _f32(float.fromhex(s)) if "x" in s.lower() else _f32(float(s))
    except (ValueError, OverflowError):
        raise ExpressionError(f"malformed literal token {tok!r}") from None
    if mi is not None:
        vi = _wrap(max(min(int(mi.group(1)), 2**63 - 1), -(2**63)))
        if _f32(vi) == vf:
            return (False, vi)
    return (True, vf)


def tokenize(expr: str) -> list[str]:
    """The tokens of ``expr``: the text between the separators ``(``, ``)`` and ``,``."""
    return [t for t in _SEPARATORS.split(expr) if t]


def _blob_ref(tok: str) -> tuple[int, str] | None:
    if len(tok) == 2 and "0" <= tok[0] <= "9" and tok[1] in _BLOB_DIMS:
        return int(tok[0]), tok[1]
    return None


def count_expression_blobs(expr: str) -> int:
    """How many inputs the expression needs: one more than the highest blob index it names."""
    return max((ref[0] + 1 for ref in map(_blob_ref, tokenize(expr)) if ref is not None), default=0)


def blob_dims(m) -> dict[str, int]:
    """The w, h, d, c, n an expression sees for a Mat (ncnn's ``Mat::shape()``; empty: zeros)."""
    dims = getattr(m, "dims", 0)
    n = int(getattr(m, "n", 1) or 1)
    if dims == 1:
        return {"w": m.w, "h": 1, "d": 1, "c": 1, "n": n}
    if dims == 2:
        return {"w": m.w, "h": m.h, "d": 1, "c": 1, "n": n}
    if dims == 3:
        return {"w": m.w, "h": m.h, "d": 1, "c": m.c, "n": n}
    if dims == 4:
        return {"w": m.w, "h": m.h, "d": m.d, "c": m.c, "n": n}
    return {"w": 0, "h": 0, "d": 0, "c": 0, "n": n}


# -- operators ----------------------------------------------------------------------------------
def _binary_typed(op: str, a: Value, b: Value) -> Value:
    if not a[0] and not b[0]:
        x, y = int(a[1]), int(b[1])
        if op == "+":
            return (False, _wrap(x + y))
        if op == "-":
            return (False, _wrap(x - y))
        if op == "*":
            return (False, _wrap(x * y))
        if op == "//":
            if y == 0:
                raise ExpressionError("integer division by zero")
            if x == INT_MIN and y == -1:
                raise ExpressionError("integer division overflow (INT_MIN // -1)")
            q = abs(x) // abs(y)
            return (False, q if (x < 0) == (y < 0) else -q)
        if op == "max":
            return (False, max(x, y))
        return (False, min(x, y))
    fa, fb = _as_float(a), _as_float(b)
    if op == "+":
        r = fa + fb
    elif op == "-":
        r = fa - fb
    elif op == "*":
        r = fa * fb
    elif op == "//":
        r = np.floor(fa / fb)
    elif op == "max":
        r = fb if fa < fb else fa  # std::max
    else:
        r = fb if fb < fa else fa  # std::min
    return (True, _f32(r))


def _unary_typed(op: str, a: Value) -> Value:
    if not a[0]:
        x = int(a[1])
        if op == "abs":
            return (False, _wrap(x if x > 0 else -x))
        if op == "neg":
            return (False, _wrap(-x))
        if op == "sign":
            return (False, 1 if x > 0 else (0 if x == 0 else -1))
        return (False, _wrap(x * x))
    f = _as_float(a)
    if op == "abs":
        r = np.abs(f)
    elif op == "neg":
        r = -f
    elif op == "sign":
        r = _f32(1 if f > 0 else (0 if f == 0 else -1))
    else:
        r = f * f
    return (True, _f32(r))


def _rounding(op: str, a: Value) -> Value:
    if not a[0]:
        return a
    x = float(a[1])
    if math.isfinite(x):
        if op == "ceil":
            x = math.ceil(x)
        elif op == "floor":
            x = math.floor(x)
        elif op == "round":
            x = math.copysign(math.floor(abs(x) + 0.5), x)
    return (False, _to_int(x))


def _erf(f: np.float32) -> np.float32:
    return _f32(math.erf(float(f)))


_UNARY_FUNCS: dict[str, Callable[[Any], Any]] = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh, "erf": _erf,
    "exp": np.exp, "log": np.log, "log10": np.log10,
    "reciprocal": lambda f: np.float32(1) / f,
    "rsqrt": lambda f: np.float32(1) / np.sqrt(f),
    "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh,
}  # fmt: skip


def _logaddexp(a: np.float32, b: np.float32) -> np.float32:
    if math.isnan(a):
        return a
    if math.isnan(b):
        return b
    if math.isinf(a) and a == b:
        return a
    hi, lo = (b, a) if a < b else (a, b)
    return _f32(hi + np.log1p(np.exp(lo - hi)))


def _binary_float(op: str, a: Value, b: Value) -> Value:
    fa, fb = _as_float(a), _as_float(b)
    if op == "/":
        r = fa / fb
    elif op == "atan2":
        r = np.arctan2(fa, fb)
    elif op == "fmod":
        r = np.fmod(fa, fb)
    elif op == "pow":
        r = np.power(fa, fb)
    elif op == "remainder":
        r = np.fmod(fa, fb)
        if fa * fb < 0:
            r = r + fb
    else:
        r = _logaddexp(fa, fb)
    return (True, _f32(r))


def _bitwise(op: str, a: Value, b: Value) -> Value:
    x, y = _bits(a), _bits(b)
    if op == "and":
        return (False, x & y)
    if op == "or":
        return (False, x | y)
    if op == "xor":
        return (False, x ^ y)
    # x86 shifts use the low 5 bits of the count
    if op == "lshift":
        return (False, _wrap(x << (y & 31)))
    return (False, x >> (y & 31))


def _apply(op: str, args: list[Value]) -> Value:
    if op in _BINARY_TYPED:
        return _binary_typed(op, args[0], args[1])
    if op in _UNARY_TYPED:
        return _unary_typed(op, args[0])
    if op in _ROUNDING:
        return _rounding(op, args[0])
    if op in _UNARY_FUNCS:
        return (True, _f32(_UNARY_FUNCS[op](_as_float(args[0]))))
    if op in _BINARY_FLOAT:
        return _binary_float(op, args[0], args[1])
    return _bitwise(op, args[0], args[1])


# -- the compiled form ----------------------------------------------------------------------------
class ShapeExpression:
    """A parsed, validated expression; ``evaluate(blobs)`` gives its int list.

    Construction raises ExpressionError for an empty expression, an unreadable token or an
    operator without enough operands.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        tokens = tokenize(text)
        if not tokens:
            raise ExpressionError(f"expression {text!r} has no tokens")
        # program, in evaluation order (last token first): ("ref", (i, x)) / ("lit", v) / ("op", name)
        prog: list[tuple[str, Any]] = []
        depth = 0
        for tok in reversed(tokens):
            ref = _blob_ref(tok)
            if ref is not None:
                prog.append(("ref", ref))
                depth += 1
            elif tok in ARITY:
                need = ARITY[tok]
                if depth < need:
                    raise ExpressionError(
                        f"expression {text!r}: operator {tok!r} needs {need} operand(s), {depth} given"
                    )
                prog.append(("op", tok))
                depth += 1 - need
            else:
                prog.append(("lit", _literal(tok)))
                depth += 1
        self.program = prog
        self.n_results = depth
        self.blob_count = max((r[0] + 1 for k, r in prog if k == "ref"), default=0)

    def evaluate_values(self, blobs: Sequence) -> list[Value]:
        """The typed results (top of stack first), before the int conversion."""
        shapes: list[dict[str, int] | None] = [None] * len(blobs)
        stack: list[Value] = []
        with np.errstate(all="ignore"):
            for kind, arg in self.program:
                if kind == "ref":
                    i, x = arg
                    if i >= len(blobs):
                        raise ExpressionError(
                            f"expression {self.text!r}: blob index {i} out of bound ({len(blobs)} inputs)"
                        )
                    s = shapes[i]
                    if s is None:
                        s = shapes[i] = blob_dims(blobs[i])
                    stack.append((False, int(s[x])))
                elif kind == "lit":
                    stack.append(arg)
                else:
                    op = str(arg)
                    n = ARITY[op]
                    args = [stack.pop() for _ in range(n)]
                    stack.append(_apply(op, args))
        return stack[::-1]

    def evaluate(self, blobs: Sequence) -> list[int]:
        """The result list for these inputs (Mats or anything with dims/w/h/d/c)."""
        return [int(v[1]) if not v[0] else _to_int(v[1]) for v in self.evaluate_values(blobs)]

    def __repr__(self) -> str:
        return f"ShapeExpression({self.text!r})"


def eval_list_expression(expr: str, blobs: Sequence) -> list[int]:
    """Parse and evaluate in one go (raises ExpressionError)."""
    return ShapeExpression(expr).evaluate(blobs)
