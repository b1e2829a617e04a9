"""NanoDet-m detection (``ncnn_c/tools/detect.py``, ``examples/detect.py``) against the PyPI ncnn.

The pre- and post-processing is ncnn_c's (letterbox, decode, NMS); the PyPI ncnn runs the
same network on its own letterboxed input (its ``from_pixels_resize`` and
``copy_make_border``), and both must find the same objects in images of several sizes and
aspects. Decode and NMS are checked on hand-made heads, where the right answer is known, so
a mistake there cannot hide behind both runtimes sharing it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import MODELS, ROOT
from oracle import rel_l2
from PIL import Image

from ncnn_c.tools import detect as D

PARAM, BIN = MODELS / "nanodet_m.param", MODELS / "nanodet_m.bin"
HEAD_TOL = 1e-4  # relative L2 of each head blob against the PyPI ncnn (CPU, fp32)
BOX_TOL = 0.05  # pixels of the original image
SCORE_TOL = 1e-3
CAT = D.COCO_NAMES.index("cat")


def _cat() -> Image.Image:
    return Image.open(MODELS / "cat.jpg").convert("RGB")


# name -> RGB image: the two shipped pictures, and the photo resized and cropped to other
# aspects (wider, taller, odd sizes whose letterbox pads on both axes)
IMAGES = {
    "cat.jpg": _cat,
    "256-ncnn.png": lambda: Image.open(MODELS / "256-ncnn.png").convert("RGB"),
    "cat-640x480": lambda: _cat().resize((640, 480), Image.BILINEAR),
    "cat-300x500": lambda: _cat().resize((300, 500), Image.BILINEAR),
    "cat-crop-333x199": lambda: _cat().resize((454, 302), Image.BILINEAR).crop((60, 50, 393, 249)),
}


def _bgr(name: str) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(IMAGES[name]())[:, :, ::-1])


# ------------------------------------------------------------------ the PyPI ncnn as the runner


def _oracle_letterbox(bgr: np.ndarray) -> np.ndarray:
    """ncnn_c's letterbox geometry, the pixels resized, padded and normalised by the PyPI ncnn."""
    import ncnn

    box = D.letterbox_geometry(bgr.shape[1], bgr.shape[0])
    m = ncnn.Mat.from_pixels_resize(bgr, ncnn.Mat.PixelType.PIXEL_BGR, box.image_w, box.image_h, box.w, box.h)
    m = ncnn.copy_make_border(
        m, box.top, box.hpad - box.top, box.left, box.wpad - box.left, ncnn.BorderType.BORDER_CONSTANT, 0.0
    )
    m.substract_mean_normalize(list(D.MEAN), list(D.NORM))
    return np.array(m, dtype=np.float32, copy=True)


@pytest.fixture(scope="module")
def oracle_heads():
    import ncnn

    net = ncnn.Net()
    net.load_param(str(PARAM))
    net.load_model(str(BIN))

    def run(x: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        with net.create_extractor() as ex:
            # a clone owns its memory: the PyPI Mat(ndarray) crashes an in-place layer after Input
            ex.input(D.INPUT, ncnn.Mat(np.ascontiguousarray(x, dtype=np.float32)).clone())
            for _, *names in D.HEADS:
                for name in names:
                    ret, m = ex.extract(name)
                    assert ret == 0, name
                    out[name] = np.array(m, dtype=np.float32, copy=True)
                    del m  # no oracle Mat may outlive its extractor
        return out

    yield run
    net.clear()


@pytest.fixture(scope="module")
def oracle(oracle_heads):
    """name -> (the PyPI letterboxed input, its heads, their detections), computed once."""
    memo: dict[str, tuple] = {}

    def get(name: str):
        if name not in memo:
            bgr = _bgr(name)
            x = _oracle_letterbox(bgr)
            heads = oracle_heads(x)
            memo[name] = (x, heads, D.decode(heads, D.letterbox_geometry(bgr.shape[1], bgr.shape[0])))
        return memo[name]

    return get


@pytest.fixture(scope="module", params=[True, False], ids=["lightmode", "no-lightmode"])
def nanodet(request) -> D.NanoDet:
    return D.NanoDet(PARAM, BIN, lightmode=request.param)


def assert_same_detections(got: list[D.Detection], ref: list[D.Detection], box_tol: float, score_tol: float):
    assert [d.name for d in got] == [d.name for d in ref], (got, ref)
    for g, r in zip(got, ref, strict=True):
        assert abs(g.score - r.score) <= score_tol, (g, r)
        coords = np.array([g.x0, g.y0, g.x1, g.y1]) - np.array([r.x0, r.y0, r.x1, r.y1])
        assert np.abs(coords).max() <= box_tol, (g, r)


# ------------------------------------------------------------------ against the PyPI ncnn


@pytest.mark.parametrize("name", list(IMAGES))
def test_detections_match_the_pypi_ncnn(name, nanodet, oracle):
    x_ref, heads_ref, found_ref = oracle(name)
    bgr = _bgr(name)
    x, box = D.letterbox(bgr)
    assert box.padded_w % 32 == 0 and box.padded_h % 32 == 0 and max(box.w, box.h) == D.TARGET_SIZE
    np.testing.assert_allclose(x, x_ref, rtol=0, atol=1e-5)  # the same input as ncnn's own letterbox
    heads = nanodet.heads(x)
    for _, cls_name, dis_name in D.HEADS:
        for blob in (cls_name, dis_name):
            assert heads[blob].shape == heads_ref[blob].shape, blob
            assert rel_l2(heads[blob], heads_ref[blob]) <= HEAD_TOL, blob
    found = nanodet(bgr)  # the whole pipeline, as the example runs it
    assert_same_detections(found, found_ref, BOX_TOL, SCORE_TOL)
    for d in found:
        assert 0 <= d.x0 <= d.x1 <= box.image_w - 1 and 0 <= d.y0 <= d.y1 <= box.image_h - 1


def test_the_cat_is_found(nanodet, oracle):
    # not a vacuous comparison: the photo holds a cat and both runtimes see it
    for found in (nanodet(_bgr("cat.jpg")), oracle("cat.jpg")[2]):
        cats = [d for d in found if d.label == CAT]
        assert cats and cats[0].score > 0.5, found
        # it fills most of the 227x151 picture
        assert (cats[0].x1 - cats[0].x0) > 150 and (cats[0].y1 - cats[0].y0) > 100
    assert sum(len(oracle(n)[2]) for n in IMAGES) >= 5  # most images give some boxes


@pytest.mark.gpu
def test_detections_on_vulkan_match_the_cpu(oracle):
    import ncnn_c as ncnn

    vkdev = ncnn.get_gpu_device(0)
    if vkdev is None:
        pytest.skip("no Vulkan device")
    gpu = D.NanoDet(PARAM, BIN, vulkan_device=vkdev)
    # cat.jpg: no score lies within fp16's error of the threshold
    _, heads_ref, found_ref = oracle("cat.jpg")
    x, box = D.letterbox(_bgr("cat.jpg"))
    heads = gpu.heads(x)
    for blob, ref in heads_ref.items():
        assert rel_l2(heads[blob], ref) <= 1e-2, blob  # fp16 storage and arithmetic by default
    assert_same_detections(D.decode(heads, box), found_ref, box_tol=1.0, score_tol=5e-3)


# ------------------------------------------------------------------ geometry, decode and NMS


@pytest.mark.parametrize(
    "size, resized, padded",
    [
        ((227, 151), (320, 212), (320, 224)),
        ((256, 256), (320, 320), (320, 320)),
        ((640, 480), (320, 240), (320, 256)),
        ((300, 500), (192, 320), (192, 320)),
        ((333, 199), (320, 191), (320, 192)),
        ((10, 1000), (3, 320), (32, 320)),
    ],
)
def test_letterbox_geometry(size, resized, padded):
    box = D.letterbox_geometry(*size)
    assert (box.w, box.h) == resized and (box.padded_w, box.padded_h) == padded
    assert (box.left, box.top) == ((padded[0] - resized[0]) // 2, (padded[1] - resized[1]) // 2)


def _heads_for(box: D.Letterbox, cells: list[tuple[int, int, int, int, float, tuple[int, int, int, int]]]):
    """Head blobs all zero (scores 0, distances flat) but for ``cells``: (stride, row, col,
    class, score, bins of the left, top, right, bottom distances), each bin made near one-hot."""
    heads = {}
    for stride, cls_name, dis_name in D.HEADS:
        n = (box.padded_w // stride) * (box.padded_h // stride)
        heads[cls_name] = np.zeros((n, len(D.COCO_NAMES)), np.float32)
        heads[dis_name] = np.zeros((n, 32), np.float32)
    for stride, row, col, label, score, ltrb in cells:
        _, cls_name, dis_name = next(h for h in D.HEADS if h[0] == stride)
        cell = row * (box.padded_w // stride) + col
        heads[cls_name][cell, label] = score
        for side, b in enumerate(ltrb):
            heads[dis_name][cell, side * 8 + b] = 30.0  # softmax: e^-30 left for the other bins
    return heads


def test_decode_boxes_nms_and_unscale():
    box = D.letterbox_geometry(640, 480)  # scale 0.5, 320x240 padded to 320x256: 8 rows on top
    assert (box.scale, box.top, box.left) == (0.5, 8, 0)
    heads = _heads_for(
        box,
        [
            # stride 8, cell (5, 10): centre (84, 44); distances 2, 3, 4, 5 bins of 8
            (8, 5, 10, CAT, 0.9, (2, 3, 4, 5)),
            # the same cat seen one cell right, weaker: suppressed by NMS
            (8, 5, 11, CAT, 0.8, (3, 3, 3, 5)),
            # a dog on top of it: another class, kept
            (8, 5, 14, 16, 0.6, (7, 3, 0, 5)),
            # below the threshold
            (16, 2, 2, 0, 0.39, (1, 1, 1, 1)),
            # stride 32, cell (7, 9): centre (304, 240), runs past the image's right edge and bottom
            (32, 7, 9, 0, 0.45, (1, 1, 2, 2)),
        ],
    )
    found = D.decode(heads, box)
    assert [(d.name, round(d.score, 4)) for d in found] == [("cat", 0.9), ("dog", 0.6), ("person", 0.45)]
    cat, dog, person = found
    # input pixels (84 - 16, 44 - 24, 84 + 32, 44 + 40) less 8 rows of padding, times 2
    np.testing.assert_allclose([cat.x0, cat.y0, cat.x1, cat.y1], [136, 24, 232, 152], atol=1e-3)
    np.testing.assert_allclose([dog.x0, dog.y0, dog.x1, dog.y1], [120, 24, 232, 152], atol=1e-3)
    # clipped to the 640x480 picture
    np.testing.assert_allclose([person.x0, person.y0, person.x1, person.y1], [544, 400, 639, 479], atol=1e-3)


def test_nms_keeps_the_best_per_class():
    boxes = np.array(
        [[0, 0, 10, 10], [1, 0, 11, 10], [0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30]], np.float32
    )
    scores = np.array([0.5, 0.9, 0.7, 0.8, 0.6], np.float32)
    labels = np.array([0, 0, 1, 0, 0])
    # 1 beats 0 (IoU 0.82); 2 is another class; 3 overlaps 1 by IoU 0.43 <= 0.5; 4 stands alone
    assert D.nms(boxes, scores, labels) == [1, 3, 2, 4]
    assert D.nms(boxes, scores, labels, threshold=0.4) == [1, 2, 4]


def test_decode_rejects_heads_of_another_input_size():
    box = D.letterbox_geometry(320, 320)
    heads = _heads_for(D.letterbox_geometry(320, 160), [])
    with pytest.raises(ValueError, match="expected 40x40"):
        D.decode(heads, box)


# ------------------------------------------------------------------ the example and the command


def _example(tmp: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "detect.py"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp,
        env=dict(os.environ, NCNN_C_CACHE_DIR=str(tmp / "user-cache")),
    )


LINE = re.compile(r"^(\S+) (\d+)x(\d+) -> (\d+)x(\d+) on cpu: ([\d.]+) ms \(network ([\d.]+) ms\)")


def test_example_on_a_folder_of_mixed_sizes(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    _cat().save(photos / "cat.jpg", quality=95)
    IMAGES["cat-300x500"]().save(photos / "tall.png")
    IMAGES["cat-crop-333x199"]().save(photos / "crop.ppm")
    (photos / "notes.txt").write_text("not an image: skipped")
    r = _example(tmp_path, photos, "--threads", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = {m.group(1): m for m in map(LINE.match, r.stdout.splitlines()) if m}
    assert sorted(lines) == ["cat.jpg", "crop.ppm", "tall.png"], r.stdout
    assert lines["tall.png"].group(2, 3, 4, 5) == ("300", "500", "192", "320")
    assert lines["crop.ppm"].group(2, 3, 4, 5) == ("333", "199", "320", "192")
    assert all(float(m.group(6)) >= float(m.group(7)) > 0 for m in lines.values())
    assert re.search(r"^  cat +0\.\d{3}  x ", r.stdout, re.M), r.stdout
    for out, size in (
        ("cat-jpg.png", (227, 151)),
        ("tall-png.png", (300, 500)),
        ("crop-ppm.png", (333, 199)),
    ):
        with Image.open(tmp_path / "detections" / out) as im:  # the default --out, under the cwd
            assert im.format == "PNG" and im.size == size
    # the boxes were drawn: the picture differs from the photo
    with Image.open(tmp_path / "detections" / "cat-jpg.png") as im, Image.open(photos / "cat.jpg") as src:
        assert np.abs(np.asarray(im, np.int16) - np.asarray(src.convert("RGB"), np.int16)).max() > 100


def test_example_says_what_is_wrong(tmp_path):
    r = _example(tmp_path, tmp_path / "missing.jpg", "--out", tmp_path / "out")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"ncnn_c detect: {tmp_path / 'missing.jpg'}: no such file or folder"
    # a broken file among good ones: the others are still done, the exit code says one failed
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "broken.jpg").write_bytes(b"not a jpeg")
    IMAGES["256-ncnn.png"]().save(folder / "logo.png")
    r = _example(tmp_path, folder, "--out", tmp_path / "out")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert re.search(r"^ncnn_c detect: cannot read image .*broken\.jpg: ", r.stderr, re.M), r.stderr
    assert (tmp_path / "out" / "logo-png.png").is_file() and "0 objects" in r.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _example(tmp_path, empty, "--models", tmp_path)
    assert r.returncode == 1 and "no images in this folder" in r.stderr


def test_detect_command(tmp_path, capsys, monkeypatch):
    from ncnn_c.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["detect", str(MODELS / "cat.jpg"), "--out", "here", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert re.match(
        r"cat\.jpg 227x151 -> 320x224 on cpu: [\d.]+ ms \(network [\d.]+ ms\), median of 1 more: ", out
    )
    assert "1 object -> here/cat-jpg.png" in out and (tmp_path / "here" / "cat-jpg.png").is_file()
    assert main(["detect", str(MODELS / "cat.jpg"), "--models", str(tmp_path)]) == 1
    assert "nanodet_m.param: no such file (--models DIR" in capsys.readouterr().err
    assert main(["detect", str(MODELS / "cat.jpg"), "--repeat", "0"]) == 2


@pytest.mark.gpu
def test_example_on_vulkan(tmp_path):
    import ncnn_c as ncnn

    if ncnn.get_gpu_count() == 0:
        pytest.skip("no Vulkan device")
    r = _example(tmp_path, MODELS / "cat.jpg", "--gpu")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "on vulkan:" in r.stdout and re.search(r"^  cat +0\.5\d\d  x ", r.stdout, re.M), r.stdout
    assert (tmp_path / "detections" / "cat-jpg.png").is_file()
    assert (tmp_path / "user-cache" / "pipelines.sqlite3").is_file()  # the pipeline cache, as `run` keeps it
