"""ParamDict: a layer's ``key=value`` parameters, from text or binary param files.

Value types follow ncnn's numbering so that ``type(id)`` means the same thing:
0 unset, 1 raw 32-bit scalar (binary param: int or float decided by the reader),
2 int, 3 float, 4 raw 32-bit array (binary), 5 int array, 6 float array, 7 string.
Arrays are Mats of 4-byte elements; int arrays hold int32 bit patterns, as in ncnn,
so read them with ``numpy.asarray(m).view(numpy.int32)``.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

import numpy as np

from .errors import ModelFormatError

log = logging.getLogger("ncnn_c")

MAX_PARAM_COUNT = 32
ARRAY_KEY_BASE = -23300
END_OF_PARAMS = -233
# A layer's binary dict holding more entries than this is garbage (ids are < 32).
_MAX_BIN_ENTRIES = 4096
_MAX_ARRAY_LEN = 1 << 24
_MAX_STRING_LEN = 255

_INT32 = struct.Struct("<i")


def _mat_class():
    # ncnn_c.mat imports nothing from here; importing lazily keeps scalar-only use light.
    from .mat import Mat

    return Mat


def _array_mat(values: np.ndarray):
    Mat = _mat_class()
    if values.size == 0:
        return Mat()
    return Mat.from_tensor(np.ascontiguousarray(values, dtype=np.float32))


def _is_float_token(s: str) -> bool:
    return "." in s or "e" in s or "E" in s


def _parse_number(s: str, what: str):
    try:
        if _is_float_token(s):
            return float(s), True
        return int(s, 10), False
    except ValueError:
        raise ModelFormatError(f"{what}: bad number {s!r}") from None


def _number_array(tokens: list[str], what: str):
    parsed = [_parse_number(t, what) for t in tokens]
    if any(is_float for _, is_float in parsed):
        return 6, _array_mat(np.array([v for v, _ in parsed], dtype=np.float32))
    try:
        ints = np.array([v for v, _ in parsed], dtype=np.int32)
    except OverflowError:
        raise ModelFormatError(f"{what}: int out of 32-bit range") from None
    return 5, _array_mat(ints.view(np.float32))


def _is_mat(x) -> bool:
    return hasattr(x, "dims") and hasattr(x, "cstep")


class ParamDict:
    """ncnn's ParamDict: ``get(id, default)`` returns the type of ``default``."""

    def __init__(self) -> None:
        self._params: dict[int, tuple[int, Any]] = {}  # id -> (type tag, value of that type)

    # -- public API ---------------------------------------------------------------------
    def type(self, id: int) -> int:  # noqa: A002 - ncnn's name
        entry = self._params.get(int(id))
        return entry[0] if entry else 0

    def get(self, id: int, default):  # noqa: A002
        entry = self._params.get(int(id))
        if entry is None:
            return default
        t, v = entry
        if isinstance(default, str):
            return v if t == 7 else default
        if _is_mat(default):
            return v if t in (4, 5, 6) else default
        if isinstance(default, (float, np.floating)):
            if t == 3:
                return v
            if t == 2:
                return float(v)
            if t == 1:
                return struct.unpack("<f", _INT32.pack(v))[0]
            return default
        if isinstance(default, (int, np.integer)):
            if t in (1, 2):
                return v
            if t == 3:
                return int(v)
            return default
        return v

    def set(self, id: int, value) -> None:  # noqa: A002
        id = int(id)
        if not 0 <= id < MAX_PARAM_COUNT:
            raise ValueError(f"param id {id} out of range 0..{MAX_PARAM_COUNT - 1}")
        if isinstance(value, bool):
            self._params[id] = (2, int(value))
        elif isinstance(value, (int, np.integer)):
            self._params[id] = (2, int(value))
        elif isinstance(value, (float, np.floating)):
            self._params[id] = (3, float(value))
        elif isinstance(value, str):
            self._params[id] = (7, value)
        elif _is_mat(value):
            # ncnn's set(id, Mat) tags 4, "array of unknown element type", as binary params
            self._params[id] = (4, value)
        elif isinstance(value, (list, tuple, np.ndarray)):
            arr = np.asarray(value)
            if arr.dtype.kind in "iub":
                self._params[id] = (5, _array_mat(arr.astype(np.int32).view(np.float32)))
            else:
                self._params[id] = (6, _array_mat(arr.astype(np.float32)))
        else:
            raise TypeError(f"unsupported param value type {type(value).__name__}")

    def clear(self) -> None:
        self._params.clear()

    def keys(self) -> list[int]:
        return sorted(self._params)

    def __contains__(self, id: int) -> bool:  # noqa: A002
        return int(id) in self._params

    def __repr__(self) -> str:
        return f"<ncnn_c.ParamDict {sorted(self._params)}>"

    # -- parsing ------------------------------------------------------------------------
    def load_text_tokens(self, tokens: list[str]) -> None:
        """Fill from ``key=value`` tokens of a text param line; raise ModelFormatError."""
        self._params.clear()
        for tok in tokens:
            key_s, sep, val = tok.partition("=")
            if not sep:
                raise ModelFormatError(f"param {tok!r} is not key=value")
            try:
                key = int(key_s, 10)
            except ValueError:
                raise ModelFormatError(f"param key {key_s!r} is not an integer") from None
            if key <= ARRAY_KEY_BASE:
                pid = -key + ARRAY_KEY_BASE
                self._check_id(pid, key_s)
                parts = val.split(",")
                try:
                    count = int(parts[0], 10)
                except ValueError:
                    raise ModelFormatError(f"array param {key_s}: bad count {parts[0]!r}") from None
                items = [p for p in parts[1:]]
                if count != len(items):
                    raise ModelFormatError(f"array param {key_s}: count {count} but {len(items)} values")
                self._params[pid] = _number_array(items, f"array param {key_s}")
                continue
            self._check_id(key, key_s)
            if not val:
                raise ModelFormatError(f"param {key_s} has no value")
            if val[0] == '"':
                # a quoted string may hold commas (shape expressions: 6="0w,*(0h,2)")
                s = val[1:-1] if len(val) >= 2 and val[-1] == '"' else val[1:]
                if len(s) > _MAX_STRING_LEN:
                    raise ModelFormatError(f"param {key_s}: string longer than {_MAX_STRING_LEN}")
                self._params[key] = (7, s)
            elif "," in val:
                # modern form: an array written without its count
                self._params[key] = _number_array(val.split(","), f"param {key_s}")
            elif val[0].isalpha() or val[0] == '"':
                s = val[1:-1] if len(val) >= 2 and val[0] == '"' and val[-1] == '"' else val
                if len(s) > _MAX_STRING_LEN:
                    raise ModelFormatError(f"param {key_s}: string longer than {_MAX_STRING_LEN}")
                self._params[key] = (7, s)
            else:
                v, is_float = _parse_number(val, f"param {key_s}")
                if not is_float and not -(2**31) <= v < 2**31:
                    raise ModelFormatError(f"param {key_s}: int {v} out of 32-bit range")
                self._params[key] = (3, v) if is_float else (2, v)

    def load_binary(self, dr) -> None:
        """Read ``(id, value)`` pairs up to the -233 terminator; raise ModelFormatError."""
        self._params.clear()
        for _ in range(_MAX_BIN_ENTRIES):
            key = _read_int(dr, "param id")
            if key == END_OF_PARAMS:
                return
            if key <= ARRAY_KEY_BASE:
                pid = -key + ARRAY_KEY_BASE
                self._check_id(pid, str(key))
                n = _read_int(dr, f"array param {key} length")
                if not 0 <= n <= _MAX_ARRAY_LEN:
                    raise ModelFormatError(f"array param {key}: absurd length {n}")
                data = dr.read_bytes(4 * n)
                if len(data) != 4 * n:
                    raise ModelFormatError(f"array param {key}: truncated ({len(data)} of {4 * n} bytes)")
                self._params[pid] = (4, _array_mat(np.frombuffer(data, dtype="<f4")))
            else:
                self._check_id(key, str(key))
                self._params[key] = (1, _read_int(dr, f"param {key} value"))
        raise ModelFormatError(f"more than {_MAX_BIN_ENTRIES} params without the -233 terminator")

    @staticmethod
    def _check_id(pid: int, shown: str) -> None:
        if not 0 <= pid < MAX_PARAM_COUNT:
            raise ModelFormatError(f"param key {shown} out of range (id must be 0..{MAX_PARAM_COUNT - 1})")


def _read_int(dr, what: str) -> int:
    data = dr.read_bytes(4)
    if len(data) != 4:
        raise ModelFormatError(f"truncated while reading {what}")
    return _INT32.unpack(data)[0]
