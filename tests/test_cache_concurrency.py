"""One pipeline cache shared by many threads, and one cache file shared by many processes.

Threads: one PipelineCache, a barrier, every thread asks for the same requests; each request
must end up as exactly one artifact and the pipelines must compute the right thing.

Processes: each runs this file as a script (``worker``), with its own set of shaders (a
different "model"), for several rounds of load_cache / create pipelines / save_cache on one
path, with merge on, or mixed on and off. Every load returns 0 (or misses before the first
save), every save returns 0; with merge on for everyone no entry is ever lost (a process never
recompiles after its first round, and the final file holds the union); no temp file is left.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.gpu

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent

# ``x[i] = x[i] * scale + K`` in place: one source per K, so every shader has its own SPIR-V.
SHADER = """#version 450
layout (constant_id = 0) const float scale = 1.0;
layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;
layout (binding = 0) buffer data_blob { sfp data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main()
{
    int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n)
        return;
    buffer_st1(data, i, buffer_ld1(data, i) * afp(scale) + afp(%d.0));
}
"""


def write_shaders(directory: pathlib.Path, count: int) -> list[str]:
    names = []
    for k in range(count):
        (directory / f"s{k}.comp").write_text(SHADER % (k + 1))
        names.append(f"s{k}")
    return names


def fp32_option(cache):
    from ncnn_c.option import Option

    opt = Option()
    opt.use_fp16_packed = opt.use_fp16_storage = opt.use_fp16_arithmetic = False
    opt.use_int8_storage = opt.use_int8_arithmetic = False
    opt.pipeline_cache = cache
    return opt


def run_pipeline(vkdev, pipeline, x, opt):
    """pipeline(x) for a float32 vector ``x``."""
    import numpy as np

    from ncnn_c.gpu import command
    from ncnn_c.gpu.vkmat import VkMat
    from ncnn_c.mat import Mat

    cmd = command.VkCompute(vkdev)
    g = VkMat()
    cmd.record_upload(Mat(x), g, opt)
    cmd.record_pipeline(pipeline, [g], [len(x)], g)
    out = Mat()
    cmd.record_download(g, out, opt)
    assert cmd.submit_and_wait() == 0
    cmd.destroy()
    return np.array(out).reshape(-1).astype(np.float32)


# -- processes: the worker -------------------------------------------------------------------------


def worker(args: dict) -> dict:
    """Rounds of load / create / save on one path; returns what happened, for the parent to check."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from ncnn_c.gpu import compiler, device
    from ncnn_c.gpu.pipeline import Pipeline
    from ncnn_c.gpu.pipelinecache import PipelineCache

    compiler.set_shader_dir(args["shader_dir"])
    vkdev = device.get_gpu_device(0)
    path = args["path"]
    rnd = random.Random(args["index"])
    # start together: without this, process start-up skew would leave little overlap
    sync = pathlib.Path(args["sync"])
    (sync / f"ready.{args['index']}").touch()
    deadline = time.monotonic() + 120
    while not (sync / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    loads, saves, compiled, errors = [], [], [], []
    for r in range(args["rounds"]):
        cache = PipelineCache(vkdev)
        rc = cache.load_cache(path)
        loads.append(rc)
        if rc != 0:
            errors.append(cache.last_error)
        opt = fp32_option(cache)
        for name in args["shaders"]:
            p = Pipeline(vkdev)
            p.set_local_size_xyz(64, 1, 1)
            if p.create(name, opt, [2.0]) != 0:
                errors.append(f"round {r}: create {name} failed")
        compiled.append(cache.stats()["compiled"])
        mode = args["merge"]
        merge = mode == "on" or (mode == "mixed" and rnd.random() < 0.5)
        saves.append(cache.save_cache(path, merge=merge))
        cache.destroy()
        time.sleep(rnd.random() * 0.002)  # shuffle the interleaving a little

    # the cache as it is now works: pipelines from its SPIR-V compute the right thing
    cache = PipelineCache(vkdev)
    final_load = cache.load_cache(path)
    opt = fp32_option(cache)
    x = np.arange(50, dtype=np.float32)
    results = []
    for name in args["shaders"]:
        p = Pipeline(vkdev)
        p.set_local_size_xyz(64, 1, 1)
        assert p.create(name, opt, [2.0]) == 0
        k = int(name[1:]) + 1
        results.append(bool(np.array_equal(run_pipeline(vkdev, p, x, opt), 2 * x + k)))
    cache.destroy()
    return {
        "loads": loads,
        "saves": saves,
        "compiled": compiled,
        "errors": errors,
        "final_load": final_load,
        "results": results,
    }


if __name__ == "__main__":
    print(json.dumps(worker(json.loads(sys.argv[1]))))
    sys.exit(0)


# -- processes: the test ---------------------------------------------------------------------------


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def run_fleet(tmp_path: pathlib.Path, processes: int, rounds: int, merge: str) -> None:
    from ncnn_c.cache.format import ENTRY_STRUCT
    from ncnn_c.gpu import cachefile, compiler

    shader_dir = tmp_path / "shaders"
    shader_dir.mkdir()
    names = write_shaders(shader_dir, processes + 1)
    path = tmp_path / "fleet.vkcache"
    # a temp file of a dead writer: the first save removes it
    stale_tmp = tmp_path / f"fleet.vkcache.tmp.{dead_pid()}.0123456789ab"
    stale_tmp.write_bytes(b"half a cache")

    sync = tmp_path / "sync"
    sync.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = []
    for i in range(processes):
        # two shaders each, overlapping with the neighbour: different models, some shared shaders
        args = {
            "index": i,
            "shader_dir": str(shader_dir),
            "path": str(path),
            "rounds": rounds,
            "merge": merge,
            "shaders": [names[i], names[i + 1]],
            "sync": str(sync),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(pathlib.Path(__file__)), json.dumps(args)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    deadline = time.monotonic() + 300
    while len(list(sync.glob("ready.*"))) < processes and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break  # a worker died early; its report below says why
        time.sleep(0.01)
    (sync / "go").touch()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))

    for i, rep in enumerate(reports):
        assert rep["saves"] == [0] * rounds, (i, rep)
        # the only acceptable failed load: no file yet, before anyone saved
        assert len(rep["errors"]) == rep["loads"].count(-1), (i, rep["errors"])
        assert all("no such file" in (why or "") for why in rep["errors"]), (i, rep["errors"])
        assert rep["loads"][-1] == 0
        assert rep["final_load"] == 0
        assert rep["results"] == [True, True], (i, rep)
        if merge == "on":
            # after its first save, a process always finds its own entries: none is ever lost
            assert rep["compiled"][1:] == [0] * (rounds - 1), (i, rep["compiled"])

    leftovers = sorted(p.name for p in tmp_path.iterdir() if ".tmp." in p.name)
    assert leftovers == [], leftovers
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fleet.vkcache",
        "fleet.vkcache.lock",
        "shaders",
        "sync",
    ]

    compiler.set_shader_dir(shader_dir)
    try:
        data = path.read_bytes()
        hdr = cachefile.read_header(data)
        ids = set()
        pos = cachefile.HEADER_SIZE
        for _ in range(hdr.spirv_entry_count):
            sid, _opt, _src, size, _f, _m = ENTRY_STRUCT.unpack_from(data, pos)
            ids.add(sid)
            pos += cachefile.ENTRY_HEADER_SIZE + size
        want = {compiler.shader_id(compiler.shader_index(n)) for n in names}
        if merge == "on":
            assert ids == want  # the union of every process's shaders
        else:
            assert ids and ids <= want
    finally:
        compiler.set_shader_dir(None)


@pytest.mark.parametrize("merge", ["on", "mixed"])
def test_processes_share_one_file(tmp_path, merge):
    t0 = time.perf_counter()
    run_fleet(tmp_path, processes=4, rounds=10, merge=merge)
    print(f"4 processes x 10 rounds, merge {merge}: {time.perf_counter() - t0:.1f} s")


@pytest.mark.slow
@pytest.mark.parametrize("merge", ["on", "mixed"])
def test_processes_share_one_file_8x50(tmp_path, merge):
    t0 = time.perf_counter()
    run_fleet(tmp_path, processes=8, rounds=50, merge=merge)
    print(f"8 processes x 50 rounds, merge {merge}: {time.perf_counter() - t0:.1f} s")


# -- threads -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vkdev():
    from ncnn_c.gpu import device

    assert device.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return device.get_gpu_device(0)


@pytest.fixture
def shader_names(tmp_path):
    from ncnn_c.gpu import compiler

    names = write_shaders(tmp_path, 3)
    compiler.set_shader_dir(tmp_path)
    yield names
    compiler.set_shader_dir(None)


def test_threads_create_through_one_cache(vkdev, shader_names):
    import numpy as np

    from ncnn_c.gpu import _vk_pipeline
    from ncnn_c.gpu.pipeline import Pipeline
    from ncnn_c.gpu.pipelinecache import PipelineCache

    threads_n = 8
    requests = [
        (name, scale, local) for name in shader_names for scale in (1.0, 2.0, 3.0) for local in (32, 64)
    ]
    cache = PipelineCache(vkdev)
    opt = fp32_option(cache)
    barrier = threading.Barrier(threads_n)
    made: list[list] = [[] for _ in range(threads_n)]
    failures: list[str] = []

    def run(t: int) -> None:
        order = list(requests) * 3
        random.Random(t).shuffle(order)
        barrier.wait()
        try:
            for name, scale, local in order:
                p = Pipeline(vkdev)
                p.set_local_size_xyz(local, 1, 1)
                if p.create(name, opt, [scale]) != 0:
                    failures.append(f"thread {t}: {name} {scale} {local}")
                    continue
                made[t].append(((name, scale, local), p))
        except Exception as e:  # reported below; a thread's exception would otherwise vanish
            failures.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=run, args=(t,)) for t in range(threads_n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    try:
        assert failures == []
        total = threads_n * len(requests) * 3
        by_request: dict = {}
        for lst in made:
            for req, p in lst:
                by_request.setdefault(req, set()).add(_vk_pipeline.handle_int(p.vk_pipeline))
        # one request, one artifact: every thread got the same pipeline for it
        assert all(len(h) == 1 for h in by_request.values()), by_request
        assert len({next(iter(h)) for h in by_request.values()}) == len(requests)
        assert cache.size() == len(requests)
        s = cache.stats()
        assert s["compiled"] == len(shader_names)  # one compile per shader, whatever the race
        assert s["pipelines_created"] == len(requests)
        assert s["artifact_hits"] == total - len(requests)
        assert s["spirv_hits"] == len(requests) - len(shader_names)

        # and they compute the right thing
        x = np.linspace(-3, 3, 100, dtype=np.float32)
        done = set()
        for (name, scale, local), p in made[0]:
            if (name, scale, local) in done:
                continue
            done.add((name, scale, local))
            k = int(name[1:]) + 1
            np.testing.assert_array_equal(
                run_pipeline(vkdev, p, x, opt), x * np.float32(scale) + np.float32(k)
            )
    finally:
        cache.destroy()


def test_threads_save_while_others_create(vkdev, shader_names, tmp_path):
    """Saving (plain and merging) while other threads create pipelines: every save is a loadable file."""
    from ncnn_c.gpu.pipeline import Pipeline
    from ncnn_c.gpu.pipelinecache import PipelineCache

    cache = PipelineCache(vkdev)
    opt = fp32_option(cache)
    path = tmp_path / "threads.vkcache"
    stop = threading.Event()
    failures: list[str] = []
    saved: list[bytes] = []

    def create(t: int) -> None:
        rnd = random.Random(t)
        while not stop.is_set():
            p = Pipeline(vkdev)
            p.set_local_size_xyz(rnd.choice((16, 32, 64, 128)), 1, 1)
            if p.create(rnd.choice(shader_names), opt, [float(rnd.randint(1, 20))]) != 0:
                failures.append(f"create in thread {t}")

    def save(t: int) -> None:
        for i in range(15):
            buf = bytearray()
            if cache.save_cache(buf) != 0 or cache.save_cache(path, merge=bool((i + t) % 2)) != 0:
                failures.append(f"save in thread {t}")
            saved.append(bytes(buf))

    creators = [threading.Thread(target=create, args=(t,)) for t in range(3)]
    savers = [threading.Thread(target=save, args=(t,)) for t in range(3)]
    for th in creators + savers:
        th.start()
    for th in savers:
        th.join()
    stop.set()
    for th in creators:
        th.join()
    try:
        assert failures == []
        for data in saved + [path.read_bytes()]:
            c = PipelineCache(vkdev)
            assert c.load_cache(data) == 0, c.last_error
            c.destroy()
        assert [p.name for p in tmp_path.iterdir() if ".tmp." in p.name] == []
    finally:
        cache.destroy()


# -- merging a file's driver blob ----------------------------------------------------------------


def test_merge_feeds_the_old_driver_blob_through_the_driver(vkdev, shader_names, monkeypatch, tmp_path):
    """An old blob that differs from ours is united with ours by vkMergePipelineCaches, not dropped."""
    from ncnn_c.gpu import _vk_pipeline, cachefile
    from ncnn_c.gpu.pipeline import Pipeline
    from ncnn_c.gpu.pipelinecache import PipelineCache

    cache = PipelineCache(vkdev)
    p = Pipeline(vkdev)
    p.set_local_size_xyz(64, 1, 1)
    assert p.create(shader_names[0], fp32_option(cache), [2.0]) == 0
    ours = bytearray()
    assert cache.save_cache(ours) == 0
    ident = cache._identity()
    _entries, our_blob = cachefile.decode(bytes(ours), ident, compiler_hash(), lambda s: None)
    assert our_blob  # lavapipe writes at least the 32-byte header
    # a blob of this device with more in it than ours: what another process's driver wrote
    other = cachefile.encode(ident, [], our_blob[:32] + b"\x11" * 64)
    merges = []
    real = _vk_pipeline.merge_pipeline_caches
    monkeypatch.setattr(_vk_pipeline, "merge_pipeline_caches", lambda *a: (merges.append(a), real(*a))[1])
    buf = bytearray(other)
    assert cache.save_cache(buf, merge=True) == 0
    assert len(merges) == 1
    c2 = PipelineCache(vkdev)
    assert c2.load_cache(bytes(buf)) == 0 and c2.stats()["loaded_spirv_entries"] == 1
    c2.destroy()
    # the same through a path, and a blob equal to ours needs no driver merge
    merges.clear()  # the load merged its blob into c2's cache
    path = tmp_path / "m.vkcache"
    path.write_bytes(bytes(ours))
    assert cache.save_cache(path, merge=True) == 0
    assert merges == []
    cache.destroy()


def compiler_hash():
    from ncnn_c.gpu import compiler

    return compiler.source_hash_by_id
