"""Pixel I/O of Mat: images in and out, bilinear resize, mean/norm, with ncnn's integer maths.

Pixel conversion and resizing reproduce ncnn's integer arithmetic (gray weights
77/150/29 >> 8, bilinear coefficients with 11 fractional bits) so images prepared
here give bit-identical network inputs to ncnn's. The functions become Mat methods
at the end of this module.
"""

from __future__ import annotations

import logging
import operator

import numpy as np

from .core import Mat

log = logging.getLogger("ncnn_c")

PIXEL_CONVERT_SHIFT = 16
PIXEL_FORMAT_MASK = 0x0000FFFF

# format -> the colour each interleaved byte holds
_PIXEL_LAYOUTS = {1: "RGB", 2: "BGR", 3: "Y", 4: "RGBA", 5: "BGRA"}
_PIXEL_TYPES = {
    int(v)
    for k, v in Mat.PixelType.__members__.items()
    if k.startswith("PIXEL_") and "MASK" not in k and "SHIFT" not in k
}

_RESIZE_COEF_BITS = 11
_RESIZE_COEF_SCALE = 1 << _RESIZE_COEF_BITS


def _is_int(v) -> bool:
    """True for ints and int-like enums (the PyPI package's PixelType members), not bools."""
    if isinstance(v, bool):
        return False
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def _pixel_formats(type_: int) -> tuple[str, str]:
    """(source layout, destination layout) of a pixel type, or ValueError."""
    if not _is_int(type_):
        raise TypeError(f"pixel type must be an int, got {type(type_).__name__}")
    type_ = int(type_)  # also accepts enum members such as the PyPI package's PixelType
    if type_ not in _PIXEL_TYPES:
        raise ValueError(f"unknown pixel type {type_}")
    src = _PIXEL_LAYOUTS[type_ & PIXEL_FORMAT_MASK]
    dst_code = type_ >> PIXEL_CONVERT_SHIFT
    return src, (_PIXEL_LAYOUTS[dst_code] if dst_code else src)


def _convert_pixels(img: np.ndarray, src: str, dst: str) -> list[np.ndarray]:
    """Channel planes (uint8 or int) of ``dst`` from an (h, w, len(src)) image in layout ``src``."""
    planes = {ch: img[:, :, i] for i, ch in enumerate(src)}
    if src == dst:
        return [img[:, :, i] for i in range(len(src))]
    if dst == "Y":
        if "Y" in planes:
            return [planes["Y"]]
        r, g, b = (planes[k].astype(np.int32) for k in "RGB")
        return [((r * 77 + g * 150 + b * 29) >> 8).astype(np.uint8)]
    out = []
    for ch in dst:
        if ch in planes:
            out.append(planes[ch])
        elif ch == "A":
            out.append(np.full(img.shape[:2], 255, dtype=np.uint8))
        else:  # gray to colour
            out.append(planes["Y"])
    return out


def _pixels_view(pixels, channels: int, w: int, h: int, stride: int | None) -> np.ndarray:
    """An (h, w, channels) uint8 view of a packed pixel buffer with row ``stride`` bytes."""
    if w <= 0 or h <= 0:
        raise ValueError(f"pixel image size must be positive, got {w}x{h}")
    if stride is None or stride == 0:
        stride = w * channels
    if stride < w * channels:
        raise ValueError(f"stride {stride} is smaller than a row of {w}x{channels} bytes")
    if isinstance(pixels, np.ndarray):
        buf = pixels
    else:
        try:
            buf = np.frombuffer(pixels, dtype=np.uint8)
        except TypeError:  # not a buffer (a PIL image, a list): let numpy convert it
            buf = np.asarray(pixels)
    if buf.dtype != np.uint8:
        raise TypeError(f"pixels must be uint8, got {buf.dtype}")
    if not buf.flags.c_contiguous:
        buf = np.ascontiguousarray(buf)
    flat = buf.reshape(-1)
    need = stride * (h - 1) + w * channels
    if flat.size < need:
        raise ValueError(
            f"pixel buffer has {flat.size} bytes, {w}x{h}x{channels} with stride {stride} needs {need}"
        )
    rows = np.lib.stride_tricks.as_strided(
        flat, shape=(h, w * channels), strides=(stride, 1), writeable=False
    )
    return rows.reshape(h, w, channels)


def _resize_coeffs(src_len: int, dst_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Left/right source indices and their 11-bit weights for each destination position."""
    scale = src_len / dst_len
    f = ((np.arange(dst_len, dtype=np.float64) + 0.5) * scale - 0.5).astype(np.float32)
    s = np.floor(f).astype(np.int64)
    f = f - s.astype(np.float32)
    low = s < 0
    s[low] = 0
    f[low] = 0.0
    high = s >= src_len - 1
    s[high] = src_len - 2
    f[high] = 1.0
    s0 = np.clip(s, 0, src_len - 1)  # guards 1-pixel sources, where ncnn would read out of bounds
    s1 = np.clip(s + 1, 0, src_len - 1)
    one = np.float32(1.0)
    scale_f = np.float32(_RESIZE_COEF_SCALE)
    half = np.float32(0.5)
    a0 = (((one - f) * scale_f) + half).astype(np.int32)
    a1 = ((f * scale_f) + half).astype(np.int32)
    return s0, s1, a0, a1


def resize_bilinear_pixels(src: np.ndarray, w: int, h: int) -> np.ndarray:
    """Bilinear resize of an (h0, w0, c) uint8 image to (h, w, c), with ncnn's fixed-point rounding."""
    if w <= 0 or h <= 0:
        raise ValueError(f"target size must be positive, got {w}x{h}")
    sh, sw, ch = src.shape
    x0, x1, a0, a1 = _resize_coeffs(sw, w)
    y0, y1, b0, b1 = _resize_coeffs(sh, h)
    # Only the source rows some output row reads are interpolated horizontally.
    rows = np.unique(np.concatenate([y0, y1]))
    s = src[rows].reshape(len(rows), sw * ch)
    lane = np.arange(ch)
    # Horizontal pass, on interleaved bytes (flat indices per channel lane); dropping
    # 4 bits leaves 7 fractional bits so that the vertical products fit in int32.
    hor = np.take(s, (x0[:, None] * ch + lane).ravel(), axis=1).astype(np.int32)
    hor *= np.repeat(a0, ch)
    tmp = np.take(s, (x1[:, None] * ch + lane).ravel(), axis=1).astype(np.int32)
    tmp *= np.repeat(a1, ch)
    hor += tmp
    hor >>= 4
    # Vertical pass: each product is shifted before the sum, as ncnn does.
    out = np.take(hor, np.searchsorted(rows, y0), axis=0)
    out *= b0[:, None]
    out >>= 16
    tmp = np.take(hor, np.searchsorted(rows, y1), axis=0)
    tmp *= b1[:, None]
    tmp >>= 16
    out += tmp
    out += 2
    out >>= 2
    return out.astype(np.uint8).reshape(h, w, ch)


def _planes_to_mat(planes: list[np.ndarray], allocator) -> Mat:
    h, w = planes[0].shape
    m = Mat(w, h, len(planes), elemsize=4, elempack=1, allocator=allocator)
    if m._data is None:
        return Mat()
    t = m.tensor()
    for q, p in enumerate(planes):
        t[q] = p
    return m


def _parse_pixel_args(name: str, args: tuple, kwargs: dict, fields: tuple[str, ...]) -> dict:
    """PyPI overloads: ``(array, type, w, h, [stride,] *fields, allocator=None)``."""
    pos = list(args)
    allocator = kwargs.pop("allocator", None)
    if pos and not _is_int(pos[-1]):
        if allocator is not None:
            raise TypeError(f"Mat.{name}: allocator given twice")
        allocator = pos.pop()
    if len(pos) < 4:
        raise TypeError(f"Mat.{name}: expected (array, type, w, h, ...)")
    out = {"pixels": pos[0], "type": pos[1], "w": pos[2], "h": pos[3], "allocator": allocator}
    rest = pos[4:]
    # one extra positional int means the stride overload
    names = ("stride",) + fields if len(rest) == len(fields) + 1 else fields
    if len(rest) > len(names):
        raise TypeError(f"Mat.{name}: too many arguments")
    for k, v in zip(names, rest, strict=False):
        out[k] = v
    for k, v in kwargs.items():
        if k not in ("stride",) + fields:
            raise TypeError(f"Mat.{name}: unexpected argument {k!r}")
        if k in out:
            raise TypeError(f"Mat.{name}: {k} given twice")
        out[k] = v
    for k in fields:
        if k not in out:
            raise TypeError(f"Mat.{name}: missing argument {k!r}")
    for k in ("type", "w", "h", "stride") + fields:
        if k in out and out[k] is not None:
            if not _is_int(out[k]):
                raise TypeError(f"Mat.{name}: {k} must be an int, got {type(out[k]).__name__}")
            out[k] = int(out[k])
    out.setdefault("stride", None)
    return out


def _from_pixels_impl(pixels, type_, w, h, stride, roi, target, allocator) -> Mat:
    src, dst = _pixel_formats(type_)
    img = _pixels_view(pixels, len(src), w, h, stride)
    if roi is not None:
        rx, ry, rw, rh = roi
        if rx < 0 or ry < 0 or rw <= 0 or rh <= 0 or rx + rw > w or ry + rh > h:
            log.error("from_pixels_roi: roi %d %d %d %d out of image %d %d", rx, ry, rw, rh, w, h)
            return Mat()
        img = img[ry : ry + rh, rx : rx + rw]
    if target is not None:
        tw, th = target
        if tw <= 0 or th <= 0:
            raise ValueError(f"target size must be positive, got {tw}x{th}")
        if (tw, th) != (img.shape[1], img.shape[0]):
            img = resize_bilinear_pixels(img, tw, th)
    return _planes_to_mat(_convert_pixels(img, src, dst), allocator)


def _from_pixels(*args, **kwargs) -> Mat:
    """Mat.from_pixels(array, type, w, h, [stride,] allocator=None): planar float32 Mat."""
    a = _parse_pixel_args("from_pixels", args, kwargs, ())
    return _from_pixels_impl(a["pixels"], a["type"], a["w"], a["h"], a["stride"], None, None, a["allocator"])


def _from_pixels_resize(*args, **kwargs) -> Mat:
    """Mat.from_pixels_resize(array, type, w, h, [stride,] target_width, target_height, allocator=None)."""
    a = _parse_pixel_args("from_pixels_resize", args, kwargs, ("target_width", "target_height"))
    return _from_pixels_impl(
        a["pixels"],
        a["type"],
        a["w"],
        a["h"],
        a["stride"],
        None,
        (a["target_width"], a["target_height"]),
        a["allocator"],
    )


def _from_pixels_roi(*args, **kwargs) -> Mat:
    """Mat.from_pixels_roi(array, type, w, h, [stride,] roix, roiy, roiw, roih, allocator=None)."""
    a = _parse_pixel_args("from_pixels_roi", args, kwargs, ("roix", "roiy", "roiw", "roih"))
    return _from_pixels_impl(
        a["pixels"],
        a["type"],
        a["w"],
        a["h"],
        a["stride"],
        (a["roix"], a["roiy"], a["roiw"], a["roih"]),
        None,
        a["allocator"],
    )


def _from_pixels_roi_resize(*args, **kwargs) -> Mat:
    """Mat.from_pixels_roi_resize(array, type, w, h, [stride,] roix, roiy, roiw, roih, target_width, target_height)."""
    a = _parse_pixel_args(
        "from_pixels_roi_resize",
        args,
        kwargs,
        ("roix", "roiy", "roiw", "roih", "target_width", "target_height"),
    )
    return _from_pixels_impl(
        a["pixels"],
        a["type"],
        a["w"],
        a["h"],
        a["stride"],
        (a["roix"], a["roiy"], a["roiw"], a["roih"]),
        (a["target_width"], a["target_height"]),
        a["allocator"],
    )


def _to_uint8(plane: np.ndarray) -> np.ndarray:
    # ncnn truncates toward zero (C cast) and saturates to 0..255
    return np.clip(np.trunc(np.nan_to_num(plane.astype(np.float32))), 0, 255).astype(np.uint8)


def _write_pixels(img: np.ndarray, pixels, stride: int | None) -> np.ndarray:
    """Copy an (h, w, c) image into a caller buffer (or a new array) with row ``stride``."""
    h, w, ch = img.shape
    if pixels is None:
        if stride in (None, 0, w * ch):
            return np.ascontiguousarray(img)
        out = np.zeros(stride * h, dtype=np.uint8)
        pixels = out
    buf = pixels if isinstance(pixels, np.ndarray) else np.frombuffer(pixels, dtype=np.uint8)
    if buf.dtype != np.uint8 or not buf.flags.c_contiguous or not buf.flags.writeable:
        raise TypeError("to_pixels: pixels must be a writable contiguous uint8 buffer")
    if stride in (None, 0):
        stride = w * ch
    if stride < w * ch:
        raise ValueError(f"to_pixels: stride {stride} smaller than a row of {w}x{ch} bytes")
    flat = buf.reshape(-1)
    need = stride * (h - 1) + w * ch
    if flat.size < need:
        raise ValueError(f"to_pixels: buffer has {flat.size} bytes, needs {need}")
    rows = np.lib.stride_tricks.as_strided(flat, shape=(h, w * ch), strides=(stride, 1))
    rows[...] = img.reshape(h, w * ch)
    return pixels


def _to_pixels_impl(m: Mat, pixels, type_, stride, target) -> np.ndarray:
    src, dst = _pixel_formats(type_)
    if m.empty() or m.dims not in (2, 3) or m.elempack != 1 or m.elemsize != 4:
        raise ValueError("to_pixels: need a non-empty float32 Mat of dims 2 or 3 with elempack 1")
    t = m.tensor()
    if t.ndim == 2:
        t = t[None]
    if t.shape[0] < len(src):
        raise ValueError(f"to_pixels: Mat has {t.shape[0]} channels, pixel type needs {len(src)}")
    img = np.stack([_to_uint8(t[q]) for q in range(len(src))], axis=-1)
    img = np.stack(_convert_pixels(img, src, dst), axis=-1).astype(np.uint8)
    if target is not None:
        tw, th = target
        if (tw, th) != (img.shape[1], img.shape[0]):
            img = resize_bilinear_pixels(img, tw, th)
    return _write_pixels(img, pixels, stride)


def _to_pixels(self: Mat, *args, **kwargs) -> np.ndarray:
    """``m.to_pixels(type, stride=0)`` -> (h, w, channels) uint8 array, or
    ``m.to_pixels(pixels, type, stride=0)`` writes into a caller buffer (ncnn's form)."""
    pos = list(args)
    pixels = kwargs.pop("pixels", None)
    if pos and not _is_int(pos[0]):
        pixels = pos.pop(0)
    names = ("type", "stride")
    a = dict(zip(names, pos, strict=False))
    a.update(kwargs)
    if "type" not in a or set(a) - set(names):
        raise TypeError("Mat.to_pixels: expected ([pixels,] type, stride=0)")
    return _to_pixels_impl(self, pixels, a["type"], a.get("stride"), None)


def _to_pixels_resize(self: Mat, *args, **kwargs) -> np.ndarray:
    """``m.to_pixels_resize([pixels,] type, target_width, target_height, target_stride=0)``."""
    pos = list(args)
    pixels = kwargs.pop("pixels", None)
    if pos and not _is_int(pos[0]):
        pixels = pos.pop(0)
    names = ("type", "target_width", "target_height", "target_stride")
    a = dict(zip(names, pos, strict=False))
    a.update(kwargs)
    if set(names[:3]) - set(a) or set(a) - set(names):
        raise TypeError(
            "Mat.to_pixels_resize: expected ([pixels,] type, target_width, target_height, target_stride=0)"
        )
    tw, th = int(a["target_width"]), int(a["target_height"])
    if tw <= 0 or th <= 0:
        raise ValueError(f"to_pixels_resize: target size must be positive, got {tw}x{th}")
    return _to_pixels_impl(self, pixels, a["type"], a.get("target_stride"), (tw, th))


def _substract_mean_normalize(self: Mat, mean_vals=None, norm_vals=None) -> None:
    """Per channel ``(x - mean) * norm``; an empty/None list skips that step (ncnn semantics)."""
    mean = np.asarray([] if mean_vals is None else mean_vals, dtype=np.float32).reshape(-1)
    norm = np.asarray([] if norm_vals is None else norm_vals, dtype=np.float32).reshape(-1)
    if self.empty() or (mean.size == 0 and norm.size == 0):
        return
    t = self.tensor()
    if t.dtype.kind != "f":
        raise TypeError("substract_mean_normalize: Mat must hold floats")
    channels = (self.c if self.dims >= 3 else 1) * self.elempack
    for name, v in (("mean", mean), ("norm", norm)):
        if v.size and v.size < channels:
            raise ValueError(
                f"substract_mean_normalize: {name} has {v.size} values, Mat has {channels} channels"
            )
    if self.dims < 3:
        t = t[None]
    ep = self.elempack
    bshape = (self.c if self.dims >= 3 else 1,) + (1,) * (t.ndim - 1 - (ep > 1)) + ((ep,) if ep > 1 else ())

    def per_channel(v):
        return v[:channels].reshape(-1, ep).reshape(bshape) if ep > 1 else v[:channels].reshape(bshape)

    if mean.size and norm.size:
        # ncnn fuses this into one multiply-add x*norm + (-mean*norm); a float64 product
        # is exact, so rounding once to float32 reproduces the fused result.
        n = per_channel(norm)
        bias = -(per_channel(mean) * n)
        t[...] = (t.astype(np.float64) * n + bias).astype(t.dtype)
    elif mean.size:
        t -= per_channel(mean).astype(t.dtype)
    else:
        t *= per_channel(norm).astype(t.dtype)


Mat.from_pixels = staticmethod(_from_pixels)
Mat.from_pixels_resize = staticmethod(_from_pixels_resize)
Mat.from_pixels_roi = staticmethod(_from_pixels_roi)
Mat.from_pixels_roi_resize = staticmethod(_from_pixels_roi_resize)
Mat.to_pixels = _to_pixels
Mat.to_pixels_resize = _to_pixels_resize
Mat.substract_mean_normalize = _substract_mean_normalize
