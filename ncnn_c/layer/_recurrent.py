"""What RNN, LSTM and GRU share: params, weight loading, directions and state blobs.

A recurrent layer reads a sequence blob ``(T, input_size)`` (a 1-D blob is one step) and
writes ``(T, num_output * num_directions)``: forward and reverse halves side by side when
bidirectional (``direction`` 2). Optional state inputs follow the sequence (hidden; LSTM:
hidden then cell) and, when the layer has more than one top, the final states come out the
same way, each a ``(num_directions, n)`` blob unless an input state gave its own shape. Without
state inputs every direction starts from zeros, as ncnn's.

Weights are ncnn's three (LSTM: four) blobs per direction: ``weight_xc`` (gate rows x
input_size), ``bias_c`` and ``weight_hc`` (gate rows x num_output); the input projection of
all steps is one product up front, each step adds the recurrent one.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from ..mat import Mat
from . import Layer, Param, load_weight, weight_error
from ._blob import store_array

log = logging.getLogger("ncnn_c")

RECURRENT_PARAMS = (
    Param(0, "num_output", 0),
    Param(1, "weight_data_size", 0),
    Param(2, "direction", 0),
    Param(8, "int8_scale_term", 0),
)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


class Recurrent(Layer):
    """Base of RNN / LSTM / GRU. Subclasses set GATES (weight rows per unit), BIAS_ROWS,
    STATES (names of the state blobs) and implement ``_run``."""

    GATES: ClassVar[int] = 1
    BIAS_ROWS: ClassVar[int] = 1
    STATES: ClassVar[tuple[str, ...]] = ("hidden",)

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False
        self.weight_xc_data = Mat()
        self.bias_c_data = Mat()
        self.weight_hc_data = Mat()
        self.weight_hr_data = Mat()
        # per direction: (GATES*units, input_size), (BIAS_ROWS, units), (GATES*units, num_output)
        self._wxc: list[np.ndarray] = []
        self._bias: list[np.ndarray] = []
        self._whc: list[np.ndarray] = []
        self._whr: list[np.ndarray | None] = []

    @property
    def units(self) -> int:
        """Hidden units (LSTM's hidden_size; num_output for RNN and GRU)."""
        return self.num_output

    @property
    def num_directions(self) -> int:
        return 2 if self.direction == 2 else 1

    @property
    def input_size(self) -> int:
        return self.weight_data_size // (self.num_directions * self.units * self.GATES)

    def state_sizes(self) -> tuple[int, ...]:
        return (self.num_output,)

    def check_params(self) -> int:
        kind = type(self).__name__
        if self.int8_scale_term:
            log.error(
                "%s %r: int8_scale_term 8=%d: int8 weights are not supported",
                kind,
                self.name,
                self.int8_scale_term,
            )
            return -1
        if self.direction not in (0, 1, 2):
            log.error("%s %r: direction 2=%d is not 0, 1 or 2", kind, self.name, self.direction)
            return -1
        if self.num_output <= 0 or self.units <= 0:
            log.error(
                "%s %r: num_output 0=%d and units %d must be positive",
                kind,
                self.name,
                self.num_output,
                self.units,
            )
            return -1
        per_input = self.num_directions * self.units * self.GATES
        if self.weight_data_size <= 0 or self.weight_data_size % per_input:
            log.error(
                "%s %r: weight_data_size 1=%d is not a multiple of %d (directions x units x gates)",
                kind,
                self.name,
                self.weight_data_size,
                per_input,
            )
            return -1
        return 0

    def _load(self, mb, rows: int, cols: int, what: str) -> tuple[Mat, list[np.ndarray]] | None:
        dirs = self.num_directions
        m = load_weight(self, mb, what, cols, rows, dirs, 0)
        if m.empty():
            return None
        flat = np.ascontiguousarray(m.tensor(), dtype=np.float32).reshape(-1)
        if flat.size != dirs * rows * cols:
            weight_error(self, mb, f"{what} holds {flat.size} values, expected {dirs * rows * cols}")
            return None
        arr = flat.reshape(dirs, rows, cols)
        return m, [arr[d] for d in range(dirs)]

    def load_model(self, mb) -> int:
        g, u = self.GATES, self.units
        loads = [
            ("weight_xc_data", g * u, self.input_size),
            ("bias_c_data", self.BIAS_ROWS, u),
            ("weight_hc_data", g * u, self.num_output),
        ]
        if self.units != self.num_output:
            loads.append(("weight_hr_data", self.num_output, u))
        got = {}
        for what, rows, cols in loads:
            r = self._load(mb, rows, cols, what)
            if r is None:
                return -100
            setattr(self, what, r[0])
            got[what] = r[1]
        self._wxc, self._bias, self._whc = got["weight_xc_data"], got["bias_c_data"], got["weight_hc_data"]
        hr = got.get("weight_hr_data")
        self._whr = list(hr) if hr is not None else [None] * self.num_directions
        return 0

    def _run(self, d: int, xw: np.ndarray, states: list[np.ndarray], out: np.ndarray, reverse: bool) -> None:
        """One direction: ``xw`` is (T, GATES*units) = x @ weight_xc^T; ``states`` are updated in
        place; row t of ``out`` gets step t's output."""
        raise NotImplementedError

    def forward(self, bottoms, tops, opt) -> int:
        kind = type(self).__name__
        n_states = len(self.STATES)
        if isinstance(bottoms, Mat):
            bottoms, tops = [bottoms], [tops]
        if len(bottoms) not in (1, 1 + n_states) or len(tops) not in (1, 1 + n_states):
            log.error(
                "%s %r: takes the sequence%s and gives the output%s; got %d inputs, %d outputs",
                kind,
                self.name,
                "".join(f" [+ {s}]" for s in self.STATES),
                "".join(f" [+ {s}]" for s in self.STATES),
                len(bottoms),
                len(tops),
            )
            return -1
        x_mat = bottoms[0]
        size = self.input_size
        if x_mat.dims not in (1, 2) or x_mat.elempack != 1 or x_mat.w != size:
            log.error(
                "%s %r: input must be a (T, %d) fp32 sequence, got dims %d shape %s",
                kind,
                self.name,
                size,
                x_mat.dims,
                x_mat.tensor().shape,
            )
            return -1
        x = x_mat.tensor().reshape(-1, size)
        T = x.shape[0]
        dirs = self.num_directions

        # initial states: (dirs, n) arrays; outputs keep an input state's shape
        states: list[np.ndarray] = []
        state_shapes: list[tuple[int, ...]] = []
        for i, n in enumerate(self.state_sizes()):
            if len(bottoms) > 1:
                s = bottoms[1 + i]
                t = s.tensor()
                if s.elempack != 1 or t.size != dirs * n:
                    log.error(
                        "%s %r: %s state must hold %d x %d values, got shape %s",
                        kind,
                        self.name,
                        self.STATES[i],
                        dirs,
                        n,
                        t.shape,
                    )
                    return -1
                states.append(np.array(t, dtype=np.float32).reshape(dirs, n))
                state_shapes.append(t.shape)
            else:
                states.append(np.zeros((dirs, n), np.float32))
                state_shapes.append((dirs, n))

        top = tops[0]
        top.create(self.num_output * dirs, T, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        for d in range(dirs):
            reverse = d == 1 or self.direction == 1
            xw = x @ self._wxc[d].T
            cols = slice(d * self.num_output, (d + 1) * self.num_output)
            dir_states = [s[d] for s in states]
            self._run(d, xw, dir_states, out[:, cols], reverse)

        if len(tops) > 1:
            for i, (s, shape) in enumerate(zip(states, state_shapes, strict=True)):
                if store_array(tops[1 + i], s.reshape(shape), opt) != 0:
                    return -100
        return 0
