"""Mat: ncnn's blob container, a numpy window onto one flat storage buffer.

The layout is ncnn's (``dims`` 0..4, ``w h d c``, ``elemsize``/``elempack``, channel
stride ``cstep``) so that layers, the GPU upload path and C users (raw pointers from
``data_ptr()``) see exactly the memory ncnn would. ``tensor()`` / ``numpy()`` are views,
never copies; ``Mat(array)`` wraps the array when that layout allows (``Mat._wrap``). Storage and its lifetime are ``storage.py``'s; pixel I/O is ``pixels.py``'s.
"""

from __future__ import annotations

import enum
import logging
import numbers
import sys
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .storage import _allocate, _Block, alignSize

log = logging.getLogger("ncnn_c")

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


def _check_int(name: str, v) -> int:
    if type(v) is int and v >= 0:
        return v  # the common case, without the abstract-class check below
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
            # the PyPI binding's error for a shape tuple of another length
            raise RuntimeError(f"Mat.{what}: shape must be 1, 2, 3 or 4 dims, not {len(args)}")
    if not 1 <= len(args) <= 4:
        raise TypeError(f"Mat.{what}: expected 1 to 4 sizes (w, h, d, c), got {len(args)}")
    names = ("w", "h", "c") if len(args) == 3 else ("w", "h", "d", "c")
    return tuple([_check_int(names[i], a) for i, a in enumerate(args)])


class _Ref:
    """The storage's reference count, as ncnn keeps one per allocation.

    Every Mat sharing an allocation (copies, ``share_from``, dense ``reshape``) holds the same
    ``_Ref``, so the count is Python's own reference count of it, at no cost per share; views
    (``channel``, ``row_range`` ...) and foreign memory hold none, as in ncnn (refcount None).
    ``extra`` is what ``addref()`` added and ``release()`` took back without a Mat to drop.
    """

    __slots__ = ("extra",)

    def __init__(self) -> None:
        self.extra = 0


def _holders(ref: _Ref) -> int:
    return sys.getrefcount(ref)


class _Calibrate:
    __slots__ = ("_ref",)
    _ref: _Ref


def _calibrate() -> int:
    """What ``_holders`` reports for a _Ref held by exactly one attribute."""
    holder = _Calibrate()
    holder._ref = _Ref()
    return _holders(holder._ref) - 1


_REF_BASE = _calibrate()


def _batch_step(cstep: int, c: int, elemsize: int, n: int) -> int:
    """Elements between batch items: one item's channels, padded to 4096 bytes when n > 1."""
    if n <= 1 or not elemsize:
        return cstep * c
    return alignSize(cstep * c * elemsize, 4096) // elemsize


class Mat:
    """ncnn::Mat. See docs/design.md for the layout contract.

    ``Mat(array)`` wraps the array's memory, as ncnn's binding does, and keeps the array alive
    as long as the Mat or any view of it: a change to either is seen by the other. That needs
    ncnn_c's layout to be the array's: a C-contiguous, aligned, writable array of 1-, 2- or
    4-byte elements (float32, float16, int8/uint8, int32 bits ...) with one channel
    (``dims`` <= 2 or ``c == 1``, ``cstep = w*h*d``) or channels of a multiple of 16 bytes.
    Anything else is copied into a new, padded Mat: strided or read-only arrays, several
    channels whose size would need padding, ``Mat(array, batch_index)``, ``from_tensor`` and
    an explicit ``allocator``. float64 (ncnn has no fp64 blobs) is converted to a float32 copy.
    """

    # The pixel conversions live in pixels.py, next to their helpers, which attaches them.
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
            if len(args) == 2:
                batch_index = args[1]  # PyPI: Mat(array, batch_index)
            elif len(args) != 1:
                raise TypeError("Mat(array): takes one array (and a batch_index)")
            arr = np.asarray(first)
            if isinstance(batch_index, bool) or not isinstance(batch_index, numbers.Integral):
                raise TypeError(f"Mat: batch_index must be an int, got {type(batch_index).__name__}")
            if batch_index != 233:
                self._init_batch_from_array(arr, int(batch_index), allocator)
                return
            self._init_from_array(arr, allocator=allocator, elempack=1, wrap=True)
            return
        self.create(*args, elemsize=elemsize, elempack=elempack, allocator=allocator)

    def _reset(self) -> None:
        self._data: np.ndarray | None = None
        self._ref: _Ref | None = None
        self._nstep = 0
        self.dims = 0
        self.w = 0
        self.h = 0
        self.d = 0
        self.c = 0
        self.n = 1
        self.elemsize = 0
        self.elempack = 0
        self.cstep = 0

    def _init_from_array(
        self, arr: np.ndarray, allocator=None, elempack: int = 1, wrap: bool = False
    ) -> None:
        """Shape, elemsize and data from ``arr``: over its memory when ``wrap`` and the layout
        allows (``_wrap``), else a copy into a freshly created Mat."""
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
        if wrap and elempack == 1 and allocator is None and self._wrap(arr, rev):
            return
        self.create(*rev, elemsize=arr.dtype.itemsize * elempack, elempack=elempack, allocator=allocator)
        if self._data is not None:
            t = self.tensor()
            # bytes are copied as they are (uint8 -> int8, int32 -> float32 bits), as PyPI ncnn does
            t[...] = arr.view(t.dtype)

    def _wrap(self, arr: np.ndarray, shape: tuple[int, ...]) -> bool:
        """Make this Mat a window onto ``arr``'s own memory, if ncnn_c's layout of ``shape`` is
        the array's; False (nothing done) when it is not and the caller must copy.

        The array must be C-contiguous, aligned, writable and non-empty. Its channels follow
        each other without padding (ncnn's ``cstep = w*h*d``), so a Mat of several channels can
        use it only when a channel is a multiple of 16 bytes: ncnn_c keeps every channel
        16-byte aligned, and its native CPU plan and GPU uploads read blobs in that layout.
        One channel (``dims`` <= 2, or ``c == 1``) always fits: only the unused tail padding
        is missing, and ``cstep`` is then ``w*h*d``, as ncnn's Mat over external data.
        The storage is a numpy view of ``arr``, so the array lives as long as the Mat or any
        view of it; ``refcount`` is None, as for ncnn's external data.
        """
        if arr.size == 0 or not (arr.flags.c_contiguous and arr.flags.aligned and arr.flags.writeable):
            return False
        dims, w, h, d, c = unpack_shape(shape)
        if c > 1 and (w * h * d * arr.dtype.itemsize) % 16:
            return False
        self._set_shape(shape, arr.dtype.itemsize, 1)
        if c == 1:
            self.cstep = w * h * d
        self._data = arr.reshape(-1).view(np.uint8)
        return True

    def _init_batch_from_array(self, arr: np.ndarray, batch_index: int, allocator) -> None:
        """PyPI's ``Mat(array, batch_index)``: axis ``batch_index`` of ``array`` (negative
        counts from the last) is the batch. Always a copy: items sit ``nstep`` apart."""
        if -arr.ndim <= batch_index < 0:
            batch_index += arr.ndim
        if not 0 <= batch_index < arr.ndim:
            raise ValueError(
                f"Mat(array, batch_index): axis {batch_index} out of range for shape {arr.shape}"
            )
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        if arr.dtype.kind not in "fiub" or arr.dtype.itemsize not in (1, 2, 4):
            raise TypeError(
                f"Mat(array): unsupported dtype {arr.dtype} (use float32, float16, int8 or uint8)"
            )
        items = np.moveaxis(arr, batch_index, 0)
        if not 1 <= items.ndim - 1 <= 4:
            raise ValueError(
                f"Mat(array, batch_index): items must have 1 to 4 dimensions, got shape {arr.shape}"
            )
        self.create(
            *reversed(items.shape[1:]), elemsize=arr.dtype.itemsize, allocator=allocator, n=items.shape[0]
        )
        if self._data is not None:
            t = self.numpy("", 0)
            t[...] = items.view(t.dtype)

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
        self._nstep = 0
        self.elemsize, self.elempack = elemsize, elempack
        self.cstep = _cstep_for(dims, w, h, d, elemsize)

    def create(self, *args, elemsize: int = 4, elempack: int = 1, allocator=None, n: int = 1) -> None:
        """(Re)allocate for shape w[,h[,d],c] (``n`` items of it, ``nstep`` apart); keeps the
        storage if nothing changed (as ncnn)."""
        shape = _shape_args(args, "create")
        elemsize = _check_int("elemsize", elemsize)
        elempack = _check_int("elempack", elempack)
        n = _check_int("n", n)
        if elemsize == 0 or elempack == 0:
            raise ValueError("Mat.create: elemsize and elempack must be >= 1")
        if n == 0:
            raise ValueError("Mat.create: batch n must be >= 1")
        if (
            self._data is not None
            and self.dims == len(shape)
            and self._shape_tuple() == shape
            and self.elemsize == elemsize
            and self.elempack == elempack
            and self.n == n
            and self.allocator is allocator
        ):
            return
        self.release()
        self.allocator = allocator
        self._set_shape(shape, elemsize, elempack)
        if n > 1:
            self.n = n
            self._nstep = _batch_step(self.cstep, self.c, elemsize, n)
        nbytes = self.nstep * n * elemsize
        if nbytes > 0:
            self._data = _allocate(nbytes, allocator)
            if self._data is not None:
                self._ref = _Ref()

    def create_like(self, m, *args, allocator=None) -> None:
        """``create_like(m[, n][, allocator])``: the shape, elemsize and elempack of ``m`` (a Mat
        or VkMat), ``n`` batch items (default ``m.n``)."""
        n = getattr(m, "n", 1)
        if len(args) == 2:
            n, allocator = args
        elif len(args) == 1:
            if isinstance(args[0], numbers.Integral) and not isinstance(args[0], bool):
                n = args[0]
            else:
                allocator = args[0]
        elif args:
            raise TypeError("Mat.create_like(m[, n][, allocator])")
        dims = m.dims
        if dims == 0:
            self.release()
            return
        shape = ((m.w,), (m.w, m.h), (m.w, m.h, m.c), (m.w, m.h, m.d, m.c))[dims - 1]
        self.create(*shape, elemsize=m.elemsize, elempack=m.elempack, allocator=allocator, n=n)

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
        self._ref = other._ref
        self._nstep = other._nstep
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
        """Count one more user of the storage (ncnn's manual ``addref``); the memory itself
        lives as long as Python references it."""
        if self._ref is not None:
            self._ref.extra += 1

    @property
    def refcount(self) -> int | None:
        """How many Mats share this allocation (plus ``addref`` calls); None for empty Mats,
        views and foreign memory, as the PyPI package reports."""
        if self._ref is None:
            return None
        return _holders(self._ref) - _REF_BASE + self._ref.extra

    @property
    def nstep(self) -> int:
        """Elements from one batch item to the next (``cstep * c`` when n == 1)."""
        return self._nstep or self.cstep * self.c

    # ------------------------------------------------------------------ queries

    def empty(self) -> bool:
        return self._data is None or self.total() == 0

    def total(self) -> int:
        """Elements of one batch item, channel padding included (ncnn's ``cstep * c``)."""
        return self.cstep * self.c

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
        m.n = self.n
        return m

    def __len__(self) -> int:
        return self.w

    def __repr__(self) -> str:
        return (
            f"<ncnn_c.Mat w={self.w} h={self.h} d={self.d} c={self.c} dims={self.dims} n={self.n} "
            f"cstep={self.cstep} nstep={self.nstep} elemsize={self.elemsize} elempack={self.elempack} "
            f"refcount={self.refcount} data=0x{self.data_ptr():x} allocator={type(self.allocator).__name__ if self.allocator else None}>"
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
        """A numpy view of the data ('' by elemsize, 'f' float32, 'i' int32, 'd' float64).

        ``batch_index`` 233 (the default) views batch item 0 only; any other value views all
        ``n`` items with the batch axis at that position of the numpy shape, as PyPI ncnn.
        """
        dt = None
        if format:
            dt = _FORMAT_DTYPES.get(format)
            if dt is None:
                raise ValueError(f"Mat.numpy: unknown format {format!r} (use 'f', 'i' or 'd')")
        one = self.tensor(dt)
        if isinstance(batch_index, bool) or not isinstance(batch_index, numbers.Integral):
            raise TypeError(f"Mat.numpy: batch_index must be an int, got {type(batch_index).__name__}")
        batch_index = int(batch_index)
        if batch_index == 233:
            return one
        if -one.ndim - 1 <= batch_index < 0:
            batch_index += one.ndim + 1  # as numpy.stack's axis, which PyPI uses
        if not 0 <= batch_index <= one.ndim:
            raise ValueError(f"Mat.numpy: batch_index {batch_index} out of range 0..{one.ndim}")
        if self._data is None or self.dims == 0:
            return np.moveaxis(one[np.newaxis], 0, batch_index)
        step = self.nstep * self.elemsize
        items = np.lib.stride_tricks.as_strided(
            one, shape=(self.n, *one.shape), strides=(step, *one.strides), writeable=True
        )
        return np.moveaxis(items, 0, batch_index)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        t = self.tensor()
        if dtype is not None and np.dtype(dtype) != t.dtype:
            if copy is False:
                raise ValueError("Mat.__array__: dtype conversion needs a copy")
            return t.astype(dtype)
        if copy:
            return t.copy()
        return t

    def _flat_floats(self, i: int) -> tuple[np.ndarray, int]:
        """The storage as float32 and ``i`` made an index into it.

        ``0 <= i`` is ncnn's ``operator[]``, ``((float*)data)[i]``, over the whole storage
        (channel padding included, as ncnn reads it). A negative ``i`` counts back from the
        last element of the last channel (of the last batch item), never from the padding
        after it: ``m[-1]`` of a 2x3 Mat is its sixth element.
        """
        if self._data is None or self.dims == 0:
            flat = np.empty(0, np.float32)
            end = 0
        else:
            flat = self._data[: len(self._data) // 4 * 4].view(np.float32)
            last = (self.n - 1) * self.nstep + (self.c - 1) * self.cstep + self.w * self.h * self.d
            end = min(last * self.elemsize // 4, len(flat))
        j = int(i) + end if i < 0 else int(i)
        if not 0 <= j < len(flat):
            raise IndexError(f"Mat index {i} out of range")
        return flat, j

    def __getitem__(self, i: int) -> float:
        flat, j = self._flat_floats(i)
        return float(flat[j])

    def __setitem__(self, i: int, v: float) -> None:
        flat, j = self._flat_floats(i)
        flat[j] = v

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
        assert self._data is not None  # not empty()
        if m.cstep == self.cstep and m.nstep == self.nstep and len(self._data) >= len(m._data):
            m._data[...] = self._data[: len(m._data)]
        else:
            m.numpy("", 0)[...] = self.numpy("", 0)
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
            # same bytes per item: share the allocation (and its reference count), as ncnn
            new._data = self._data[
                : max(new.cstep * new.c, self.nstep * (self.n - 1) + new.cstep * new.c) * new.elemsize
            ]
            new._ref = self._ref
            new.allocator = self.allocator
            if self.n > 1:
                new.n, new._nstep = self.n, self.nstep
            return new
        new.create(*shape, elemsize=self.elemsize, elempack=self.elempack, allocator=allocator, n=self.n)
        if new._data is None:
            return Mat()
        src = self.numpy("", 0)
        dst = new.numpy("", 0)
        dst[...] = np.ascontiguousarray(src).reshape(dst.shape)
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

    def row(self, y: int) -> memoryview | np.ndarray:
        """Row ``y`` of the first channel, viewing the Mat's memory (writes go through).

        A ``memoryview`` for fp32 and 8-bit Mats, as PyPI ncnn returns: its elements are Python
        floats (ints), so they compare as ncnn's do. fp16 rows, which PyPI refuses and a
        memoryview cannot index, come as a float16 numpy view.
        """
        self._check_range("row", y, 1, self.h * (self.d if self.dims == 4 else 1))
        t = self._view(self.w * y * self.elemsize, 1, self.w, 1, 1, 1, self.w).tensor()
        if t.dtype.itemsize == 2:
            return t
        return t.data  # the buffer as a memoryview

    def row_range(self, y: int, rows: int) -> Mat:
        self._check_range("row_range", y, rows, self.h * (self.d if self.dims == 4 else 1))
        return self._view(self.w * y * self.elemsize, 2, self.w, rows, 1, 1, self.w * rows)

    def range(self, x: int, n: int) -> Mat:
        self._check_range("range", x, n, self.total())
        return self._view(x * self.elemsize, 1, n, 1, 1, 1, n)

    def batch(self, b: int) -> Mat:
        """Batch item ``b`` as a Mat (n = 1) viewing this Mat's memory."""
        self._check_range("batch", b, 1, self.n)
        if self.n == 1:
            return Mat(self)
        return self._view(
            self.nstep * b * self.elemsize, self.dims, self.w, self.h, self.d, self.c, self.cstep
        )

    # copy.copy shares like ncnn's copy constructor; deepcopy and pickling copy the data
    # (a plain deepcopy would duplicate the allocator and lose the block's give-back).
    def __copy__(self) -> Mat:
        return Mat(self)

    def __deepcopy__(self, memo) -> Mat:
        return self.clone(self.allocator)

    def __reduce__(self):
        if self.empty():
            return (Mat, ())
        if self.n > 1:
            return (Mat, (np.array(self.numpy("", 0)), 0))  # Mat(array, batch_index=0)
        return (_unpickle_mat, (np.array(self.tensor()), self.elempack))


def _unpickle_mat(arr: np.ndarray, elempack: int) -> Mat:
    return Mat.from_tensor(arr, elempack=elempack)
