"""Shared plumbing of the data-movement layers on the GPU (Crop, Slice, Permute, Reshape and
its relatives, ShuffleChannel, Reorg, Padding, Interp).

Each of their shaders runs one invocation per packed output element over a (w, h*d, c)
grid (a 1-D output is laid over x and y) and reads the input values that element takes.
A blob of any rank is described to the shader by five ints (``blob_desc``): the strides of
its x, y, z and c coordinates in packed elements and which coordinate is packed. The
elempacks of the two sides are specialization constants: a layer holds one pipeline per
(in, out) packing pair (all four only when use_packing_layout is on), so lane arithmetic
compiles to shifts, and when both sides are packed and a packed element's lanes stay
together the shader moves whole packed elements. Every layer is one dispatch (Slice: one
per part).
"""

from __future__ import annotations

import logging
import math

from . import LOCAL_2D, elemsize_for, is_fp16, shape4

log = logging.getLogger("ncnn_c")

# grid row width for 1-D outputs, a multiple of LOCAL_2D's x
ROW = 64
PAIRS = ((1, 1), (1, 4), (4, 1), (4, 4))


def blob_desc(m) -> list[int]:
    """(stride_x, stride_y, stride_z, stride_c, packed coordinate) of ``m``."""
    if m.dims == 1:
        return [1, 0, 0, 0, 0]
    if m.dims == 2:
        return [1, m.w, 0, 0, 1]
    return [1, m.w, m.w * m.h, m.cstep, 3]


def new_remap_pipelines(layer, shader: str, opt, specs=()) -> dict | None:
    """``layer``'s pipelines of ``shader``, keyed by (in elempack, out elempack); None when
    one cannot be created (logged by new_pipeline)."""
    pairs = PAIRS if getattr(opt, "use_packing_layout", False) else PAIRS[:1]
    pipelines = {}
    tops = range(max(1, len(getattr(layer, "tops", ()))))
    for pair in pairs:
        # a pair the shape hints rule out is built at its first dispatch, if ever
        needed = layer.may_see_elempack(pair[0], opt) and any(
            layer.may_see_elempack(pair[1], opt, "top", i) for i in tops
        )
        pipeline = layer.new_pipeline(shader, opt, [*pair, *specs], LOCAL_2D, needed=needed)
        if pipeline is None:
            return None
        pipelines[pair] = pipeline
    return pipelines


def out_elempack(shape, opt) -> int:
    """ncnn's choice for a new blob of numpy ``shape``: 4 when packing is on and the outer
    axis (w, h or c by rank: numpy axis 0 in every case) divides by 4."""
    return 4 if getattr(opt, "use_packing_layout", False) and shape[0] % 4 == 0 else 1


def create_top(top, shape, bottom, opt) -> int:
    """Create ``top`` with numpy-order ``shape``, the bottom's lane type and ncnn's elempack
    for that shape; 0, or -100 when allocation failed."""
    pack = out_elempack(shape, opt)
    packed = (shape[0] // pack, *shape[1:])
    top.create(
        *packed[::-1],
        elemsize=elemsize_for(pack, is_fp16(bottom)),
        elempack=pack,
        allocator=opt.blob_vkallocator,
    )
    return -100 if top.empty() else 0


def logical_extents(m) -> list[int]:
    """(w, h, d, c) of ``m`` counted in scalars (the packed axis unpacked), absent axes 1."""
    w, h, d, c, _ = shape4(m)
    p = m.elempack
    if m.dims == 1:
        w *= p
    elif m.dims == 2:
        h *= p
    else:
        c *= p
    return [w, h, d, c]


def record_remap(layer, cmd, pipelines, bindings, bottom, top, extra) -> int:
    """Dispatch ``layer``'s remap pipeline for this packing pair over every packed element
    of ``top`` (bindings: bottom, top, then any others); push constants are the two blob
    descriptions, the top's extents in packed elements and the 1-D row width, then
    ``extra``. -1 (logged) when the pair has no pipeline (packing off yet a packed blob)."""
    pipeline = pipelines.get((bottom.elempack, top.elempack))
    if pipeline is None:
        log.error(
            "%s %r: no pipeline for elempack %d -> %d", layer.type, layer.name, bottom.elempack, top.elempack
        )
        return -1
    w, h, d, c, _ = shape4(top)
    row = ROW if top.dims == 1 else 0
    grid = (ROW, -(-w // ROW), 1) if row else (w, h * d, c)
    constants = blob_desc(bottom) + blob_desc(top) + [w, h, d, c, row] + list(extra)
    cmd.record_pipeline(pipeline, bindings, constants, grid)
    return 0


def logical_shape(m) -> tuple[int, ...]:
    """``m``'s numpy-order shape counted in scalars (the packed axis unpacked)."""
    w, h, d, c = logical_extents(m)
    return {1: (w,), 2: (h, w), 3: (c, h, w), 4: (c, d, h, w)}[m.dims]


class LogicalDims:
    """w, h, d, c and dims of a blob counted in scalars, for CPU helpers that read a
    reference blob's sizes."""

    def __init__(self, m) -> None:
        self.dims = m.dims
        self.w, self.h, self.d, self.c = logical_extents(m)


# numpy axis -> shader coordinate (0 x, 1 y, 2 z, 3 c), per rank
COORD = {1: (0,), 2: (1, 0), 3: (3, 1, 0), 4: (3, 2, 1, 0)}
IDENTITY = [0, 1, 2, 3]


def box_constants(bottom, top, offsets, perm=IDENTITY) -> list[int]:
    """crop.comp's perm, offset and whole constants for numpy-order ``offsets``: whole
    packed elements move when the bottom's packed coordinate comes from the top's and its
    offset keeps lanes aligned."""
    off = [0, 0, 0, 0]
    for axis, o in enumerate(offsets):
        off[COORD[bottom.dims][axis]] = o
    in_axis, out_axis = blob_desc(bottom)[4], blob_desc(top)[4]
    whole = int(perm[in_axis] == out_axis and off[in_axis] % 4 == 0)
    return list(perm) + off + [whole]


def record_reshape(layer, cmd, pipelines, bottom, top, shape, opt) -> int:
    """``top`` = ``bottom``'s scalars in numpy-order ``shape`` (reshape.comp); an unchanged
    shape aliases the bottom; a shape of another size is logged and refused."""
    if math.prod(shape) != math.prod(logical_shape(bottom)):
        log.error(
            "%s %r: cannot reshape %s to %s", layer.type, layer.name, logical_shape(bottom), tuple(shape)
        )
        return -1
    if tuple(shape) == logical_shape(bottom):
        top.share_from(bottom)
        return 0
    ret = create_top(top, tuple(shape), bottom, opt)
    if ret:
        return ret
    ow, oh, od, _ = logical_extents(top)
    iw, ih, idd, _ = logical_extents(bottom)
    # channels packed on both sides over planes of one size: lanes move together
    whole = int(bottom.dims >= 3 and top.dims >= 3 and ow * oh * od == iw * ih * idd)
    return record_remap(layer, cmd, pipelines, [bottom, top], bottom, top, [ow, oh, od, iw, ih, idd, whole])
