"""Convolution (2-D, fp32): im2col + one matrix product, Winograd F(4,3) for 3x3 stride 1 with
enough channels, ncnn's padding (SAME -233/-234 included, see _geometry.py), fused activations
(_fused_activation.py), dynamic weights.

int8 (``int8_scale_term``, param 8, non-zero): after the bias the model holds one weight scale
per output channel and the bottom blob's scale, then with 8 > 100 the top blob's. Weights
stored as fp32 are quantized at load (``float2int8(w * weight_scale)`` per output channel),
int8-stored ones (ModelBin's int8 flag) are used as they are. With ``opt.use_int8_inference``
the forward is ncnn's: an fp32 input is quantized with the bottom scale (an int8 one, from a
requantizing layer, is used as it is), padded with ``(int8) pad_value``, summed exactly in
int32, dequantized per output channel by ``1 / (bottom_scale * weight_scale)`` fused with the
bias, activated, and with 8 > 100 requantized to int8 with the top scale (an int8 top blob).
Without ``use_int8_inference`` the layer runs in fp32 on the dequantized weights (ncnn would
read the int8 weights as floats).
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from ..mat import Mat
from . import Param
from ._conv import bias_act, gemm_into, native_act, native_kernels, winograd43_into, winograd43_weights
from ._fused_activation import activation_values, check_activation, fused_activation
from ._geometry import WINDOW_PARAMS, WeightBias, Window, copy_make_border
from ._int8 import Int8Scales, conv_int8, float2int8, load_int8_scales, quantized_weights, store

log = logging.getLogger("ncnn_c")

# Winograd F(4,3) beats im2col + GEMM once there are enough channels to amortise its transforms
# and enough 4x4 output tiles to reuse its 4x larger transformed weights (measured on the
# benchmark shapes, 2 threads: 16+ in and out channels, 16+ tiles, i.e. outputs of 13x13 and
# up; at 7x7 the 36 small products are bound by reading the weights and im2col wins)
WINOGRAD_MIN_CHANNELS = 16
WINOGRAD_MIN_TILES = 16


def _positive(layer, **values) -> bool:
    for key, v in values.items():
        if v <= 0:
            log.error(
                "%s %r: %s must be positive, got %d", layer.type or type(layer).__name__, layer.name, key, v
            )
            return False
    return True


class Convolution(Window, WeightBias):
    """2-D convolution over a 3-D blob (and ncnn's 1x1-over-a-vector InnerProduct form)."""

    PARAMS: ClassVar[tuple[Param, ...]] = (
        *WINDOW_PARAMS,
        Param(8, "int8_scale_term", 0),
        Param(18, "pad_value", 0.0),
        Param(19, "dynamic_weight", 0),
    )
    DERIVED: ClassVar[tuple[str, ...]] = ("_weight2d", "_wino")

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self._act = np.zeros(0, dtype=np.float32)
        self._weight2d: np.ndarray | None = None
        self._bias: np.ndarray | None = None
        self._wino: np.ndarray | None = None
        self._int8: Int8Scales | None = None
        self._w8: np.ndarray | None = None  # (outc, inc/group * kh * kw) int8
        self._w8k: np.ndarray | None = None  # (kh * kw, group, outc/group, inc/group) fp32

    # -- params and weights ------------------------------------------------------------------
    def group_count(self) -> int:
        return 1

    def check_params(self) -> int:
        name = type(self).__name__
        self._act = activation_values(self.activation_params)
        if self.int8_scale_term and self.dynamic_weight:
            log.error("%s %r: int8_scale_term with dynamic_weight is not supported", name, self.name)
            return -1
        if check_activation(self):
            return -1
        if not _positive(
            self,
            stride_w=self.stride_w,
            stride_h=self.stride_h,
            dilation_w=self.dilation_w,
            dilation_h=self.dilation_h,
        ):
            return -1
        # a dynamic weight blob brings its own kernel size and output count
        self.one_blob_only = not self.dynamic_weight
        if self.dynamic_weight:
            return 0
        if not _positive(self, num_output=self.num_output, kernel_w=self.kernel_w, kernel_h=self.kernel_h):
            return -1
        g = self.group_count()
        per = self.kernel_w * self.kernel_h * self.num_output
        if g <= 0 or self.num_output % g or self.weight_data_size <= 0 or self.weight_data_size * g % per:
            log.error(
                "%s %r: weight_data_size %d does not fit num_output %d x kernel %dx%d (group %d)",
                name,
                self.name,
                self.weight_data_size,
                self.num_output,
                self.kernel_w,
                self.kernel_h,
                g,
            )
            return -1
        return 0

    def num_input(self) -> int:
        """Input channels the static weights expect."""
        g = self.group_count()
        return self.weight_data_size * g // (self.kernel_w * self.kernel_h * self.num_output)

    def _prepare(self) -> None:
        # [num_output][num_input][kh][kw] flattened per output: one row of the im2col product
        if self.int8_scale_term:
            w = self._prepare_int8()
        else:
            w = np.asarray(self.weight_data.numpy(), dtype=np.float32)
        self._weight2d = np.ascontiguousarray(w.reshape(self.num_output, -1))
        self._bias = (
            np.asarray(self.bias_data.numpy(), dtype=np.float32).reshape(-1, 1) if self.bias_term else None
        )
        self._wino = None

    # -- int8 --------------------------------------------------------------------------------------
    def weight_scale_count(self) -> int:
        """How many weight scales the model stores after the bias."""
        return self.num_output

    def row_weight_scales(self, stored: np.ndarray) -> np.ndarray:
        """The stored weight scales as one per output channel (a row of the weights)."""
        return stored

    def load_scales(self, mb) -> int:
        name = type(self).__name__
        if not self.int8_scale_term:
            if self.weight_data.elemsize == 1:
                log.error("%s %r: int8-stored weight_data needs int8_scale_term (8)", name, self.name)
                return -100
            return 0
        got = load_int8_scales(self, mb, self.weight_scale_count(), self.int8_scale_term > 100)
        if got is None:
            return -100
        weight, bottom, top = got
        self._int8 = Int8Scales(self.row_weight_scales(weight), bottom, top)
        return 0

    def _prepare_int8(self) -> np.ndarray:
        """Quantize (or take) the int8 weights; returns the dequantized fp32 weights (outc, -1)
        the layer runs on without ``use_int8_inference``."""
        assert self._int8 is not None  # load_scales ran
        rows = self.weight_data.tensor().reshape(self.num_output, -1)
        w8, w = quantized_weights(rows, self._int8.weight)
        self._w8 = w8
        g = self.group_count()
        k = self.kernel_w * self.kernel_h
        per = w8.reshape(g, self.num_output // g, -1, k)  # [group][out][in][kh*kw]
        self._w8k = np.ascontiguousarray(per.transpose(3, 0, 1, 2), dtype=np.float32)
        return w

    def _forward_int8(self, bottom, top, opt, w8k: np.ndarray, bias) -> int:
        """ncnn's forward_int8 (see the module docstring)."""
        name = type(self).__name__
        assert self._int8 is not None  # load_model read the scales
        flat = bottom.dims == 1 and self.kernel_w == self.kernel_h == 1
        if bottom.elempack != 1 or bottom.elemsize not in (1, 4) or (bottom.dims != 3 and not flat):
            log.error(
                "%s %r: int8 forward needs a 3-D elempack-1 fp32 or int8 blob, got dims %d elemsize %d "
                "elempack %d",
                name, self.name, bottom.dims, bottom.elemsize, bottom.elempack,
            )  # fmt: skip
            return -1
        x = bottom.tensor()
        if flat:  # ncnn's deprecated 1x1-over-a-vector form, here as a 1x1 image of channels
            x = x.reshape(-1, 1, 1)
        if x.dtype != np.int8:
            x = float2int8(np.multiply(x, self._int8.bottom, dtype=np.float32))
        kk, g, _, cg = w8k.shape
        if x.shape[0] != g * cg:
            log.error("%s %r: %d input channels, weights expect %d", name, self.name, x.shape[0], g * cg)
            return -1
        kernel = (self.kernel_h, self.kernel_w)
        pads = self.pads(x.shape[1:], kernel)
        out = self.output_shape(x.shape[1:], pads, kernel)
        if out is None:
            return -1
        pad = float(np.clip(np.trunc(self.pad_value), -128, 127))  # ncnn casts it to signed char
        keep, xp = copy_make_border(x.astype(np.float32), pads[0], pads[1], pads[2], pads[3], pad, opt)
        geom = ((self.stride_h, self.stride_w), (self.dilation_h, self.dilation_w))
        acc = conv_int8(xp, w8k, kernel, *geom, (out[0], out[1]))
        del keep, xp
        v = self._int8.dequantize(acc, bias, self.activation_type, self._act)
        if self._int8.top is not None:
            v *= self._int8.top
            res: np.ndarray = float2int8(v)
        else:
            res = v
        return store(top, res.reshape(-1) if flat else res, opt)

    def _winograd_weights(self, weight2d: np.ndarray) -> np.ndarray:
        """The static weights ``weight2d`` transformed for Winograd, made at the first forward
        that takes that path: a GPU layer, a layer the native plan runs (its recording pass
        runs without Winograd, ``opt.use_winograd_convolution``) and a layer whose outputs
        have too few tiles (ResNet-50's 7x7 stage: 113 MB) never hold them. Kept while
        ``weight2d`` is the layer's (after a park it goes with this forward, not the layer)."""
        inc = weight2d.shape[1] // (self.kernel_w * self.kernel_h)
        with self._weights_lock:
            if self._weight2d is not weight2d:
                return winograd43_weights(weight2d, self.num_output, inc)
            if self._wino is None:
                self._wino = winograd43_weights(weight2d, self.num_output, inc)
            return self._wino

    def _winograd_fits(self, kw: int, kh: int, inc: int, outc: int) -> bool:
        return (
            kw == kh == 3
            and self.stride_w == self.stride_h == 1
            and self.dilation_w == self.dilation_h == 1
            and inc >= WINOGRAD_MIN_CHANNELS
            and outc >= WINOGRAD_MIN_CHANNELS
        )

    # -- forward ---------------------------------------------------------------------------------
    def forward(self, bottom, top, opt) -> int:
        if isinstance(bottom, list):
            return self._forward_dynamic(bottom, top, opt)
        # one read under the weights' lock (WeightBias._derived): a park on another thread
        # takes nothing from this forward
        weight2d, bias, w8k = self._derived("_weight2d", "_bias", "_w8k")
        if self.int8_scale_term and opt.use_int8_inference:
            return self._forward_int8(bottom, top, opt, w8k, bias)
        if bottom.elemsize == 1 and bottom.elempack == 1:
            # 8-bit data (a uint8/int8 array fed as it is) is read by value, as on the GPU path
            bottom = Mat.from_tensor(bottom.tensor().astype(np.float32))
        if bottom.elempack == 1 and bottom.dims == 1 and self.kernel_w == self.kernel_h == 1:
            return self._forward_flat(bottom, top, opt, weight2d, bias)
        inc = weight2d.shape[1] // (self.kernel_w * self.kernel_h)
        wino = (
            opt.use_winograd_convolution
            and opt.use_winograd43_convolution
            and self._winograd_fits(self.kernel_w, self.kernel_h, inc, self.num_output)
        )
        return self._forward_3d(bottom, top, opt, weight2d, bias, self.kernel_w, self.kernel_h, wino)

    def _forward_3d(self, bottom, top, opt, weight2d, bias, kw, kh, wino: bool = False) -> int:
        name = type(self).__name__
        if bottom.elempack != 1 or bottom.dims != 3:
            log.error(
                "%s %r: needs a 3-D fp32 blob with elempack 1, got dims %d elempack %d",
                name,
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        x = bottom.tensor()
        channels = x.shape[0]
        expect = weight2d.shape[1] * self.group_count() // (kw * kh)
        if channels != expect:
            log.error("%s %r: %d input channels, weights expect %d", name, self.name, channels, expect)
            return -1
        pads = self.pads(x.shape[1:], (kh, kw))
        out = self.output_shape(x.shape[1:], pads, (kh, kw))
        if out is None:
            return -1
        dst = self._create_top(out, top, opt, weight2d.shape[0])
        if dst is None:
            return -100
        self._compute(x, pads, dst, opt, weight2d, bias, kw, kh, wino)
        return 0

    def _create_top(self, out: tuple[int, ...], top, opt, outc: int):
        """Create the top of spatial shape ``out`` ((outh, outw), or (outw,) for a 2-D top); returns
        its (outc, outh, outw) view, None when the allocation failed."""
        if len(out) == 2:
            top.create(out[1], out[0], outc, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        else:
            top.create(out[0], outc, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return None
        return top.tensor() if len(out) == 2 else top.tensor().reshape(outc, 1, out[0])

    def _compute(self, x, pads, dst, opt, weight2d, bias, kw, kh, wino: bool) -> None:
        """The convolution of x bordered by pads into dst (outc, outh, outw), bias and activation
        included; ``wino``: the layer's static weights suit Winograd. The native Winograd
        transform borders the input on the fly; the other paths work on a bordered copy."""
        act = native_act(self.activation_type, self._act)
        if wino and -(-dst.shape[1] // 4) * -(-dst.shape[2] // 4) >= WINOGRAD_MIN_TILES:
            keep = None
            if min(pads) < 0 or native_kernels() is None:
                keep, x = copy_make_border(x, pads[0], pads[1], pads[2], pads[3], self.pad_value, opt)
                pads = (0, 0, 0, 0)
            wt = self._winograd_weights(weight2d)
            done = winograd43_into(x, dst, wt, bias, act, opt, pads, self.pad_value)
            del keep
            if done:
                return
        else:
            keep, xp = copy_make_border(x, pads[0], pads[1], pads[2], pads[3], self.pad_value, opt)
            geom = (self.stride_w, self.stride_h, self.dilation_w, self.dilation_h)
            gemm_into(xp, dst, weight2d, kw, kh, *geom, opt)
            del keep
            if bias_act(dst, bias, self.activation_type, opt, self._act):
                return
            if bias is not None:
                dst += bias.reshape(-1, 1, 1)
        fused_activation(dst, self.activation_type, self._act)

    def _dynamic_weights(self, bottoms, wdims: int):
        """(weight2d (outc, inc*kh*kw), bias (outc, 1) or None, kw, kh) from the extra input blobs."""
        name = type(self).__name__
        need = 3 if self.bias_term else 2
        if len(bottoms) < need:
            log.error(
                "%s %r: dynamic weight needs %d input blobs, got %d", name, self.name, need, len(bottoms)
            )
            return None
        wm = bottoms[1]
        if wm.dims != wdims or wm.elempack != 1:
            log.error("%s %r: dynamic weight blob must be %d-D, got %d-D", name, self.name, wdims, wm.dims)
            return None
        kw = wm.w
        kh = wm.h if wdims == 4 else 1
        outc = wm.c
        weight2d = np.ascontiguousarray(wm.tensor(), dtype=np.float32).reshape(outc, -1)
        bias = None
        if self.bias_term:
            b = np.ascontiguousarray(bottoms[2].tensor(), dtype=np.float32).reshape(-1)
            if b.size != outc:
                log.error("%s %r: dynamic bias has %d values for %d outputs", name, self.name, b.size, outc)
                return None
            bias = b.reshape(-1, 1)
        return weight2d, bias, kw, kh

    def _forward_dynamic(self, bottoms, tops, opt) -> int:
        got = self._dynamic_weights(bottoms, 4)
        if got is None:
            return -1
        weight2d, bias, kw, kh = got
        return self._forward_3d(bottoms[0], tops[0], opt, weight2d, bias, kw, kh)

    def _forward_flat(self, bottom, top, opt, weight2d: np.ndarray, bias) -> int:
        # ncnn's deprecated path: a 1x1 convolution over a flattened blob acts as InnerProduct
        x = bottom.tensor()
        if x.shape[0] != weight2d.shape[1]:
            log.error(
                "Convolution %r: flat input of %d values, weights expect %d",
                self.name,
                x.shape[0],
                weight2d.shape[1],
            )
            return -1
        top.create(self.num_output, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        np.matmul(weight2d, x, out=out)
        if bias is not None:
            out += bias[:, 0]
        fused_activation(out, self.activation_type, self._act)
        return 0
