"""cachefile's atomic save under the path forms callers really pass: relative paths and
symlinked directories, from many threads of one process at once.

The temp files in flight are recorded by one spelling of the path and compared by another
in ``remove_stale_temps``; when the two differ, one thread's cleanup deletes another's temp
before its ``os.replace`` (ENOENT, a lost save).
"""

from __future__ import annotations

import os
import threading

from ncnn_c.gpu import cachefile as cf
from ncnn_c.gpu.cachefile import Identity, SpirvEntry

IDENT = Identity(
    ncnn_version=20250503,
    vendor_id=0x10DE,
    device_id=0x2335,
    api_version=(1 << 22) | (3 << 12) | 277,
    driver_version=0x8A3C4000,
    driver_id=4,
    driver_name="NVIDIA",
    device_name="NVIDIA H200",
    pipeline_cache_uuid=bytes(range(0xA0, 0xB0)),
)


def _payload(i: int) -> bytes:
    e = SpirvEntry(shader_id=1, opt_bits=0, source_hash=0x1000, spirv=bytes([i % 256]) * 4096)
    return cf.encode(IDENT, [e], b"")


def _hammer(target, threads: int = 8, saves: int = 25) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def saver(t: int) -> None:
        start.wait()
        for k in range(saves):
            try:
                # what PipelineCache.save_cache does for a path: write_target -> write_atomic
                cf.write_target(target, _payload(t * saves + k))
            except BaseException as e:  # collected: every lost save counts
                errors.append(e)

    ts = [threading.Thread(target=saver, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def _check_final(path) -> None:
    data = cf.read_source(path)
    entries, blob = cf.decode(data, IDENT, lambda sid: 0x1000, lambda spv: None)
    assert len(entries) == 1 and blob == b""


def _leftovers(d) -> list[str]:
    return sorted(n for n in os.listdir(d) if ".tmp." in n)


def test_threads_saving_to_one_relative_path_lose_no_save(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    errors = _hammer("model.vkcache")
    assert errors == [], f"{len(errors)} of 200 saves failed, first: {errors[0]!r}"
    _check_final("model.vkcache")
    assert _leftovers(tmp_path) == []


def test_threads_saving_through_relative_and_absolute_spellings(tmp_path, monkeypatch):
    # the same file named three ways at once: relative, "./"-prefixed, absolute
    monkeypatch.chdir(tmp_path)
    spellings = ["c.vkcache", os.path.join(".", "c.vkcache"), str(tmp_path / "c.vkcache")]
    errors: list[BaseException] = []
    ts = [
        threading.Thread(target=lambda p=p: errors.extend(_hammer(p, threads=3, saves=20))) for p in spellings
    ]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == [], f"{len(errors)} saves failed, first: {errors[0]!r}"
    _check_final(tmp_path / "c.vkcache")
    assert _leftovers(tmp_path) == []


def test_threads_saving_through_a_symlinked_directory(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    errors: list[BaseException] = []
    ts = [
        threading.Thread(target=lambda p=p: errors.extend(_hammer(p, threads=4, saves=20)))
        for p in (real / "c.vkcache", link / "c.vkcache")
    ]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == [], f"{len(errors)} saves failed, first: {errors[0]!r}"
    _check_final(real / "c.vkcache")
    assert _leftovers(real) == []


def test_stale_temps_are_still_removed_for_a_relative_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dead = tmp_path / f"c.vkcache.tmp.{os.getpid()}.deadbeef0000"  # ours, but not in flight
    dead.write_bytes(b"x")
    assert cf.remove_stale_temps("c.vkcache") == 1
    assert not dead.exists()
