"""A native plan step of ncnn_c's own C (a ``plan.c`` kernel) that fails stops the run with a
non-zero status, which the extract reports; before, a kernel could not return one, and a
Winograd matmul failure only printed a line while the output stayed incomplete."""

from __future__ import annotations

import importlib
import logging

import numpy as np
import pytest

from ncnn_c._native import dnnl
from ncnn_c._native.dnnl import DnnlError
from ncnn_c.net.native.ops.winograd import kernels


@pytest.fixture(scope="module")
def dn():
    d = dnnl.get()
    assert d is not None, "the native plan is built by make setup (oneDNN and the _plan extension)"
    return d


def broken_winograd_layer():
    """A Winograd kernel context whose per-thread oneDNN memories are missing: its first
    oneDNN call fails, as a failed matmul would."""
    assert kernels() is not None, "the _winograd extension is built by make setup"
    # the raw extension: this test builds a context the plan's ops never would
    wmod = importlib.import_module("ncnn_c._native._winograd")
    ffi = wmod.ffi
    nulls = ffi.new("void *[1]")
    ctx = ffi.new("ncnnc_wino_layer *")
    ctx.w.lanes = int(wmod.lib.ncnnc_wino_lanes())
    ctx.w.np = ctx.w.lanes
    ctx.chunks = ctx.groups = ctx.slots = 1
    ctx.u = ctx.streams = ctx.v = ctx.m = nulls
    ctx.sp = ffi.NULL
    return wmod, ctx, nulls


def test_the_kernel_returns_its_failure():
    wmod, ctx, _keep = broken_winograd_layer()
    buf = np.zeros(64, np.float32)
    p = wmod.ffi.cast("void *", buf.ctypes.data)
    ptrs = wmod.ffi.new("void *[3]", [p, p, p])
    assert wmod.lib.ncnnc_wino_run(ctx, ptrs) == -1


def test_a_failing_kernel_step_fails_the_plan_run(dn):
    wmod, ctx, keep = broken_winograd_layer()
    ffi = wmod.ffi
    buf = np.zeros(64, np.float32)
    mem = dn.memory(dn.md([64], "a"), buf.ctypes.data)
    fn = int(ffi.cast("uintptr_t", ffi.addressof(wmod.lib, "ncnnc_wino_run")))
    steps = dnnl.Steps(dn)
    steps.add(dnnl.Kernel(fn, int(ffi.cast("uintptr_t", ctx)), (ctx, keep)), [(dnnl.ARG_SRC, mem)] * 3)
    steps.seal()
    with pytest.raises(DnnlError, match=r"step 0 failed \(-1000\)"):
        dnnl.Runner(dn).run(steps, 1, [])


def test_the_extract_reports_a_failed_step(dn, monkeypatch, caplog):
    """A plan whose run raises: the extract returns non-zero with the reason logged."""
    import ncnn_c
    from ncnn_c.net.native import plan as plan_mod

    net = ncnn_c.Net()
    net.opt.num_threads = 1
    assert net.load_param_mem(PARAM) == 0
    net.load_model_mem(b"")  # no weights: ReLU and Sigmoid
    x = ncnn_c.Mat(np.linspace(-1, 1, 4 * 8 * 8, dtype=np.float32).reshape(4, 8, 8))
    ex = net.create_extractor()
    ex.input("in", x)
    assert ex.extract("out")[0] == 0  # records the plan
    ex = net.create_extractor()
    ex.input("in", x)
    assert ex.extract("out")[0] == 0  # runs it

    def fail(*_a, **_k):
        raise DnnlError("native plan: step 0 failed (-1000)")

    monkeypatch.setattr(plan_mod.NativePlan, "run", fail)
    ex = net.create_extractor()
    ex.input("in", x)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _out = ex.extract("out")
    assert ret != 0
    assert "step 0 failed" in caplog.text


PARAM = """7767517
3 3
Input in 0 1 in 0=8 1=8 2=4
ReLU relu 1 1 in r
Sigmoid sig 1 1 r out
"""
