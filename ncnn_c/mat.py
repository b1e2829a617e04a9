"""Mat: ncnn's blob container over one flat, aligned numpy byte buffer.

The layout is ncnn's (``dims`` 0..4, ``w h d c``, ``elemsize``/``elempack``, channel
stride ``cstep``) so that layers, the GPU upload path and C users (raw pointers from
``data_ptr()``) see exactly the memory ncnn would. Numpy is only a window onto that
buffer: ``tensor()`` / ``numpy()`` are views, never copies.

Lifetime: storage obtained from an allocator is wrapped in a ``_Block`` that every
numpy view over it references (numpy keeps the first non-array base alive), so the
block goes back to its allocator only when the last Mat *and* the last view are gone.
"""

from __future__ import annotations

import enum
import logging
import numbers
import operator
import weakref
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .allocator import fast_malloc

log = logging.getLogger("ncnn_c")


def alignSize(sz: int, n: int) -> int:
    """``sz`` rounded up to a multiple of ``n`` (a power of two), as ncnn's alignSize."""
    return (int(sz) + n - 1) & -n


def float32_to_float16(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).astype(np.float16)


def float16_to_float32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float16).astype(np.float32)


# scalar byte size -> dtype used by tensor()/numpy() (ncnn stores fp32, fp16, int8)
_SCALAR_DTYPES: dict[int, np.dtype] = {
    4: np.dtype(np.float32),
    2: np.dtype(np.float16),
    1: np.dtype(np.int8),
    8: np.dtype(np.float64),
}
_FORMAT_DTYPES: dict[str, np.dtype] = {
    "f": np.dtype(np.float32),
    "i": np.dtype(np.int32),
    "d": np.dtype(np.float64),
}


class _Block:
    """Root object of one allocation; numpy views reference it through ``__array_interface__``.

    ``buf`` is what the allocator handed out (given back to it when the block dies),
    ``owner`` keeps foreign memory (``from_external``) alive.
    """

    def __init__(self, nbytes: int, address: int, allocator=None, buf=None, owner=None) -> None:
        self.buf = buf
        self.owner = owner
        self.__array_interface__ = {
            "shape": (int(nbytes),),
            "typestr": "|u1",
            "data": (int(address), False),
            "version": 3,
        }
        if allocator is not None:
            weakref.finalize(self, _give_back, allocator, buf)


def _give_back(allocator, buf) -> None:
    try:
        allocator.fastFree(buf)
    except Exception:  # noqa: BLE001 - a finaliser must not raise
        log.exception("Mat: allocator.fastFree failed")


def _as_byte_buffer(buf, nbytes: int) -> np.ndarray:
    """Whatever a (possibly user-written) allocator returned, as a writable uint8 array."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise MemoryError("allocator returned a non-contiguous array")
        arr = buf.reshape(-1).view(np.uint8)
    else:
        arr = np.frombuffer(buf, dtype=np.uint8)
    if arr.nbytes < nbytes:
        raise MemoryError(f"allocator returned {arr.nbytes} bytes, {nbytes} requested")
    if not arr.flags.writeable:
        raise MemoryError("allocator returned a read-only buffer")
    return arr


def _allocate(nbytes: int, allocator) -> np.ndarray | None:
    """A 1-D uint8 storage array of ``nbytes`` bytes (None if the allocator failed)."""
    if allocator is None:
        return fast_malloc(nbytes)
    request = alignSize(nbytes, 4)
    buf = None
    try:
        buf = allocator.fastMalloc(request)
        if buf is None:
            raise MemoryError("allocator returned None")
        arr = _as_byte_buffer(buf, nbytes)
    except (MemoryError, TypeError, ValueError) as e:
        log.error("Mat: allocation of %d bytes failed: %s", nbytes, e)
        if buf is not None:
            _give_back(allocator, buf)  # unusable, but the allocator still counts it as lent
        return None
    block = _Block(nbytes, arr.__array_interface__["data"][0], allocator=allocator, buf=buf)
    return np.asarray(block)


def _check_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"Mat: {name} must be an int, got {type(v).__name__}")
    v = int(v)
    if v < 0:
        raise ValueError(f"Mat: {name} must be >= 0, got {v}")
    return v


def _cstep_for(dims: int, w: int, h: int, d: int, elemsize: int) -> int:
    """Elements per channel: ncnn pads every channel (any dims, as its batch-aware Mat does) to
    16 bytes, so channels, and batches, start aligned."""
    return alignSize(w * h * d * elemsize, 16) // elemsize if elemsize else 0


def unpack_shape(shape) -> tuple[int, int, int, int, int]:
    """(dims, w, h, d, c) of an ncnn-order shape: (w,), (w, h), (w, h, c) or (w, h, d, c)."""
    dims = len(shape)
    w = h = d = c = 1
    if dims == 1:
        (w,) = shape
    elif dims == 2:
        w, h = shape
    elif dims == 3:
        w, h, c = shape
    else:
        w, h, d, c = shape
    return dims, int(w), int(h), int(d), int(c)


def _shape_args(args, what: str) -> tuple[int, ...]:
    """ncnn-order shape (w[, h[, d], c]) from ints or one tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    if not 1 <= len(args) <= 4:
        raise TypeError(f"Mat.{what}: expected 1 to 4 sizes (w, h, d, c), got {len(args)}")
    names = ("w", "h", "c") if len(args) == 3 else ("w", "h", "d", "c")
    return tuple(_check_int(names[i], a) for i, a in enumerate(args))


class Mat:
    """ncnn::Mat. See docs/design.md for the layout contract."""

    # The pixel conversions live after the class, next to their helpers, and are attached at
    # the end of this module.
    from_pixels: ClassVar[Callable[..., Mat]]
    from_pixels_resize: ClassVar[Callable[..., Mat]]
    from_pixels_roi: ClassVar[Callable[..., Mat]]
    from_pixels_roi_resize: ClassVar[Callable[..., Mat]]
    to_pixels: ClassVar[Callable[..., np.ndarray]]
    to_pixels_resize: ClassVar[Callable[..., np.ndarray]]
    substract_mean_normalize: ClassVar[Callable[..., None]]

    class PixelType(enum.IntEnum):
        """Pixel layouts and conversions, ``X2Y = X | (Y << PIXEL_CONVERT_SHIFT)``, as PyPI ncnn."""

        PIXEL_CONVERT_SHIFT = 16
        PIXEL_FORMAT_MASK = 0x0000FFFF
        PIXEL_CONVERT_MASK = 0xFFFF0000
        PIXEL_RGB = 1
        PIXEL_BGR = 2
        PIXEL_GRAY = 3
        PIXEL_RGBA = 4
        PIXEL_BGRA = 5
        PIXEL_RGB2BGR = PIXEL_RGB | (PIXEL_BGR << 16)
        PIXEL_RGB2GRAY = PIXEL_RGB | (PIXEL_GRAY << 16)
        PIXEL_RGB2RGBA = PIXEL_RGB | (PIXEL_RGBA << 16)
        PIXEL_RGB2BGRA = PIXEL_RGB | (PIXEL_BGRA << 16)
        PIXEL_BGR2RGB = PIXEL_BGR | (PIXEL_RGB << 16)
        PIXEL_BGR2GRAY = PIXEL_BGR | (PIXEL_GRAY << 16)
        PIXEL_BGR2RGBA = PIXEL_BGR | (PIXEL_RGBA << 16)
        PIXEL_BGR2BGRA = PIXEL_BGR | (PIXEL_BGRA << 16)
        PIXEL_GRAY2RGB = PIXEL_GRAY | (PIXEL_RGB << 16)
        PIXEL_GRAY2BGR = PIXEL_GRAY | (PIXEL_BGR << 16)
        PIXEL_GRAY2RGBA = PIXEL_GRAY | (PIXEL_RGBA << 16)
        PIXEL_GRAY2BGRA = PIXEL_GRAY | (PIXEL_BGRA << 16)
        PIXEL_RGBA2RGB = PIXEL_RGBA | (PIXEL_RGB << 16)
        PIXEL_RGBA2BGR = PIXEL_RGBA | (PIXEL_BGR << 16)
        PIXEL_RGBA2GRAY = PIXEL_RGBA | (PIXEL_GRAY << 16)
        PIXEL_RGBA2BGRA = PIXEL_RGBA | (PIXEL_BGRA << 16)
        PIXEL_BGRA2RGB = PIXEL_BGRA | (PIXEL_RGB << 16)
        PIXEL_BGRA2BGR = PIXEL_BGRA | (PIXEL_BGR << 16)
        PIXEL_BGRA2GRAY = PIXEL_BGRA | (PIXEL_GRAY << 16)
        PIXEL_BGRA2RGBA = PIXEL_BGRA | (PIXEL_RGBA << 16)

    # ------------------------------------------------------------------ construction

    def __init__(
        self, *args, elemsize: int = 4, elempack: int = 1, allocator=None, batch_index: int = 233
    ) -> None:
        self._reset()
        self.allocator = None
        if not args:
            return
        first = args[0]
        if isinstance(first, Mat):
            if len(args) != 1:
                raise TypeError("Mat(m): copy constructor takes one Mat")
            self.share_from(first)
            return
        if isinstance(first, (float, str)) or first is None:
            raise TypeError(
                f"Mat: expected sizes, a shape tuple, a Mat or an array, got {type(first).__name__}"
            )
        if not isinstance(first, (numbers.Integral, tuple, list)):
            if len(args) != 1:
                raise TypeError("Mat(array): takes one array")
            self._init_from_array(np.asarray(first), allocator=allocator, elempack=1)
            return
        self.create(*args, elemsize=elemsize, elempack=elempack, allocator=allocator)

    def _reset(self) -> None:
        self._data: np.ndarray | None = None
        self.dims = 0
        self.w = 0
        self.h = 0
        self.d = 0
        self.c = 0
        self.n = 1
        self.elemsize = 0
        self.elempack = 0
        self.cstep = 0

    def _init_from_array(self, arr: np.ndarray, allocator=None, elempack: int = 1) -> None:
        elempack = _check_int("elempack", elempack)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)  # numpy's default float; ncnn has no fp64 blobs
        if arr.dtype.kind not in "fiub" or arr.dtype.itemsize not in (1, 2, 4):
            raise TypeError(
                f"Mat(array): unsupported dtype {arr.dtype} (use float32, float16, int8 or uint8)"
            )
        shape = arr.shape
        if elempack > 1:
            if not shape or shape[-1] != elempack:
                raise ValueError(f"Mat(array): last axis must be the elempack {elempack}, shape is {shape}")
            shape = shape[:-1]
        elif elempack == 0:
            raise ValueError("Mat(array): elempack must be >= 1")
        if not 1 <= len(shape) <= 4:
            raise ValueError(f"Mat(array): expected 1 to 4 dimensions, got shape {arr.shape}")
        rev = tuple(reversed(shape))  # numpy (c, d, h, w) -> ncnn (w, h, d, c)
        self.create(*rev, elemsize=arr.dtype.itemsize * elempack, elempack=elempack, allocator=allocator)
        if self._data is not None:
            t = self.tensor()
            # bytes are copied as they are (uint8 -> int8, int32 -> float32 bits), as PyPI ncnn does
            t[...] = arr.view(t.dtype)

    @classmethod
    def from_tensor(cls, arr, allocator=None, elempack: int = 1) -> Mat:
        """A new Mat holding a copy of ``arr`` (shape (w,), (h,w), (c,h,w), (c,d,h,w) [+ (elempack,)])."""
        m = cls()
        m._init_from_array(np.asarray(arr), allocator=allocator, elempack=elempack)
        return m

    @classmethod
    def from_external(
        cls, address: int, *shape, elemsize: int = 4, elempack: int = 1, allocator=None, owner=None
    ) -> Mat:
        """A Mat over foreign memory at ``address`` laid out as ncnn lays out ``shape`` (w[,h[,d],c]).

        ``owner`` is kept alive as long as the Mat (or a view of it) is.
        """
        dims_shape = _shape_args(shape, "from_external")
        m = cls()
        m._set_shape(dims_shape, _check_int("elemsize", elemsize), _check_int("elempack", elempack))
        if m.dims < 3:
            # one channel: claim only the memory the caller handed over, not the tail padding
            m.cstep = m.w * m.h
        m.allocator = allocator
        nbytes = m.cstep * m.c * m.elemsize
        if nbytes and not address:
            raise ValueError("Mat.from_external: NULL address")
        if nbytes:
            m._data = np.asarray(_Block(nbytes, int(address), owner=owner))
        return m

    def _set_shape(self, shape: tuple[int, ...], elemsize: int, elempack: int) -> None:
        dims, w, h, d, c = unpack_shape(shape)
        self.dims, self.w, self.h, self.d, self.c = dims, w, h, d, c
        self.n = 1
        self.elemsize, self.elempack = elemsize, elempack
        self.cstep = _cstep_for(dims, w, h, d, elemsize)

    def create(self, *args, elemsize: int = 4, elempack: int = 1, allocator=None, n: int = 1) -> None:
        """(Re)allocate for shape w[,h[,d],c]; keeps the storage if nothing changed (as ncnn)."""
        shape = _shape_args(args, "create")
        elemsize = _check_int("elemsize", elemsize)
        elempack = _check_int("elempack", elempack)
        if elemsize == 0 or elempack == 0:
            raise ValueError("Mat.create: elemsize and elempack must be >= 1")
        if n != 1:
            raise ValueError("Mat.create: batch n != 1 is not supported")
        if (
            self._data is not None
            and self.dims == len(shape)
            and self._shape_tuple() == shape
            and self.elemsize == elemsize
            and self.elempack == elempack
            and self.allocator is allocator
        ):
            return
        self.release()
        self.allocator = allocator
        self._set_shape(shape, elemsize, elempack)
        nbytes = self.cstep * self.c * elemsize
        if nbytes > 0:
            self._data = _allocate(nbytes, allocator)

    def create_like(self, m, allocator=None) -> None:
        """Allocate the shape, elemsize and elempack of ``m`` (a Mat or VkMat)."""
        dims = m.dims
        if dims == 0:
            self.release()
            return
        shape = ((m.w,), (m.w, m.h), (m.w, m.h, m.c), (m.w, m.h, m.d, m.c))[dims - 1]
        self.create(*shape, elemsize=m.elemsize, elempack=m.elempack, allocator=allocator)

    def _shape_tuple(self) -> tuple[int, ...]:
        if self.dims == 1:
            return (self.w,)
        if self.dims == 2:
            return (self.w, self.h)
        if self.dims == 3:
            return (self.w, self.h, self.c)
        if self.dims == 4:
            return (self.w, self.h, self.d, self.c)
        return ()

    def release(self) -> None:
        self._reset()

    def share_from(self, other: Mat) -> Mat:
        """Make this Mat refer to ``other``'s storage and shape (ncnn's ``operator=``), no copy."""
        if other is self:
            return self
        self._data = other._data
        self.dims, self.w, self.h, self.d, self.c, self.n = (
            other.dims,
            other.w,
            other.h,
            other.d,
            other.c,
            other.n,
        )
        self.elemsize, self.elempack, self.cstep = other.elemsize, other.elempack, other.cstep
        self.allocator = other.allocator
        return self

    def addref(self) -> None:
        """Reference counting is Python's; kept for API compatibility."""

    @property
    def refcount(self) -> int:
        return 0 if self._data is None else 1

    @property
    def nstep(self) -> int:
        return self.cstep * self.c

    # ------------------------------------------------------------------ queries

    def empty(self) -> bool:
        return self._data is None or self.total() == 0

    def total(self) -> int:
        return self.cstep * self.c * self.n

    def elembits(self) -> int:
        return self.elemsize * 8 // self.elempack if self.elempack else 0

    def shape(self) -> Mat:
        """A data-less Mat with the unpacked shape (ncnn's ``Mat::shape()``)."""
        m = Mat()
        if self.dims == 0:
            return m
        ep = self.elempack
        shape = (
            (self.w * ep,),
            (self.w, self.h * ep),
            (self.w, self.h, self.c * ep),
            (self.w, self.h, self.d, self.c * ep),
        )[self.dims - 1]
        m._set_shape(shape, 4, 1)
        return m

    def __len__(self) -> int:
        return self.w

    def __repr__(self) -> str:
        return (
            f"<ncnn_c.Mat w={self.w} h={self.h} d={self.d} c={self.c} dims={self.dims} n={self.n} "
            f"cstep={self.cstep} elemsize={self.elemsize} elempack={self.elempack} "
            f"data=0x{self.data_ptr():x} allocator={type(self.allocator).__name__ if self.allocator else None}>"
        )

    # ------------------------------------------------------------------ raw access

    def raw(self) -> np.ndarray:
        """The whole 1-D uint8 storage, channel padding included (empty array if none)."""
        if self._data is None:
            return np.empty(0, dtype=np.uint8)
        return self._data

    def data_ptr(self) -> int:
        if self._data is None:
            return 0
        return int(self._data.__array_interface__["data"][0])

    def _scalar_dtype(self) -> np.dtype:
        size = self.elemsize // self.elempack if self.elempack else 0
        dt = _SCALAR_DTYPES.get(size)
        if dt is None or size * self.elempack != self.elemsize:
            raise TypeError(f"Mat: no numpy dtype for elemsize {self.elemsize} / elempack {self.elempack}")
        return dt

    def tensor(self, dtype=None) -> np.ndarray:
        """Writable numpy view without cstep padding: (w,), (h,w), (c,h,w), (c,d,h,w) [+ (elempack,)]."""
        dt = self._scalar_dtype() if self.dims else _SCALAR_DTYPES[4]
        if dtype is not None:
            dtype = np.dtype(dtype)
            if dtype.itemsize != dt.itemsize:
                raise ValueError(f"Mat.tensor: dtype {dtype} does not match {dt.itemsize}-byte elements")
            dt = dtype
        if self._data is None or self.dims == 0:
            return np.empty((0,), dtype=dt)
        ep = self.elempack
        pack = (ep,) if ep > 1 else ()
        flat = self._data.view(dt)
        w, h, d, c = self.w, self.h, self.d, self.c
        if self.dims == 1:
            return flat[: w * ep].reshape((w, *pack))
        if self.dims == 2:
            return flat[: w * h * ep].reshape((h, w, *pack))
        per = w * h * d * ep
        chans = flat[: self.cstep * ep * c].reshape(c, self.cstep * ep)[:, :per]
        if self.dims == 3:
            return chans.reshape((c, h, w, *pack))
        return chans.reshape((c, d, h, w, *pack))

    def numpy(self, format: str = "", batch_index: int = 233) -> np.ndarray:
        """A numpy view of the data ('' by elemsize, 'f' float32, 'i' int32, 'd' float64)."""
        if format:
            dt = _FORMAT_DTYPES.get(format)
            if dt is None:
                raise ValueError(f"Mat.numpy: unknown format {format!r} (use 'f', 'i' or 'd')")
            return self.tensor(dt)
        return self.tensor()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        t = self.tensor()
        if dtype is not None and np.dtype(dtype) != t.dtype:
            if copy is False:
                raise ValueError("Mat.__array__: dtype conversion needs a copy")
            return t.astype(dtype)
        if copy:
            return t.copy()
        return t

    def __getitem__(self, i: int) -> float:
        flat = self.raw().view(np.float32) if self._data is not None else np.empty(0, np.float32)
        if not -len(flat) <= i < len(flat):
            raise IndexError(f"Mat index {i} out of range ({len(flat)})")
        return float(flat[i])

    def __setitem__(self, i: int, v: float) -> None:
        flat = self.raw().view(np.float32) if self._data is not None else np.empty(0, np.float32)
        if not -len(flat) <= i < len(flat):
            raise IndexError(f"Mat index {i} out of range ({len(flat)})")
        flat[i] = v

    # ------------------------------------------------------------------ whole-Mat ops

    def fill(self, v) -> None:
        """Set every element, channel padding included (as ncnn)."""
        if self._data is None:
            return
        dt = self._scalar_dtype()
        if dt.kind == "i":
            v = int(v)
        self._data.view(dt)[...] = v

    def clone(self, allocator=None) -> Mat:
        m = Mat()
        if self.empty():
            return m
        m.create_like(self, allocator=allocator)
        if m._data is None:
            return Mat()
        if m.cstep == self.cstep:
            assert self._data is not None  # not empty()
            m._data[...] = self._data[: len(m._data)]
        else:
            m.tensor()[...] = self.tensor()
        return m

    def clone_from(self, m: Mat, allocator=None) -> None:
        self.share_from(m.clone(allocator))

    def reshape(self, *args, allocator=None) -> Mat:
        """Same data in a new shape; shares memory unless the channel padding must change."""
        shape = _shape_args(args, "reshape")
        new = Mat()
        new._set_shape(shape, self.elemsize, self.elempack)
        if new.w * new.h * new.d * new.c != self.w * self.h * self.d * self.c:
            log.error(
                "Mat.reshape: %s has %d elements, %s needs %d",
                self._shape_tuple(),
                self.w * self.h * self.d * self.c,
                shape,
                new.w * new.h * new.d * new.c,
            )
            return Mat()
        if self._data is None:
            return new
        src_dense = self.dims < 3 or self.c == 1 or self.cstep == self.w * self.h * self.d
        dst_dense = new.dims < 3 or new.cstep == new.w * new.h * new.d
        if src_dense and dst_dense:
            new._data = self._data[: new.cstep * new.c * new.elemsize]
            new.allocator = self.allocator
            return new
        new.create(*shape, elemsize=self.elemsize, elempack=self.elempack, allocator=allocator)
        if new._data is None:
            return Mat()
        src = np.ascontiguousarray(self.tensor()).reshape(-1)
        new.tensor()[...] = src.reshape(new.tensor().shape)
        return new

    # ------------------------------------------------------------------ views

    def _view(self, offset: int, dims: int, w: int, h: int, d: int, c: int, cstep: int) -> Mat:
        m = Mat()
        m.dims, m.w, m.h, m.d, m.c, m.cstep = dims, w, h, d, c, cstep
        m.elemsize, m.elempack = self.elemsize, self.elempack
        m.allocator = self.allocator
        nbytes = cstep * c * self.elemsize
        if self._data is not None:
            if offset + nbytes > len(self._data):
                raise IndexError("Mat view out of range")
            m._data = self._data[offset : offset + nbytes]
        return m

    def _check_range(self, what: str, start: int, count: int, limit: int) -> None:
        if start < 0 or count < 0 or start + count > limit:
            raise IndexError(f"Mat.{what}({start}, {count}) out of range 0..{limit}")

    def channel(self, q: int) -> Mat:
        """Channel ``q`` as a Mat sharing memory (dims 3 -> 2, dims 4 -> 3)."""
        self._check_range("channel", q, 1, self.c)
        off = self.cstep * q * self.elemsize
        if self.dims == 4:
            return self._view(off, 3, self.w, self.h, 1, self.d, self.w * self.h)
        if self.dims == 3:
            # the 2D channel keeps the parent's padded channel size, as ncnn's does
            return self._view(off, 2, self.w, self.h, 1, 1, self.cstep)
        return self._view(off, self.dims, self.w, self.h, 1, 1, self.cstep)

    def channel_range(self, c: int, channels: int) -> Mat:
        self._check_range("channel_range", c, channels, self.c)
        return self._view(
            self.cstep * c * self.elemsize, self.dims, self.w, self.h, self.d, channels, self.cstep
        )

    def depth(self, z: int) -> Mat:
        """Depth slice ``z`` of a (channel of a) 3D-volume Mat, as a 2D Mat."""
        limit = self.d if self.dims == 4 else self.c if self.dims == 3 else 1
        self._check_range("depth", z, 1, limit)
        return self._view(self.w * self.h * z * self.elemsize, 2, self.w, self.h, 1, 1, self.w * self.h)

    def depth_range(self, z: int, depths: int) -> Mat:
        limit = self.d if self.dims == 4 else self.c if self.dims == 3 else 1
        self._check_range("depth_range", z, depths, limit)
        return self._view(self.w * self.h * z * self.elemsize, 3, self.w, self.h, 1, depths, self.w * self.h)

    def row(self, y: int) -> np.ndarray:
        """Row ``y`` of the first channel as a numpy view."""
        self._check_range("row", y, 1, self.h * (self.d if self.dims == 4 else 1))
        t = self._view(self.w * y * self.elemsize, 1, self.w, 1, 1, 1, self.w)
        return t.tensor()

    def row_range(self, y: int, rows: int) -> Mat:
        self._check_range("row_range", y, rows, self.h * (self.d if self.dims == 4 else 1))
        return self._view(self.w * y * self.elemsize, 2, self.w, rows, 1, 1, self.w * rows)

    def range(self, x: int, n: int) -> Mat:
        self._check_range("range", x, n, self.total())
        return self._view(x * self.elemsize, 1, n, 1, 1, 1, n)

    def batch(self, b: int) -> Mat:
        """Batch ``b`` (only batch 0 exists: ncnn_c Mats have n = 1)."""
        self._check_range("batch", b, 1, self.n)
        return Mat(self)

    # copy.copy shares like ncnn's copy constructor; deepcopy and pickling copy the data
    # (a plain deepcopy would duplicate the allocator and lose the block's give-back).
    def __copy__(self) -> Mat:
        return Mat(self)

    def __deepcopy__(self, memo) -> Mat:
        return self.clone(self.allocator)

    def __reduce__(self):
        if self.empty():
            return (Mat, ())
        return (_unpickle_mat, (np.array(self.tensor()), self.elempack))


def _unpickle_mat(arr: np.ndarray, elempack: int) -> Mat:
    return Mat.from_tensor(arr, elempack=elempack)


# ---------------------------------------------------------------------- pixels
#
# Pixel conversion and resizing reproduce ncnn's integer arithmetic (gray weights
# 77/150/29 >> 8, bilinear coefficients with 11 fractional bits) so images prepared
# here give bit-identical network inputs to ncnn's.

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
