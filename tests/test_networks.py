"""Whole networks against the PyPI ncnn: every benchmark network and SqueezeNet.

Benchmark networks ship without weights: ``ncnn_c.tools.randbin`` writes deterministic
random ones in ncnn's layout (fp32, and fp16-tagged for a few networks), calibrated layer by
layer so that activations stay near RMS 1 (inside fp16's range too), and both libraries
run the same .param/.bin on the same input. Every output blob of the network is compared:
relative L2 error <= 1e-4, top-1 equal on classifiers, and for detection outputs the same
boxes (IoU >= 0.99), classes and scores.
"""

from __future__ import annotations

import functools
import pathlib

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import rel_l2, run_ncnn, run_ncnn_isolated, run_net

from ncnn_c.tools.randbin import random_weights

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH = ROOT / "models" / "benchmark"

# input shapes (c, h, w) where the .param does not give one (as ncnn's benchncnn runs them)
INPUT_SHAPES = {"FastestDet": (3, 352, 352)}
# networks whose random weights run to hundreds of MB: the slow sweep runs them
HEAVY = {"vgg16", "alexnet"}
# layer types whose output is a list of detections (rows of label, score, box)
DETECTION_TYPES = {"DetectionOutput", "Yolov3DetectionOutput", "YoloDetectionOutput"}
NET_TOL = 1e-4


def parse_param(path: pathlib.Path):
    """(input blobs with (c, h, w), output blobs with their producer's type) of a text .param."""
    lines = path.read_text().split("\n")
    inputs, produced, consumed, noop_bottoms = [], {}, set(), {}
    for line in lines[2:]:
        tok = line.split()
        if len(tok) < 4:
            continue
        typ, nb, nt = tok[0], int(tok[2]), int(tok[3])
        bottoms, tops = tok[4 : 4 + nb], tok[4 + nb : 4 + nb + nt]
        consumed.update(bottoms)
        for t in tops:
            produced[t] = typ
            if typ == "Noop":
                noop_bottoms[t] = bottoms
        if typ == "Input":
            kv = dict(p.split("=", 1) for p in tok[4 + nb + nt :] if "=" in p and not p.startswith("-"))
            shape = (int(kv.get("2", 0)), int(kv.get("1", 0)), int(kv.get("0", 0)))
            inputs.append((tops[0], INPUT_SHAPES.get(path.stem, shape)))
    outputs = []
    for b, typ in produced.items():
        if b in consumed or typ == "Input":
            continue
        # a Noop gathering the heads (nanodet's "output") produces nothing: its inputs are the outputs
        for o in noop_bottoms.get(b, [b]):
            outputs.append((o, produced[o]))
    return inputs, outputs


@functools.lru_cache(maxsize=4)
def weights(param: str, fp16: bool) -> bytes:
    # calibrated on an input of the shape the tests feed
    shape = INPUT_SHAPES.get(pathlib.Path(param).stem, (3, 224, 224))
    return random_weights(param, seed=7, fp16=fp16, input_shape=shape)


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of corresponding rows of two (n, 4) arrays of [xmin, ymin, xmax, ymax]."""
    lt = np.maximum(a[:, :2], b[:, :2])
    rb = np.minimum(a[:, 2:], b[:, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
    area = lambda x: np.prod(np.clip(x[:, 2:] - x[:, :2], 0, None), axis=1)  # noqa: E731
    union = area(a) + area(b) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 1.0)


def detection_heads(param_text: str) -> list[tuple[str, str]]:
    """The blobs a network's detection layer reads (its heads), as (name, producer type)."""
    produced = {}
    for line in param_text.split("\n")[2:]:
        tok = line.split()
        if len(tok) < 4:
            continue
        nb, nt = int(tok[2]), int(tok[3])
        for t in tok[4 + nb : 4 + nb + nt]:
            produced[t] = tok[0]
        if tok[0] in DETECTION_TYPES:
            return [(b, produced.get(b, "")) for b in tok[4 : 4 + nb]]
    return []


def detection_thresholds(param_text: str) -> tuple[float, float]:
    """(confidence_threshold, nms_threshold) of the network's detection layer."""
    for line in param_text.split("\n"):
        tok = line.split()
        if tok and tok[0] in DETECTION_TYPES:
            kv = dict(t.split("=", 1) for t in tok if "=" in t and not t.startswith("-"))
            if tok[0] == "DetectionOutput":
                return float(kv.get("4", 0.05)), float(kv.get("1", 0.05))
            return float(kv.get("2", 0.01)), float(kv.get("3", 0.45))
    return 0.0, 1.0


def assert_same_detections(
    got: np.ndarray, ref: np.ndarray, what: str, thresholds=(0.0, 1.0), score_tol: float = 1e-4
) -> None:
    """Same detections as the oracle: classes, scores, boxes (IoU >= 0.99).

    Rows are matched, not compared in order: among boxes of equal score the order is the
    sort's business (ncnn's is not stable), and random weights make many such ties. A
    detection may go unmatched only for a reason the arithmetic allows: its score is within
    ``score_tol`` of the confidence threshold (rounding decides whether it passes), or a box
    of its class overlaps it by about the NMS threshold (rounding decides which one NMS keeps).
    ``score_tol`` is 1e-4 for fp32 and 2e-2 for fp16 storage, whose scores carry that error.
    """
    conf, nms = thresholds
    got = got.reshape(-1, 6) if got.size else np.zeros((0, 6), np.float32)
    ref = ref.reshape(-1, 6) if ref.size else np.zeros((0, 6), np.float32)
    free = np.ones(len(got), bool)
    unmatched_ref = []
    for r in ref:
        cand = np.flatnonzero(
            free & (got[:, 0] == r[0]) & (np.abs(got[:, 1] - r[1]) <= score_tol * max(1, r[1]))
        )
        if cand.size:
            iou = box_iou(got[cand, 2:], np.broadcast_to(r[2:], (cand.size, 4)))
            # a box a few ulps wide (random weights make some) has a meaningless IoU: equal
            # coordinates count as a full match
            same = np.all(np.isclose(got[cand, 2:], r[2:], rtol=1e-4, atol=1e-6), axis=1)
            iou = np.where(same, 1.0, iou)
            best = int(np.argmax(iou))
            if iou[best] >= 0.99:
                free[cand[best]] = False
                continue
        unmatched_ref.append(r)
    unmatched_got = got[free]

    def excused(row, others) -> bool:
        if row[1] < conf + score_tol * max(1, conf) * 4:
            return True
        same_class = others[others[:, 0] == row[0]]
        if same_class.size:
            iou = box_iou(same_class[:, 2:], np.broadcast_to(row[2:], (len(same_class), 4)))
            if np.any(np.abs(iou - nms) <= 0.05):
                return True
        return False

    bad = [r for r in unmatched_ref if not excused(r, ref)] + [
        g for g in unmatched_got if not excused(g, got)
    ]
    assert not bad, (
        f"{what}: {len(bad)} detections differ without a rounding excuse "
        f"(of {len(ref)} oracle / {len(got)} ours), first: {np.round(bad[0], 4).tolist()}"
    )
    # the excuses are for the margins, not for the bulk
    assert len(unmatched_ref) <= max(2, 0.05 * len(ref)), (
        f"{what}: {len(unmatched_ref)} of {len(ref)} unmatched"
    )


def compare_network(
    param: pathlib.Path,
    bin_bytes: bytes,
    seed: int = 0,
    tol: float = NET_TOL,
    use_vulkan=False,
    score_tol: float = 1e-4,
    outputs=None,
    **opts,
):
    inputs, parsed_outputs = parse_param(param)
    outputs = parsed_outputs if outputs is None else outputs
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(shape).astype(np.float32) for _, shape in inputs]
    in_names = [n for n, _ in inputs]
    out_names = [n for n, _ in outputs]
    text = param.read_text()
    oracle = run_ncnn_isolated if "DetectionOutput" in text else run_ncnn
    ret, ref = oracle(text, bin_bytes, arrays, len(out_names), in_names, out_names)
    assert ret == 0, f"oracle failed on {param.name}"
    ret, got = run_net(text, bin_bytes, arrays, len(out_names), use_vulkan, in_names, out_names, **opts)
    assert ret == 0, f"ncnn_c failed on {param.name}"
    errors = {}
    for (name, typ), g_out, r_out in zip(outputs, got, ref, strict=True):
        what = f"{param.stem}:{name}"
        if typ in DETECTION_TYPES:
            assert_same_detections(g_out, r_out, what, detection_thresholds(text), score_tol)
            errors[name] = 0.0
            continue
        # random weights must give a live signal, or agreement proves nothing
        assert np.all(np.isfinite(r_out)), f"{what}: the oracle's output is not finite"
        assert r_out.size == 1 or np.std(r_out) > 1e-6 * (np.abs(r_out).max() + 1e-30), f"{what}: constant"
        err = rel_l2(g_out, r_out)
        assert err <= tol, f"{what}: relative L2 error {err:.3g} > {tol:g}"
        if r_out.ndim == 1 and r_out.size >= 10:
            assert int(np.argmax(g_out)) == int(np.argmax(r_out)), f"{what}: top-1 differs"
        errors[name] = err
    return errors


BENCH_MODELS = sorted(p.stem for p in BENCH.glob("*.param"))


def _model_param(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if name in HEAVY else name


@pytest.mark.parametrize("model", [_model_param(m) for m in BENCH_MODELS])
def test_benchmark_network(model):
    param = BENCH / f"{model}.param"
    compare_network(param, weights(str(param), False))


@pytest.mark.parametrize("model", ["squeezenet", "mobilenet", "shufflenet"])
def test_benchmark_network_fp16_weights(model):
    # fp16-tagged weights: both libraries widen the same halves to fp32, so the bar is unchanged
    param = BENCH / f"{model}.param"
    compare_network(param, weights(str(param), True))


def test_squeezenet_real_weights():
    param = ROOT / "models" / "squeezenet_v1.1.param"
    errs = compare_network(param, (ROOT / "models" / "squeezenet_v1.1.bin").read_bytes())
    assert set(errs) == {"prob"}


def test_random_weights_are_deterministic(tmp_path):
    param = str(BENCH / "squeezenet.param")
    a = random_weights(param, seed=3)
    assert a == random_weights(param, seed=3)
    assert a != random_weights(param, seed=4)
    half = random_weights(param, seed=3, fp16=True)
    assert len(half) < len(a)


def test_randbin_command(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "m.bin"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncnn_c.tools.randbin",
            str(BENCH / "squeezenet.param"),
            str(out),
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == random_weights(str(BENCH / "squeezenet.param"), seed=3)
    r = subprocess.run(
        [sys.executable, "-m", "ncnn_c.tools.randbin", str(tmp_path / "missing.param"), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1 and "missing.param" in r.stderr
    fastestdet = str(BENCH / "FastestDet.param")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncnn_c.tools.randbin",
            fastestdet,
            str(out),
            "--seed",
            "7",
            "--shape",
            "3,352,352",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == weights(fastestdet, False)
    r = subprocess.run(
        [sys.executable, "-m", "ncnn_c.tools.randbin", fastestdet, str(out), "--shape", "3,352"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and "--shape" in r.stderr


# the networks whose uncalibrated random weights passed fp16's 65504 (BlazeFace's residual
# sums reached 8e4, ShuffleNet's and Yolo-Fastest's too) or fed EfficientNetV2's
# squeeze-excite gates logits in the hundreds
@pytest.mark.parametrize("model", ["blazeface", "shufflenet", "yolo-fastest-1.1", "efficientnetv2_b0"])
def test_random_weights_keep_every_activation_in_a_sane_range(model):
    param = BENCH / f"{model}.param"
    text = param.read_text()
    inputs, _ = parse_param(param)
    blobs = []
    for line in text.split("\n")[2:]:
        tok = line.split()
        if len(tok) >= 4 and tok[0] not in ("Input", "Noop", "Split", "MemoryData") + tuple(DETECTION_TYPES):
            nb, nt = int(tok[2]), int(tok[3])
            blobs += tok[4 + nb : 4 + nb + nt]
    arrays = [np.random.default_rng(0).standard_normal(shape).astype(np.float32) for _, shape in inputs]
    ret, outs = run_ncnn(text, weights(str(param), False), arrays, len(blobs), [n for n, _ in inputs], blobs)
    assert ret == 0
    rms = [float(np.sqrt(np.mean(np.square(o, dtype=np.float64)))) for o in outs]
    peaks = [float(np.max(np.abs(o))) for o in outs]
    # the oracle itself: fp32 activations far inside fp16's range, none dead
    assert all(np.all(np.isfinite(o)) for o in outs)
    assert max(peaks) < 100, f"{model}: peak {max(peaks):.3g} at {blobs[int(np.argmax(peaks))]}"
    assert min(rms) > 1e-3, f"{model}: RMS {min(rms):.3g} at {blobs[int(np.argmin(rms))]}"


@pytest.mark.parametrize(
    "flags",
    [
        dict(use_packing_layout=True),
        dict(use_fp16_storage=True, use_fp16_packed=True, use_fp16_arithmetic=True),
        dict(use_bf16_storage=True),
        dict(use_packing_layout=True, use_fp16_storage=True, use_fp16_packed=True, use_bf16_storage=True),
    ],
    ids=["packing", "fp16", "bf16", "all"],
)
def test_cpu_numerics_switches_keep_shapes_and_values(flags):
    # ncnn_c's CPU layers compute in fp32 with elempack 1 whatever these switches say (the
    # documented CPU behaviour, docs/design.md): the outputs equal the fp32 ones and keep their
    # shapes, for fp16-stored weights too
    param = BENCH / "mobilenet.param"
    compare_network(param, weights(str(param), True), **flags)
