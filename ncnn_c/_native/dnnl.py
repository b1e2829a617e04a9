"""A small checked wrapper over the oneDNN calls the native CPU plan makes.

Only this module (and ``onednn.py``, which loads the library) touches the ``_plan``
extension's ``ffi`` / ``lib``: ``ncnn_c/net/native/`` builds plans from these objects.
Every oneDNN status other than success raises ``DnnlError`` naming the call; every handle
is destroyed when its Python object goes (primitives and memories hold references to what
they need, so the order of collection does not matter).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..errors import NcnnError
from . import onednn

MAX_NDIMS = 12


class DnnlError(NcnnError):
    """A oneDNN call failed (an unsupported shape or setting, or no memory)."""


TAGGED_KEPT = 4096  # tagged descriptors cached (Dnnl.md)


class Dnnl:
    """The loaded library: one CPU engine per process."""

    def __init__(self, mod) -> None:
        self.ffi, self.lib = mod.ffi, mod.lib
        p = self.ffi.new("dnnl_engine_t *")
        self.check(self.lib.dnnl_engine_create(p, self.lib.dnnl_cpu, 0), "dnnl_engine_create")
        self.engine = self.ffi.gc(p[0], self.lib.dnnl_engine_destroy)
        # descriptors by (dims, tag, type): a plan's build asks for the same few hundred again
        # and again (a descriptor is a value: one instance serves every asker)
        self._tagged: dict[tuple, MD] = {}
        self._tagged_lock = threading.Lock()

    def has_vnni(self) -> bool:
        """Whether oneDNN's int8 kernels multiply with VNNI (AVX-512 or AVX) or better here:
        exact int32 sums (without, they halve the weights to keep int16 pairs in range)."""
        isa, lib = int(self.lib.dnnl_get_effective_cpu_isa()), self.lib
        return any(
            isa & int(v) == int(v) for v in (lib.dnnl_cpu_isa_avx2_vnni, lib.dnnl_cpu_isa_avx512_core_vnni)
        )

    def check(self, status: int, what: str) -> None:
        if status != self.lib.dnnl_success:
            raise DnnlError(f"oneDNN {what}: status {status}")

    def dims(self, values: Sequence[int]):
        return self.ffi.new("dnnl_dims_t", [int(v) for v in values])

    # -- memory descriptors ------------------------------------------------------------
    def md(
        self, dims: Sequence[int], tag: str | None = None, strides: Sequence[int] | None = None, dtype="f32"
    ) -> MD:
        """A memory descriptor of ``dtype`` (f32, s32, s8, u8): by format tag ("any", "abcd",
        ...) or by strides."""
        if strides is None:
            key = (tuple(dims), tag, dtype)
            got = self._tagged.get(key)
            if got is not None:
                return got
        p = self.ffi.new("dnnl_memory_desc_t *")
        dt = getattr(self.lib, f"dnnl_{dtype}")
        if strides is not None:
            st = self.lib.dnnl_memory_desc_create_with_strides(
                p, len(dims), self.dims(dims), dt, self.dims(strides)
            )
        else:
            name = "dnnl_format_tag_any" if tag in (None, "any") else f"dnnl_{tag}"
            st = self.lib.dnnl_memory_desc_create_with_tag(
                p, len(dims), self.dims(dims), dt, getattr(self.lib, name)
            )
        self.check(st, "memory_desc_create")
        md = MD(self, p[0], tuple(int(v) for v in dims))
        if strides is None:
            with self._tagged_lock:
                if len(self._tagged) >= TAGGED_KEPT:
                    self._tagged.clear()
                self._tagged[key] = md
        return md

    def own(self, md_ptr, dims: Sequence[int]) -> MD:
        """A copy of a descriptor owned by someone else (a primitive descriptor's)."""
        p = self.ffi.new("dnnl_memory_desc_t *")
        self.check(self.lib.dnnl_memory_desc_clone(p, md_ptr), "memory_desc_clone")
        return MD(self, p[0], tuple(dims))

    def memory(self, md: MD, address: int | None) -> Mem:
        """A memory over ``address`` (None: a placeholder bound before each run)."""
        p = self.ffi.new("dnnl_memory_t *")
        handle = self.ffi.cast("void *", address or 0)
        self.check(self.lib.dnnl_memory_create(p, md.ptr, self.engine, handle), "memory_create")
        return Mem(self.ffi.gc(p[0], self.lib.dnnl_memory_destroy), md)

    # -- primitive descriptors ----------------------------------------------------------
    def attr(self, post: Sequence[tuple] = (), scales: Sequence[tuple[int, int]] = ()):
        """A primitive attribute with post-ops, or NULL: ``(alg, alpha, beta)`` is an eltwise
        post-op, ``(alg, md)`` a binary one whose second operand (``md``) is an argument of
        the primitive (``post_arg(index)``). ``scales``: (argument, mask) pairs, whose scale
        vectors are arguments ``ARG_ATTR_SCALES | argument`` of the primitive."""
        if not post and not scales:
            return self.ffi.NULL
        lib, ffi = self.lib, self.ffi
        pa = ffi.new("dnnl_primitive_attr_t *")
        self.check(lib.dnnl_primitive_attr_create(pa), "primitive_attr_create")
        attr = ffi.gc(pa[0], lib.dnnl_primitive_attr_destroy)
        for arg, mask in scales:
            self.check(
                lib.dnnl_primitive_attr_set_scales_mask(attr, arg, mask), "primitive_attr_set_scales_mask"
            )
        if not post:
            return attr
        po = ffi.new("dnnl_post_ops_t *")
        self.check(lib.dnnl_post_ops_create(po), "post_ops_create")
        ops = ffi.gc(po[0], lib.dnnl_post_ops_destroy)
        for item in post:
            if len(item) == 2:
                st = lib.dnnl_post_ops_append_binary(ops, getattr(lib, f"dnnl_binary_{item[0]}"), item[1].ptr)
                self.check(st, "post_ops_append_binary")
                continue
            alg, alpha, beta = item
            st = lib.dnnl_post_ops_append_eltwise(ops, getattr(lib, f"dnnl_eltwise_{alg}"), alpha, beta)
            self.check(st, "post_ops_append_eltwise")
        self.check(lib.dnnl_primitive_attr_set_post_ops(attr, ops), "primitive_attr_set_post_ops")
        return attr

    def _pd(self, fn: str, *args) -> PD:
        p = self.ffi.new("dnnl_primitive_desc_t *")
        self.check(getattr(self.lib, fn)(p, *args), fn)
        return PD(self, self.ffi.gc(p[0], self.lib.dnnl_primitive_desc_destroy))

    def convolution(self, src, weights, bias, dst, strides, dilates, pad_l, pad_r, post=(), scales=()) -> PD:
        lib = self.lib
        return self._pd(
            "dnnl_convolution_forward_primitive_desc_create", self.engine, lib.dnnl_forward_inference,
            lib.dnnl_convolution_direct, src.ptr, weights.ptr, bias.ptr if bias else self.ffi.NULL,
            dst.ptr, self.dims(strides), self.dims(dilates), self.dims(pad_l), self.dims(pad_r),
            self.attr(post, scales),
        )  # fmt: skip

    def deconvolution(self, src, weights, bias, dst, strides, dilates, pad_l, pad_r, post=()) -> PD:
        lib = self.lib
        return self._pd(
            "dnnl_deconvolution_forward_primitive_desc_create", self.engine, lib.dnnl_forward_inference,
            lib.dnnl_deconvolution_direct, src.ptr, weights.ptr, bias.ptr if bias else self.ffi.NULL,
            dst.ptr, self.dims(strides), self.dims(dilates), self.dims(pad_l), self.dims(pad_r),
            self.attr(post),
        )  # fmt: skip

    def inner_product(self, src, weights, bias, dst, post=(), scales=()) -> PD:
        return self._pd(
            "dnnl_inner_product_forward_primitive_desc_create", self.engine, self.lib.dnnl_forward_inference,
            src.ptr, weights.ptr, bias.ptr if bias else self.ffi.NULL, dst.ptr, self.attr(post, scales),
        )  # fmt: skip

    def matmul(self, src, weights, dst, user_scratchpad: bool = False) -> PD:
        """(Batched) src x weights, no bias or post-ops. ``user_scratchpad``: the primitive
        runs with a scratchpad its caller gives (argument ``ARG_SCRATCHPAD``), not one of its
        own that threads running it at once would share."""
        attr = self.ffi.NULL
        if user_scratchpad:
            pa = self.ffi.new("dnnl_primitive_attr_t *")
            self.check(self.lib.dnnl_primitive_attr_create(pa), "primitive_attr_create")
            attr = self.ffi.gc(pa[0], self.lib.dnnl_primitive_attr_destroy)
            st = self.lib.dnnl_primitive_attr_set_scratchpad_mode(attr, self.lib.dnnl_scratchpad_mode_user)
            self.check(st, "primitive_attr_set_scratchpad_mode")
        return self._pd(
            "dnnl_matmul_primitive_desc_create", self.engine, src.ptr, weights.ptr, self.ffi.NULL, dst.ptr,
            attr,
        )  # fmt: skip

    def bind(self, mem: Mem, address: int) -> None:
        """Point memory ``mem`` at ``address`` (a plan's arena, a Mat's data)."""
        st = self.lib.dnnl_memory_set_data_handle(mem.ptr, self.ffi.cast("void *", address))
        self.check(st, "memory_set_data_handle")

    def address(self, handle) -> int:
        """The address of a oneDNN handle (a primitive, a memory, a stream), for a context
        struct of ncnn_c's own C (``csteps``) that calls oneDNN itself."""
        return int(self.ffi.cast("uintptr_t", handle))

    def pooling(self, alg: str, src, dst, strides, kernel, pad_l, pad_r) -> PD:
        lib = self.lib
        return self._pd(
            "dnnl_pooling_forward_primitive_desc_create", self.engine, lib.dnnl_forward_inference,
            getattr(lib, f"dnnl_pooling_{alg}"), src.ptr, dst.ptr, self.dims(strides), self.dims(kernel),
            self.dims([0] * len(kernel)), self.dims(pad_l), self.dims(pad_r), self.ffi.NULL,
        )  # fmt: skip

    def eltwise(self, alg: str, src, dst, alpha: float = 0.0, beta: float = 0.0, post=()) -> PD:
        lib = self.lib
        return self._pd(
            "dnnl_eltwise_forward_primitive_desc_create", self.engine, lib.dnnl_forward_inference,
            getattr(lib, f"dnnl_eltwise_{alg}"), src.ptr, dst.ptr, alpha, beta, self.attr(post),
        )  # fmt: skip

    def binary(self, alg: str, src0, src1, dst, post=()) -> PD:
        return self._pd(
            "dnnl_binary_primitive_desc_create", self.engine, getattr(self.lib, f"dnnl_binary_{alg}"),
            src0.ptr, src1.ptr, dst.ptr, self.attr(post),
        )  # fmt: skip

    def shuffle(self, src, dst, axis: int, group_size: int) -> PD:
        return self._pd(
            "dnnl_shuffle_forward_primitive_desc_create", self.engine, self.lib.dnnl_forward_inference,
            src.ptr, dst.ptr, axis, group_size, self.ffi.NULL,
        )  # fmt: skip

    def resampling(self, alg: str, src, dst) -> PD:
        lib = self.lib
        return self._pd(
            "dnnl_resampling_forward_primitive_desc_create", self.engine, lib.dnnl_forward_inference,
            getattr(lib, f"dnnl_resampling_{alg}"), self.ffi.NULL, src.ptr, dst.ptr, self.ffi.NULL,
        )  # fmt: skip

    def lrn(self, alg: str, src, dst, local_size: int, alpha: float, beta: float, k: float) -> PD:
        lib = self.lib
        return self._pd(
            "dnnl_lrn_forward_primitive_desc_create", self.engine, lib.dnnl_forward_inference,
            getattr(lib, f"dnnl_lrn_{alg}"), src.ptr, dst.ptr, local_size, alpha, beta, k, self.ffi.NULL,
        )  # fmt: skip

    def reduction(self, alg: str, src, dst) -> PD:
        return self._pd(
            "dnnl_reduction_primitive_desc_create", self.engine, getattr(self.lib, f"dnnl_reduction_{alg}"),
            src.ptr, dst.ptr, 0.0, 0.0, self.ffi.NULL,
        )  # fmt: skip

    def prelu(self, src, weights, dst) -> PD:
        return self._pd(
            "dnnl_prelu_forward_primitive_desc_create", self.engine, self.lib.dnnl_forward_inference,
            src.ptr, weights.ptr, dst.ptr, self.ffi.NULL,
        )  # fmt: skip

    def concat(self, dst, axis: int, srcs) -> PD:
        arr = self.ffi.new("const_dnnl_memory_desc_t[]", [s.ptr for s in srcs])
        return self._pd(
            "dnnl_concat_primitive_desc_create", self.engine, dst.ptr, len(srcs), axis, arr, self.ffi.NULL
        )

    def sum(self, dst, scales: Sequence[float], srcs) -> PD:
        arr = self.ffi.new("const_dnnl_memory_desc_t[]", [s.ptr for s in srcs])
        sc = self.ffi.new("float[]", [float(v) for v in scales])
        return self._pd(
            "dnnl_sum_primitive_desc_create", self.engine, dst.ptr, len(srcs), sc, arr, self.ffi.NULL
        )

    def softmax(self, src, dst, axis: int) -> PD:
        lib = self.lib
        return self._pd(
            "dnnl_softmax_forward_primitive_desc_create", self.engine, lib.dnnl_forward_inference,
            lib.dnnl_softmax_accurate, src.ptr, dst.ptr, axis, self.ffi.NULL,
        )  # fmt: skip

    def reorder(self, src, dst) -> PD:
        p = self.ffi.new("dnnl_primitive_desc_t *")
        st = self.lib.dnnl_reorder_primitive_desc_create(
            p, src.ptr, self.engine, dst.ptr, self.engine, self.ffi.NULL
        )
        self.check(st, "reorder_primitive_desc_create")
        return PD(self, self.ffi.gc(p[0], self.lib.dnnl_primitive_desc_destroy))


class MD:
    """An owned memory descriptor and its logical dims."""

    __slots__ = ("dnnl", "ptr", "dims")

    def __init__(self, dnnl: Dnnl, ptr, dims: tuple[int, ...]) -> None:
        self.dnnl = dnnl
        self.ptr = dnnl.ffi.gc(ptr, dnnl.lib.dnnl_memory_desc_destroy)
        self.dims = dims

    @property
    def size(self) -> int:
        return int(self.dnnl.lib.dnnl_memory_desc_get_size(self.ptr))

    def __eq__(self, other) -> bool:
        return isinstance(other, MD) and bool(self.dnnl.lib.dnnl_memory_desc_equal(self.ptr, other.ptr))

    __hash__ = None  # type: ignore[assignment]

    def sub(self, dims: Sequence[int], offsets: Sequence[int]) -> MD:
        """The part of this descriptor's memory at ``offsets`` of size ``dims`` (same buffer)."""
        d = self.dnnl
        p = d.ffi.new("dnnl_memory_desc_t *")
        st = d.lib.dnnl_memory_desc_create_submemory(p, self.ptr, d.dims(dims), d.dims(offsets))
        d.check(st, "memory_desc_create_submemory")
        return MD(d, p[0], tuple(dims))

    def reshaped(self, dims: Sequence[int]) -> MD:
        d = self.dnnl
        p = d.ffi.new("dnnl_memory_desc_t *")
        d.check(d.lib.dnnl_memory_desc_reshape(p, self.ptr, len(dims), d.dims(dims)), "memory_desc_reshape")
        return MD(d, p[0], tuple(dims))


class Mem:
    """A oneDNN memory (its descriptor kept alive with it)."""

    __slots__ = ("ptr", "md")

    def __init__(self, ptr, md: MD) -> None:
        self.ptr = ptr
        self.md = md


class PD:
    """A primitive descriptor: what oneDNN chose, and the primitive made from it."""

    def __init__(self, dnnl: Dnnl, ptr) -> None:
        self.dnnl = dnnl
        self.ptr = ptr

    def md(self, what: str, dims: Sequence[int], index: int = 0) -> MD:
        lib = self.dnnl.lib
        return self.dnnl.own(
            lib.dnnl_primitive_desc_query_md(self.ptr, getattr(lib, f"dnnl_query_{what}_md"), index), dims
        )

    @property
    def impl(self) -> str:
        d = self.dnnl
        out = d.ffi.new("const char **")
        d.check(
            d.lib.dnnl_primitive_desc_query(self.ptr, d.lib.dnnl_query_impl_info_str, 0, out), "query impl"
        )
        return d.ffi.string(out[0]).decode()

    def primitive(self):
        d = self.dnnl
        p = d.ffi.new("dnnl_primitive_t *")
        d.check(d.lib.dnnl_primitive_create(p, self.ptr), "primitive_create")
        return d.ffi.gc(p[0], d.lib.dnnl_primitive_destroy)


class Kernel:
    """A step of ncnn_c's own C in place of a primitive: ``fn`` (the address of a
    ``ncnnc_kernel``, from another cffi module) called with ``ctx`` (an address; ``keep``
    holds what it points to) and its argument memories' data pointers, in order."""

    __slots__ = ("fn", "ctx", "keep")

    def __init__(self, fn: int, ctx: int, keep) -> None:
        self.fn, self.ctx, self.keep = fn, ctx, keep


class Steps:
    """Primitives (or Kernels) with their arguments, as the C executor reads them; built once
    per plan."""

    def __init__(self, dnnl: Dnnl) -> None:
        self.dnnl = dnnl
        self._items: list[tuple] = []  # (primitive, [(arg, Mem)], OpenMP threads or 0)
        self._keep: list = []
        self.array = None
        self.count = 0

    def add(self, prim, args: Sequence[tuple[int, Mem]], threads: int = 0) -> None:
        """``threads``: the OpenMP count the step runs with (0: the run's); a primitive must
        have been created under that count."""
        self._items.append((prim, list(args), int(threads)))

    @property
    def threads(self) -> list[int]:
        return [t for _, _, t in self._items]

    def __len__(self) -> int:
        return len(self._items)

    def seal(self) -> None:
        ffi = self.dnnl.ffi
        arr = ffi.new("ncnnc_step[]", max(1, len(self._items)))
        keep = []
        for i, (prim, args, threads) in enumerate(self._items):
            a = ffi.new("dnnl_exec_arg_t[]", max(1, len(args)))
            for j, (arg, mem) in enumerate(args):
                a[j].arg = arg
                a[j].memory = mem.ptr
            if isinstance(prim, Kernel):
                arr[i].prim = ffi.NULL
                arr[i].kernel = ffi.cast("ncnnc_kernel", prim.fn)
                arr[i].ctx = ffi.cast("void *", prim.ctx)
            else:
                arr[i].prim = prim
            arr[i].nargs = len(args)
            arr[i].args = a
            arr[i].threads = threads
            keep.append((prim, a, args))
        self.array, self._keep, self.count = arr, keep, len(self._items)


class Runner:
    """Runs sealed steps with a stream of its own (one plan runs on one thread at a time)."""

    def __init__(self, dnnl: Dnnl) -> None:
        self.dnnl = dnnl
        ffi, lib = dnnl.ffi, dnnl.lib
        p = ffi.new("dnnl_stream_t *")
        dnnl.check(lib.dnnl_stream_create(p, dnnl.engine, lib.dnnl_stream_default_flags), "stream_create")
        self.stream = ffi.gc(p[0], lib.dnnl_stream_destroy)

    def run(
        self, steps: Steps, num_threads: int, binds: Sequence[tuple[Mem, int]], seconds: list | None = None
    ) -> None:
        """Run ``steps``; ``seconds`` (a list) gets each step's wall time appended."""
        ffi, lib = self.dnnl.ffi, self.dnnl.lib
        mems = ffi.new("dnnl_memory_t[]", [m.ptr for m, _ in binds] or 1)
        ptrs = ffi.new("void *[]", [ffi.cast("void *", a) for _, a in binds] or 1)
        args = (self.stream, steps.array, steps.count, int(num_threads), mems, ptrs, len(binds))
        if seconds is None:
            ret = lib.ncnnc_plan_run(*args)
        else:
            times = ffi.new("double[]", max(1, steps.count))
            ret = lib.ncnnc_plan_run_timed(*args, times)
            seconds += list(times)[: steps.count]
        if ret != 0:
            raise DnnlError(
                f"native plan: {'binding' if ret > -1000 else 'step'} {abs(ret) % 1000} failed ({ret})"
            )


ARG_SRC, ARG_SRC_1, ARG_DST, ARG_WEIGHTS, ARG_BIAS, ARG_MULTIPLE_SRC = 1, 2, 17, 33, 41, 1024
ARG_ATTR_SCALES = 4096


def post_arg(index: int) -> int:
    """The argument of the second operand of binary post-op ``index`` (its place in the
    post-op list): DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1."""
    return 32768 * (index + 1) | ARG_SRC_1


_dnnl: Dnnl | None = None


def get() -> Dnnl | None:
    """The process's Dnnl, or None when oneDNN or the extension cannot be loaded."""
    global _dnnl
    if _dnnl is None:
        mod = onednn.get()
        if mod is None:
            return None
        _dnnl = Dnnl(mod)
    return _dnnl
