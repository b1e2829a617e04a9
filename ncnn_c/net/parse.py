"""Param files into a Graph: the text .param and the binary .param.bin formats.

Parsers never trust a count: every size is checked against the file before anything is
allocated, and every rejection is a ``ModelFormatError`` naming the line or layer. The
Net (``net``) supplies type resolution and layer creation (built-in, Vulkan, custom).

Limits. ncnn has none that bites, but each layer here is a few Python objects (about 1.1 KB
and 8 us to load, see docs/decisions.md), so a header may announce at most
``DEFAULT_MAX_LAYERS`` = 100,000 layers (the largest real networks have a few thousand) and
4 times that many blobs. The environment variable ``NCNN_C_MAX_LAYERS`` sets another layer
cap (the blob cap follows it), read at each load. Independently, a header count the file
cannot possibly hold (more layers than layer lines, more blobs than a text file has names or
a binary file has bytes for) fails at once, before any layer is made. A text param is at
most ``MAX_PARAM_TEXT`` (64 MiB).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import os
import re
from collections.abc import Iterator

import numpy as np

from ..datareader import DataReader, DataReaderFromMemory, DataReaderFromStdio, open_regular_file
from ..errors import ModelFormatError
from ..layer import CUSTOM_BIT, LAYER_TYPES, Layer
from ..mat import Mat
from ..paramdict import ParamDict
from .graph import PARAM_MAGIC, Blob, Graph, call_hook

log = logging.getLogger("ncnn_c")

MAX_PARAM_TEXT = 64 << 20
DEFAULT_MAX_LAYERS = 100_000
BLOBS_PER_LAYER_CAP = 4  # the blob cap is this many times the layer cap
# the fewest bytes a binary layer takes (type, bottom count, top count, the -233 terminator)
# and a blob (its producer's top index)
_MIN_BIN_LAYER, _MIN_BIN_BLOB = 16, 4
_MAX_HINT_ELEMENTS = 1 << 26

_NO_HINTS = Mat()  # get()'s default only, never handed out: no new Mat per layer

_TOKEN = re.compile(r'[^\s"]*"[^"]*"\S*|\S+')


def open_reader(src, what: str):
    """(reader, file_to_close) for a path, a file object or a DataReader."""
    if isinstance(src, DataReader):
        return src, None
    if isinstance(src, (str, os.PathLike)):
        fp = open_regular_file(src)  # a FIFO, device or directory is refused, never waited on
        return DataReaderFromStdio(fp), fp
    if isinstance(src, (bytes, bytearray, memoryview)):
        return DataReaderFromMemory(src), None
    if hasattr(src, "read"):
        return DataReaderFromStdio(src), None
    raise ModelFormatError(f"{what}: cannot read from a {type(src).__name__}")


def load_limits() -> tuple[int, int]:
    """(layer cap, blob cap) for a param header: ``NCNN_C_MAX_LAYERS`` or DEFAULT_MAX_LAYERS."""
    cap = DEFAULT_MAX_LAYERS
    env = os.environ.get("NCNN_C_MAX_LAYERS", "").strip()
    if env:
        try:
            cap = int(env)
            if cap < 1:
                raise ValueError
        except ValueError:
            log.warning("NCNN_C_MAX_LAYERS=%r is not a positive integer: using %d", env, DEFAULT_MAX_LAYERS)
            cap = DEFAULT_MAX_LAYERS
    return cap, BLOBS_PER_LAYER_CAP * cap


def check_counts(layer_count: int, blob_count: int) -> None:
    """Reject header counts that are not positive or over the caps (see the module docstring)."""
    if layer_count <= 0 or blob_count <= 0:
        raise ModelFormatError(f"absurd layer count {layer_count} / blob count {blob_count}")
    max_layers, max_blobs = load_limits()
    if layer_count > max_layers:
        raise ModelFormatError(
            f"layer count {layer_count} is over the limit of {max_layers} layers (NCNN_C_MAX_LAYERS raises it)"
        )
    if blob_count > max_blobs:
        raise ModelFormatError(
            f"blob count {blob_count} is over the limit of {max_blobs} blobs "
            f"({BLOBS_PER_LAYER_CAP} x NCNN_C_MAX_LAYERS={max_layers})"
        )


@contextlib.contextmanager
def gc_paused():
    """The cyclic collector off while a graph is built: a load makes several objects per layer
    and no cycles, and the collector's passes over the growing graph were half the time of a
    100,000-layer load (1.9 s -> 1.0 s). Turned back on only if it was on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_BINARY_MAGIC = PARAM_MAGIC.to_bytes(4, "little")
_TEXT_MAGIC = str(PARAM_MAGIC).encode()


def _not_text_hint(raw: bytes, size: int | None) -> str:
    """What a file that is no text .param probably is: a .param.bin, or the weights."""
    if raw == _BINARY_MAGIC[:3] and (size is None or size > 4):  # read_text stops at its NUL
        return ": it is a binary .param.bin: load it with load_param_bin"
    binary = (not raw and bool(size)) or any(b < 9 or 13 < b < 32 for b in raw[:256])
    if binary or raw[:256].decode("utf-8", errors="replace").count("\ufffd") > 2:
        return ": it looks like binary data, a .bin: are the .param and the .bin swapped?"
    return ""


def parse_text(dr, graph: Graph, net) -> None:
    """Fill ``graph`` from a text .param; ``net`` resolves type names and creates layers."""
    size = dr.remaining_bytes()
    raw = dr.read_text(MAX_PARAM_TEXT)
    if raw is None:
        raise ModelFormatError(f"param text larger than {MAX_PARAM_TEXT} bytes")
    if not raw.lstrip().startswith(_TEXT_MAGIC):
        hint = _not_text_hint(raw, size)
        if hint:
            raise ModelFormatError(f"not a text .param{hint}")
    text = raw.decode("utf-8", errors="replace")
    del raw
    # plain strings, numbered on the fly: a (number, line) pair per line cost ~90 B a layer
    lines = text.splitlines()
    chars = len(text)
    del text
    header = _numbered(lines, 0)
    magic_no, first = next(header, (0, ""))
    if not magic_no:
        raise ModelFormatError("empty param")
    head = first.split()
    if len(head) != 1 or head[0] != str(PARAM_MAGIC):
        raise ModelFormatError(f"line {magic_no}: bad magic {first.strip()[:40]!r}, expected {PARAM_MAGIC}")
    lineno, second = next(header, (0, ""))
    if not lineno:
        raise ModelFormatError(f"line {magic_no}: missing the layer count / blob count line")
    counts = second.split()
    try:
        if len(counts) != 2:
            raise ValueError
        layer_count, blob_count = int(counts[0]), int(counts[1])
    except ValueError:
        raise ModelFormatError(
            f"line {lineno}: expected '<layer count> <blob count>', got {second.strip()[:60]!r}"
        ) from None
    try:
        check_counts(layer_count, blob_count)
    except ModelFormatError as e:
        raise ModelFormatError(f"line {lineno}: {e}") from None
    body_lines = sum(1 for _ in _numbered(lines, lineno))
    if body_lines < layer_count:
        last = max((n for n, _ in _numbered(lines, lineno)), default=lineno)
        raise ModelFormatError(
            f"line {last}: layer count is {layer_count} but the file has only {body_lines} layer lines"
        )
    if 2 * blob_count > chars:
        # every blob is the top name of a layer line: one character and a separator at least
        raise ModelFormatError(
            f"line {lineno}: blob count {blob_count} is more than a {chars}-character file can name"
        )
    if body_lines > layer_count:
        # ncnn reads exactly layer_count lines; real files (nanodet_m) carry an extra one
        extra_no, _ = next(itertools.islice(_numbered(lines, lineno), layer_count, None))
        log.warning(
            "load_param: line %d: ignoring %d line(s) after the %d layers the header announces",
            extra_no, body_lines - layer_count, layer_count,
        )  # fmt: skip
    _text_layers(itertools.islice(_numbered(lines, lineno), layer_count), graph, net, blob_count)


def _numbered(lines: list[str], after: int) -> Iterator[tuple[int, str]]:
    """(line number, line) of the non-blank lines after line number ``after``."""
    for n in range(after, len(lines)):
        line = lines[n]
        if line and not line.isspace():
            yield n + 1, line


def _text_layers(body: Iterator[tuple[int, str]], graph: Graph, net, blob_count: int) -> None:
    for lineno, line in body:
        toks = _TOKEN.findall(line)
        if len(toks) < 4:
            raise ModelFormatError(f"line {lineno}: expected '<type> <name> <bottom count> <top count> ...'")
        type_name, name = toks[0], toks[1]
        try:
            nb, nt = int(toks[2]), int(toks[3])
        except ValueError:
            raise ModelFormatError(
                f"line {lineno}: layer {name}: bad blob counts {toks[2]!r} {toks[3]!r}"
            ) from None
        if nb < 0 or nt < 0 or 4 + nb + nt > len(toks):
            raise ModelFormatError(
                f"line {lineno}: layer {name}: {nb} bottoms + {nt} tops but only {len(toks) - 4} names"
            )
        bottom_names = toks[4 : 4 + nb]
        top_names = toks[4 + nb : 4 + nb + nt]
        pd = ParamDict()
        try:
            pd.load_text_tokens(toks[4 + nb + nt :])
        except ModelFormatError as e:
            raise ModelFormatError(f"line {lineno}: layer {name}: {e}") from None
        where = f"line {lineno}: layer {name}"
        bottoms = []
        for bname in bottom_names:
            bi = graph.by_name.get(bname)
            if bi is None:
                raise ModelFormatError(f"{where}: bottom blob {bname!r} is not produced by an earlier layer")
            bottoms.append(bi)
        tops = []
        for tname in top_names:
            if tname in graph.by_name:
                raise ModelFormatError(f"{where}: duplicate blob name {tname!r}")
            if len(graph.blobs) >= blob_count:
                raise ModelFormatError(f"{where}: more blobs than the blob count {blob_count}")
            bi = len(graph.blobs)  # one int object for the dict and the layer (28 B a blob)
            graph.by_name[tname] = bi
            tops.append(bi)
            graph.blobs.append(Blob(tname))
        typeindex = net._resolve_type(type_name)
        if typeindex < 0:
            raise ModelFormatError(f"{where}: unknown layer type {type_name!r}")
        add_layer(net, graph, where, typeindex, type_name, name, bottoms, tops, pd)
    if len(graph.blobs) != blob_count:
        raise ModelFormatError(f"blob count is {blob_count} but the layers define {len(graph.blobs)} blobs")


def parse_binary(dr, graph: Graph, net) -> None:
    """Fill ``graph`` from a binary .param.bin (type indexes instead of names)."""

    def read_int(what: str) -> int:
        data = dr.read_bytes(4)
        if len(data) != 4:
            raise ModelFormatError(f"truncated while reading {what}")
        return int.from_bytes(data, "little", signed=True)

    magic = read_int("magic")
    if magic != PARAM_MAGIC:
        head = magic.to_bytes(4, "little", signed=True)
        hint = (
            ": this is a text .param: load it with load_param"
            if head == _TEXT_MAGIC[:4]
            else ": is it the .bin (weights)? are the .param.bin and the .bin swapped?"
        )
        raise ModelFormatError(f"bad magic {magic}, expected {PARAM_MAGIC}{hint}")
    layer_count = read_int("layer count")
    blob_count = read_int("blob count")
    check_counts(layer_count, blob_count)
    left = dr.remaining_bytes()
    need = _MIN_BIN_LAYER * layer_count + _MIN_BIN_BLOB * blob_count
    if left is not None and need > left:
        raise ModelFormatError(
            f"layer count {layer_count} / blob count {blob_count} need at least {need} bytes "
            f"but only {left} follow the header"
        )
    produced: dict[int, Blob] = {}
    for i in range(layer_count):
        where = f"layer #{i}"
        typeindex = read_int(f"{where} type")
        nb = read_int(f"{where} bottom count")
        nt = read_int(f"{where} top count")
        if not 0 <= nb <= blob_count or not 0 <= nt <= blob_count:
            raise ModelFormatError(f"{where}: absurd bottom/top count {nb}/{nt}")
        bottoms = [read_int(f"{where} bottom index") for _ in range(nb)]
        tops = [read_int(f"{where} top index") for _ in range(nt)]
        for b in bottoms:
            if not 0 <= b < blob_count:
                raise ModelFormatError(f"{where}: bottom blob index {b} out of range 0..{blob_count - 1}")
            if b not in produced:
                raise ModelFormatError(f"{where}: bottom blob {b} is not produced by an earlier layer")
        for t in tops:
            if not 0 <= t < blob_count:
                raise ModelFormatError(f"{where}: top blob index {t} out of range 0..{blob_count - 1}")
            if t in produced:
                raise ModelFormatError(f"{where}: blob {t} produced twice")
            produced[t] = Blob("")
        pd = ParamDict()
        try:
            pd.load_binary(dr)
        except ModelFormatError as e:
            raise ModelFormatError(f"{where}: {e}") from None
        if typeindex < 0 or (not typeindex & CUSTOM_BIT and typeindex >= len(LAYER_TYPES)):
            raise ModelFormatError(f"{where}: unknown layer type index {typeindex}")
        type_name = LAYER_TYPES[typeindex] if not typeindex & CUSTOM_BIT else ""
        add_layer(net, graph, where, typeindex, type_name, "", bottoms, tops, pd, produced)
    if len(produced) != blob_count:
        raise ModelFormatError(f"blob count is {blob_count} but the layers define {len(produced)} blobs")
    graph.blobs = [produced[i] for i in range(blob_count)]


def add_layer(net, graph, where, typeindex, type_name, name, bottoms, tops, pd, blob_map=None) -> None:
    blobs = blob_map if blob_map is not None else graph.blobs
    featmask = pd.get(31, 0)
    layer, entry = net._create_layer(typeindex, featmask)
    if layer is None:
        shown = type_name or f"index {typeindex}"
        raise ModelFormatError(f"{where}: layer type {shown} is not registered or not implemented")
    if not isinstance(layer, Layer):
        raise ModelFormatError(f"{where}: creator returned {type(layer).__name__}, not a Layer")
    li = len(graph.layers)
    layer.typeindex = typeindex
    if entry is not None:
        layer.type = entry.name or type_name
    elif type_name:
        layer.type = LAYER_TYPES[typeindex]  # a built-in: the one shared name, not this line's copy
    layer.name = name
    layer.bottoms = list(bottoms)
    layer.tops = list(tops)
    layer.featmask = featmask
    for t in tops:
        blobs[t].producer = li
    for b in bottoms:
        blobs[b].consumer = li
    graph.layers.append(layer)
    graph.entries.append(entry)
    apply_shape_hints(where, pd, layer, blobs)
    ret = call_hook(layer.load_param, pd)
    if ret != 0:
        raise ModelFormatError(f"{where}: {layer.type}.load_param failed ({ret})")


def apply_shape_hints(where, pd, layer, blobs) -> None:
    hints = pd.get(30, _NO_HINTS)
    if not hints.empty():
        ints = np.asarray(hints).reshape(-1).view(np.int32)
        for j, t in enumerate(layer.tops):
            rec = ints[4 * j : 4 * j + 4]
            if len(rec) < 4:
                break
            dims, w, h, c = (int(x) for x in rec)
            if dims not in (1, 2, 3) or min(w, h, c) < 1 or w * h * c > _MAX_HINT_ELEMENTS:
                log.warning("%s: ignoring shape hint %s for top #%d", where, (dims, w, h, c), j)
                continue
            blobs[t].shape = Mat(*(w, h, c)[:dims])
    layer.bottom_shapes = [blobs[b].shape for b in layer.bottoms]
    layer.top_shapes = [blobs[t].shape for t in layer.tops]
