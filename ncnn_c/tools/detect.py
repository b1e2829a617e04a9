"""``python -m ncnn_c detect``: NanoDet-m object detection on images, boxes drawn into PNGs.

    python -m ncnn_c detect IMAGE_OR_FOLDER [--out DIR] [--threads N] [--gpu]
                            [--models DIR] [--repeat N]

Each image (PNG, JPEG, PPM, anything Pillow reads; a folder: every such file in it) is
letterboxed as ncnn's ``examples/nanodet.cpp`` does: its longer side resized to 320, its
aspect kept, then padded with zeros to the next multiple of 32 on each side. NanoDet-m's
three heads (strides 8, 16, 32) each give a class-score map and a box-distribution map;
cells whose best COCO class scores 0.4 or more become boxes (a softmax over each side's
``reg_max + 1`` bins, their integral times the stride), per-class NMS at IoU 0.5 keeps the
best, and the boxes are mapped back onto the original image. The picture with its boxes
and labels goes to ``DIR/<name>-<ext>.png`` (``--out``, default ``./detections``), the
latency and the detections to stdout.

The steps are functions of their own (``letterbox``, ``proposals``, ``nms``, ``decode``,
``detect``) over any callable that runs the network, so the same pre- and post-processing
can drive another runtime: tests/test_detect.py runs it with the PyPI ncnn.

Exit codes: 0 done, 1 a model or an image failed to load or to run, 2 usage error.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .run import Failure, _load_image, _vulkan_device

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

MODEL = "nanodet_m"
INPUT = "input.1"
# (stride, class-score blob, box-distribution blob) of nanodet_m.param's three heads
HEADS = ((8, "792", "795"), (16, "814", "817"), (32, "836", "839"))
MEAN = (103.53, 116.28, 123.675)  # BGR, as the model was trained
NORM = (0.017429, 0.017507, 0.017125)
TARGET_SIZE = 320
PROB_THRESHOLD = 0.4
NMS_THRESHOLD = 0.5
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".ppm", ".pgm", ".pnm", ".bmp")

COCO_NAMES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant",
    "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
    "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip

HeadRunner = Callable[[np.ndarray], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Letterbox:
    """Where the image sits in the network's input: ``image_w x image_h`` resized by ``scale``
    to ``w x h``, then ``left``/``top`` (of ``wpad``/``hpad`` in all) zero columns/rows added
    to make ``padded_w x padded_h``, both multiples of 32."""

    image_w: int
    image_h: int
    scale: float
    w: int
    h: int
    wpad: int
    hpad: int

    @property
    def left(self) -> int:
        return self.wpad // 2

    @property
    def top(self) -> int:
        return self.hpad // 2

    @property
    def padded_w(self) -> int:
        return self.w + self.wpad

    @property
    def padded_h(self) -> int:
        return self.h + self.hpad


@dataclass(frozen=True)
class Detection:
    """One object: COCO class index ``label``, its ``score``, the box ``x0, y0, x1, y1`` in
    the original image's pixels."""

    label: int
    score: float
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def name(self) -> str:
        return COCO_NAMES[self.label]

    def __str__(self) -> str:
        return f"{self.name:<14} {self.score:.3f}  x {self.x0:6.1f}..{self.x1:6.1f}  y {self.y0:6.1f}..{self.y1:6.1f}"


def letterbox_geometry(width: int, height: int, target_size: int = TARGET_SIZE) -> Letterbox:
    """The longer side to ``target_size``, the shorter one scaled alike and truncated, each
    padded to a multiple of 32 (float32 arithmetic, as the C++ example, so sizes agree)."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image size {width}x{height}")
    t = np.float32(target_size)
    if width > height:
        scale = t / np.float32(width)
        w, h = target_size, int(np.float32(height) * scale)
    else:
        scale = t / np.float32(height)
        w, h = int(np.float32(width) * scale), target_size
    w, h = max(w, 1), max(h, 1)
    return Letterbox(width, height, float(scale), w, h, -w % 32, -h % 32)


def letterbox(bgr: np.ndarray, target_size: int = TARGET_SIZE) -> tuple[np.ndarray, Letterbox]:
    """The network input of a packed BGR uint8 image (h, w, 3): a (3, H, W) float32 array,
    resized (bilinear, ``Mat.from_pixels_resize``), zero-padded, then mean and norm applied
    (so the padding holds ``-mean * norm``, as in ncnn's example)."""
    from ncnn_c import BorderType, Mat, copy_make_border

    img_h, img_w = bgr.shape[:2]
    box = letterbox_geometry(img_w, img_h, target_size)
    mat = Mat.from_pixels_resize(
        np.ascontiguousarray(bgr), Mat.PixelType.PIXEL_BGR, img_w, img_h, box.w, box.h
    )
    padded = copy_make_border(
        mat, box.top, box.hpad - box.top, box.left, box.wpad - box.left, BorderType.BORDER_CONSTANT, 0.0
    )
    if padded is None or padded.empty():
        raise Failure(f"letterbox of a {img_w}x{img_h} image failed (see the message above)")
    padded.substract_mean_normalize(list(MEAN), list(NORM))
    return np.array(padded, dtype=np.float32), box


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def proposals(
    cls_pred: np.ndarray,
    dis_pred: np.ndarray,
    stride: int,
    grid_w: int,
    prob_threshold: float = PROB_THRESHOLD,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One head's candidate boxes in the input's pixels: (boxes, scores, labels), the boxes
    (n, 4) as x0, y0, x1, y1.

    ``cls_pred`` is (cells, classes), ``dis_pred`` (cells, 4 * bins): the cells run row by
    row over the padded input at ``stride``, ``grid_w`` of them a row. A cell whose best
    class reaches ``prob_threshold`` is a box around its centre; each side's distance is the
    expectation of its bins (softmax) times the stride."""
    scores = cls_pred.max(axis=1)
    keep = np.flatnonzero(scores >= prob_threshold)
    bins = dis_pred.shape[1] // 4
    dist = _softmax(dis_pred[keep].reshape(-1, 4, bins).astype(np.float32), axis=2)
    ltrb = (dist * np.arange(bins, dtype=np.float32)).sum(axis=2) * np.float32(stride)
    cx = ((keep % grid_w) + 0.5).astype(np.float32) * stride
    cy = ((keep // grid_w) + 0.5).astype(np.float32) * stride
    boxes = np.stack([cx - ltrb[:, 0], cy - ltrb[:, 1], cx + ltrb[:, 2], cy + ltrb[:, 3]], axis=1)
    return boxes.reshape(-1, 4), scores[keep], cls_pred[keep].argmax(axis=1)


def nms(
    boxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, threshold: float = NMS_THRESHOLD
) -> list[int]:
    """Indexes of the boxes kept, best score first: a box goes when it overlaps a kept box of
    its own class by an IoU above ``threshold``."""
    order = np.argsort(-scores, kind="stable")
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    picked: list[int] = []
    for i in order:
        if picked:
            p = np.array(picked)
            iw = np.minimum(boxes[p, 2], boxes[i, 2]) - np.maximum(boxes[p, 0], boxes[i, 0])
            ih = np.minimum(boxes[p, 3], boxes[i, 3]) - np.maximum(boxes[p, 1], boxes[i, 1])
            inter = np.maximum(iw, 0) * np.maximum(ih, 0)
            iou = inter / (areas[i] + areas[p] - inter)
            if np.any((labels[p] == labels[i]) & (iou > threshold)):
                continue
        picked.append(int(i))
    return picked


def decode(
    heads: Mapping[str, np.ndarray],
    box: Letterbox,
    prob_threshold: float = PROB_THRESHOLD,
    nms_threshold: float = NMS_THRESHOLD,
) -> list[Detection]:
    """The detections in the original image from the six head blobs (``HEADS``' names)."""
    found = []
    for stride, cls_name, dis_name in HEADS:
        cls_pred = np.asarray(heads[cls_name], dtype=np.float32)
        dis_pred = np.asarray(heads[dis_name], dtype=np.float32)
        grid_w, grid_h = box.padded_w // stride, box.padded_h // stride
        cls_pred = cls_pred.reshape(-1, cls_pred.shape[-1])
        dis_pred = dis_pred.reshape(-1, dis_pred.shape[-1])
        if cls_pred.shape[0] != grid_w * grid_h or dis_pred.shape[0] != grid_w * grid_h:
            raise ValueError(
                f"head {cls_name}/{dis_name} has {cls_pred.shape[0]}/{dis_pred.shape[0]} cells, "
                f"expected {grid_w}x{grid_h} for a {box.padded_w}x{box.padded_h} input at stride {stride}"
            )
        found.append(proposals(cls_pred, dis_pred, stride, grid_w, prob_threshold))
    boxes = np.concatenate([f[0] for f in found])
    scores = np.concatenate([f[1] for f in found])
    labels = np.concatenate([f[2] for f in found])
    kept = nms(boxes, scores, labels, nms_threshold)
    # back to the image: take the padding off, undo the resize, clip to the pixels
    xy = (boxes[kept] - np.array([box.left, box.top] * 2, np.float32)) / np.float32(box.scale)
    xy = np.clip(xy, 0, np.array([box.image_w - 1, box.image_h - 1] * 2, np.float32))
    return [
        Detection(int(labels[i]), float(scores[i]), *map(float, b)) for i, b in zip(kept, xy, strict=True)
    ]


def detect(
    bgr: np.ndarray,
    run_heads: HeadRunner,
    target_size: int = TARGET_SIZE,
    prob_threshold: float = PROB_THRESHOLD,
    nms_threshold: float = NMS_THRESHOLD,
) -> list[Detection]:
    """Letterbox, run, decode: ``run_heads`` takes the (3, H, W) input and returns the head
    blobs by name (``NanoDet.heads``, or any other runtime's)."""
    x, box = letterbox(bgr, target_size)
    return decode(run_heads(x), box, prob_threshold, nms_threshold)


class NanoDet:
    """NanoDet-m in an ncnn_c ``Net``: ``heads(x)`` runs the network, a call detects.

    ``num_threads`` None keeps ncnn's default; ``vulkan_device`` runs it on that GPU, with
    ``pipeline_cache`` (a ``PipelineCache``) set before the model loads."""

    def __init__(
        self,
        param: str | os.PathLike,
        bin: str | os.PathLike,
        num_threads: int | None = None,
        vulkan_device: Any = None,
        pipeline_cache: Any = None,
        lightmode: bool = True,
    ) -> None:
        import ncnn_c as ncnn

        self.net = ncnn.Net()
        self.net.opt.lightmode = lightmode
        if num_threads is not None:
            self.net.opt.num_threads = num_threads
        if vulkan_device is not None:
            self.net.opt.use_vulkan_compute = True
            self.net.set_vulkan_device(vulkan_device)
            if pipeline_cache is not None:
                self.net.opt.pipeline_cache = pipeline_cache
        if self.net.load_param(str(param)) != 0:
            raise Failure(f"cannot load {param}")
        if self.net.load_model(str(bin)) != 0:
            raise Failure(f"cannot load {bin}")

    def heads(self, x: np.ndarray) -> dict[str, np.ndarray]:
        import ncnn_c as ncnn

        ex = self.net.create_extractor()
        if ex.input(INPUT, ncnn.Mat(np.ascontiguousarray(x, dtype=np.float32))) != 0:
            raise Failure(f"cannot feed input blob {INPUT!r}")
        out = {}
        for _, *names in HEADS:
            for name in names:
                ret, m = ex.extract(name)
                if ret != 0:
                    raise Failure(f"extracting {name!r} failed ({ret})")
                out[name] = np.array(m, dtype=np.float32)
        return out

    def __call__(self, bgr: np.ndarray, **kwargs: Any) -> list[Detection]:
        return detect(bgr, self.heads, **kwargs)


# one colour a class (RGB), bright enough for black label text
_PALETTE = ((255, 56, 56), (255, 157, 151), (255, 178, 29), (207, 210, 49), (72, 249, 10), (26, 147, 52),
            (0, 212, 187), (44, 153, 168), (0, 194, 255), (52, 69, 147), (132, 56, 255), (203, 56, 255),
            (255, 149, 200), (255, 55, 199))  # fmt: skip


def draw(rgb: np.ndarray, detections: list[Detection]) -> np.ndarray:
    """A copy of the RGB image (h, w, 3) with each detection's box and ``name score%`` label."""
    from ncnn_c.drawing import draw_rectangle, draw_text, get_text_drawing_size

    img = np.array(rgb, dtype=np.uint8, order="C", copy=True)
    h, w = img.shape[:2]
    font = max(6, min(w, h) // 50)
    for d in reversed(detections):  # the best last, so its label is on top
        r, g, b = _PALETTE[d.label % len(_PALETTE)]
        color = r | g << 8 | b << 16  # channel 0 in the lowest byte
        x, y = int(d.x0), int(d.y0)
        draw_rectangle(img, w, h, x, y, int(d.x1) - x, int(d.y1) - y, color, 2, 3)
        text = f"{d.name} {d.score * 100:.1f}%"
        tw, th = get_text_drawing_size(text, font)
        # above the box, else inside its top; never past the right edge
        tx, ty = max(min(x, w - tw), 0), y - th if y >= th else y
        draw_rectangle(img, w, h, tx, ty, tw, th, color, -1, 3)
        draw_text(img, w, h, text, tx, ty, font, 0x000000, 3)
    return img


# ----------------------------------------------------------------------------- command line


def _default_models() -> Path:
    """The source tree's models/ when run from a checkout, else ./models."""
    tree = Path(__file__).resolve().parents[2] / "models"
    return tree if (tree / f"{MODEL}.param").is_file() else Path("models")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "input", metavar="IMAGE_OR_FOLDER", help="an image (PNG, JPEG, PPM, ...) or a folder of them"
    )
    p.add_argument("--out", default="detections", help="folder for the annotated PNGs (default ./detections)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: ncnn's default)")
    p.add_argument("--gpu", action="store_true", help="run on the default Vulkan device")
    p.add_argument(
        "--models", default=None, help=f"folder with {MODEL}.param/.bin (default: the checkout's models/)"
    )
    p.add_argument(
        "--repeat", type=int, default=1, help="run each image N times; print the first and the median"
    )


def _images(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if not found:
            raise Failure(f"{path}: no images in this folder ({', '.join(IMAGE_SUFFIXES)})")
        return found
    if path.is_file():
        return [path]
    raise Failure(f"{path}: no such file or folder")


def _load(args: argparse.Namespace) -> tuple[NanoDet, Any, Any, str]:
    """(the detector, the pipeline cache store, the cache, its key); no cache on the CPU."""
    models = Path(args.models) if args.models else _default_models()
    param, weights = models / f"{MODEL}.param", models / f"{MODEL}.bin"
    for f in (param, weights):
        if not f.is_file():
            raise Failure(f"{f}: no such file (--models DIR: the folder with {MODEL}.param and .bin)")
    if not args.gpu:
        return NanoDet(param, weights, args.threads), None, None, ""
    import ncnn_c as ncnn
    from ncnn_c.cache.paths import default_store_url
    from ncnn_c.cachestore import open_store

    vkdev = _vulkan_device(None)
    store = open_store(default_store_url())
    # the key `ncnn_c run` gives the same .param, so either warms the other
    key = f"{MODEL}-{hashlib.sha256(param.read_bytes()).hexdigest()[:16]}"
    cache = ncnn.PipelineCache(vkdev)
    store.load_into(cache, key)  # a miss is not an error
    return NanoDet(param, weights, args.threads, vkdev, cache), store, cache, key


def _one(det: NanoDet, path: Path, out_dir: Path, repeat: int, device: str) -> None:
    rgb = _load_image(str(path), rgb=True)
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        x, box = letterbox(bgr)
        t1 = time.perf_counter()
        heads = det.heads(x)
        t2 = time.perf_counter()
        found = decode(heads, box)
        t3 = time.perf_counter()
        times.append(((t3 - t0) * 1000, (t2 - t1) * 1000))
    target = out_dir / f"{path.stem}-{path.suffix.lstrip('.').lower() or 'img'}.png"
    from PIL import Image

    Image.fromarray(draw(rgb, found)).save(target)
    total, net = times[0]
    line = (
        f"{path.name} {box.image_w}x{box.image_h} -> {box.padded_w}x{box.padded_h} on {device}: "
        f"{total:.1f} ms (network {net:.1f} ms)"
    )
    if repeat > 1:
        later = times[1:]
        line += (
            f", median of {len(later)} more: {statistics.median(t for t, _ in later):.1f} ms "
            f"(network {statistics.median(n for _, n in later):.1f} ms)"
        )
    print(f"{line}; {len(found)} object{'' if len(found) == 1 else 's'} -> {target}")
    for d in found:
        print(f"  {d}")


def run(args: argparse.Namespace) -> int:
    if args.repeat < 1:
        print("ncnn_c detect: --repeat must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if args.threads is not None and args.threads < 1:
        print("ncnn_c detect: --threads must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    try:
        images = _images(Path(args.input))
        det, store, cache, key = _load(args)
    except Failure as e:
        print(f"ncnn_c detect: {e}", file=sys.stderr)
        return EXIT_FAIL
    out_dir = Path(args.out)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"ncnn_c detect: --out {out_dir}: {e}", file=sys.stderr)
        return EXIT_FAIL
    code = EXIT_OK
    for path in images:
        try:
            _one(det, path, out_dir, args.repeat, "vulkan" if args.gpu else "cpu")
        except (Failure, OSError) as e:  # the others still run
            print(f"ncnn_c detect: {e}", file=sys.stderr)
            code = EXIT_FAIL
    if store is not None:
        store.save_from(cache, key, merge=True)
        store.close()
    return code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncnn_c detect", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))
