"""The profile knob: the trace's breakdown from literal traces, and real points profiled on the CPU."""

import gzip
import json

import pytest
from support import in_fresh_python

from helpers import params
from helpers.measure import trace_breakdown as tb
from helpers.measure import trace_events as te
from helpers.point import profiling
from helpers.record.ids import point_id
from helpers.record.reader import read_records
from tests.test_measurement import INSTALLED

W = tb.WINDOW


def _ev(name, ts, dur, process="p", thread="t", cat=""):
    return te.Ev(process, thread, name, cat, float(ts), float(dur))


# ---------------------------------------------------------------- 1. the breakdown from literal traces


def test_gpu_parts_partition_the_window_kernels_first_then_copies_then_the_host():
    """Two steps in a window of 1000 us: kernels 0-300 and 500-700 (overlapping each other at 250-300), a copy at
    280-400 (80 us of it under a kernel), nothing from 700 on."""
    gpu, stream = "/device:GPU:0", "Stream #14(Compute)"
    events = [_ev(W, 0, 1000, "/host:CPU", "python"),
              _ev("gemm", 0, 300, gpu, stream), _ev("relu", 250, 50, gpu, "Stream #16(Compute)"),
              _ev("gemm", 500, 200, gpu, stream),
              _ev("MemcpyH2D", 280, 120, gpu, "Stream #15(MemcpyH2D)"),
              _ev("XLA op summary", 0, 1000, gpu, "XLA Ops"),  # a derived line: not raw device activity
              _ev("ignored", 2000, 100, gpu, stream)]  # outside the window
    b = tb.breakdown(events, steps=2, device="gpu", source="xla")
    assert b["step_ms"] == pytest.approx(0.5)
    assert b["parts_ms"] == pytest.approx({"device_busy": 0.25, "copies": 0.05, "host_only": 0.2})
    assert sum(b["parts_ms"].values()) == pytest.approx(b["step_ms"])
    assert b["shares"] == pytest.approx({"device_busy": 0.5, "copies": 0.1, "host_only": 0.4})
    assert b["h2d_ms"] == pytest.approx(0.06)
    assert [t["name"] for t in b["top"]] == ["gemm", "relu"]
    assert b["top"][0]["ms"] == pytest.approx(0.25) and b["top"][0]["calls_per_step"] == 1.0


@pytest.mark.parametrize("name, family", [
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16", "matmul_conv"), ("gemm_fusion_dot_3", "matmul_conv"),
    ("void cudnn::engines_precompiled::convertTensor_kernel<float>", "layout"),
    ("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, MeanOps>>", "reduce"),
    ("input_reduce_select_fusion_1", "reduce"), ("loop_add_fusion", "elementwise"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", "elementwise"),
    ("void at::native::unrolled_elementwise_kernel<direct_copy_kernel_cuda>", "elementwise"), ("foo", "other"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "collective"),
    ("all-reduce-start.3", "collective")])
def test_kernels_fall_into_families(name, family):
    assert tb.family(name) == family


def test_gpu_kernel_families_add_each_kernels_time_in_the_window():
    gpu, s = "/device:GPU:0", "Stream #1"
    events = [_ev(W, 0, 100, "/host:CPU", "python"), _ev("sm90_gemm", 0, 30, gpu, s),
              _ev("loop_add_fusion", 30, 20, gpu, s), _ev("reduce_kernel", 90, 20, gpu, s),  # half in the window
              _ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 10, gpu, s)]
    b = tb.breakdown(events, steps=1, device="gpu")
    fam = b["kernel_families_ms"]
    assert fam == pytest.approx({"collective": 0.01, "layout": 0, "matmul_conv": 0.03, "reduce": 0.01,
                                 "elementwise": 0.02, "other": 0})
    # one device's collectives a step: the family's time over the GPUs the point used
    assert tb.collective_per_device(b, 2)[0] == pytest.approx(0.005)
    old = {"kernel_families_ms": {"reduce": 9.0}, "top": [{"name": "ncclDevKernel_AllReduce", "ms": 8.0,
                                                            "calls_per_step": 424.0}, {"name": "gemm", "ms": 1.0}]}
    assert tb.collective_per_device(old, 4) == (2.0, 106.0)  # a breakdown made before the family: its top kernels
    assert tb.collective_per_device({"kernel_families_ms": {"reduce": 1.0}, "top": []}, 1) == (None, None)


def test_torch_categories_and_host_ops_while_the_device_idles():
    events = [_ev(W, 0, 100, cat="user_annotation"),
              _ev("aten::linear", 0, 40, cat="cpu_op"), _ev("aten::addmm", 5, 30, cat="cpu_op"),
              _ev("ampere_sgemm", 30, 20, "gpu", "stream 7", cat="kernel"),
              _ev("Memcpy HtoD (Pageable -> Device)", 60, 10, "gpu", "stream 7", cat="gpu_memcpy")]
    b = tb.breakdown(events, steps=1, device="gpu", source="torch")
    assert b["parts_ms"] == pytest.approx({"device_busy": 0.02, "copies": 0.01, "host_only": 0.07})
    assert b["h2d_ms"] == pytest.approx(0.01)
    assert b["host_ops_while_idle_ms"] == pytest.approx(0.03)  # the host's ops at 0-30 while no kernel ran
    assert [t["name"] for t in b["top"]] == ["ampere_sgemm"]


def test_cpu_points_split_framework_ops_from_python_with_own_times():
    """A CPU point: ops on the framework's threads are the busy part (union over threads), the rest is Python;
    nested ops count their own time in the top list; the executor's wrappers and waits are not ops."""
    events = [_ev(W, 0, 100, "/host:CPU", "python"),
              _ev("ThunkExecutor::Execute", 10, 50, "/host:CPU", "tf_XLAEigen/1"),
              _ev("dot", 10, 30, "/host:CPU", "tf_XLAEigen/1"), _ev("fusion", 45, 10, "/host:CPU", "tf_XLAEigen/1"),
              _ev("dot.1", 20, 25, "/host:CPU", "tf_XLAEigen/2"),
              _ev("ThunkExecutor::Execute (wait for completion)", 0, 90, "/host:CPU", "tf_XLAPjRtCpuClient/3"),
              _ev("H2D Dispatch", 70, 5, "/host:CPU", "tf_XLAPjRtCpuClient/3")]
    b = tb.breakdown(events, steps=1, device="cpu", source="xla")
    assert b["parts_ms"] == pytest.approx({"device_busy": 0.05, "copies": 0.005, "host_only": 0.045})
    names = [t["name"] for t in b["top"]]
    assert names == ["dot", "dot.1", "fusion"]  # the wrapper (ThunkExecutor::Execute) is not listed


def test_self_times_take_the_children_out():
    evs = [_ev("outer", 0, 100), _ev("a", 10, 20), _ev("b", 40, 30), _ev("b.inner", 45, 10)]
    own = {e.name: t for e, t in tb.self_times(evs)}
    assert own == pytest.approx({"outer": 50, "a": 20, "b": 20, "b.inner": 10})


@pytest.mark.parametrize("events, match", [
    ([_ev("gemm", 0, 10, "/device:GPU:0", "Stream #1")], "no 'cgb_profiled_steps' annotation"),
    ([_ev(W, 0, 10)], "no GPU kernel events"),
])
def test_a_trace_without_its_window_or_its_kernels_says_so(events, match):
    with pytest.raises(tb.TraceError, match=match):
        tb.breakdown(events, steps=1, device="gpu")


def test_chrome_traces_read_with_names_and_written_back(tmp_path):
    doc = {"traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": {"name": "Stream #7"}},
        {"ph": "X", "pid": 1, "tid": 7, "name": "k", "ts": 5.5, "dur": 2},
        {"ph": "i", "pid": 1, "tid": 7, "name": "instant", "ts": 1}]}
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    evs = te.read_chrome(path)
    assert evs == [te.Ev("/device:GPU:0", "Stream #7", "k", "", 5.5, 2.0)]
    te.write_chrome(evs, tmp_path / "back.json.gz")
    assert te.read_chrome(tmp_path / "back.json.gz") == evs


# ---------------------------------------------------------------- 2. the knob and the plan


def test_profile_off_keeps_every_point_id():
    p = {**params.COMMON_DEFAULTS, "workload": "mlp_mnist", "backend": "jax", "device": "cpu", "batch_size": 128,
         "epochs": 3, "n_train": 1000}
    without = {k: v for k, v in p.items() if k != "profile"}
    assert p["profile"] is False and params.LATER_DEFAULTS["profile"] is False
    assert point_id(p, "m") == point_id(without, "m")
    assert point_id({**p, "profile": True}, "m") != point_id(p, "m")
    with pytest.raises(params.ParamError, match="profile"):
        params.validate({"profile": "yes"})


@pytest.mark.parametrize("step_s, batches, spe, steps", [
    (None, None, 1, 20), (0.001, None, 1, 20), (0.05, None, 1, 10), (2.0, None, 1, 3), (0.05, 4, 1, 4),
    (0.001, None, 8, 24), (0.001, 12, 8, 8), (0.05, 2, 1, 2)])
def test_profiled_steps_fill_about_half_a_second_within_bounds(step_s, batches, spe, steps):
    assert profiling.plan_steps(step_s, batches, spe) == steps


# ---------------------------------------------------------------- 3. real points on the CPU

_POINT = r"""
import json
from helpers import params, workloads; from helpers.point import profiling
from helpers.point.session import begin

def point(out, profile=True):
    prm = {**params.COMMON_DEFAULTS, **workloads.get("mlp_mnist").defaults, "workload": "mlp_mnist",
           "backend": BACKEND, "device": "cpu", "batch_size": 128, "n_train": 4096, "epochs": 2, "threads": 1,
           "min_steady_s": 1.0, "data_source": "synthetic", "output_dir": out, "profile": profile}
    pt = begin(prm)
    import keras  # noqa: F401
    pt.verify()
    pt.load_data()
    pt.build_model()
    pt.fit()
    return pt.finish()

good = point(OUT + "/good")

class Broken(profiling.PROFILERS[BACKEND]):
    def start(self):
        raise RuntimeError("no profiler here")

profiling.PROFILERS[BACKEND] = Broken
bad = point(OUT + "/bad")
keys = ("status", "step_s", "samples_per_s", "step_breakdown", "step_breakdown_reason", "point_id")
print("RESULT" + json.dumps({"good": {k: good.get(k) for k in keys}, "bad": {k: bad.get(k) for k in keys}}))
"""


@pytest.mark.xdist_group("timing")  # a wall-clock bound: one such test at a time
@pytest.mark.parametrize("backend", [b for b in ("jax", "torch") if b in INSTALLED])
def test_mlp_mnist_profiled_on_the_cpu_adds_up_to_its_step(tmp_path, backend):
    """The breakdown's parts add up to the step the clock measured around the profiled steps, within 10%; the
    trace lies beside the record; a profiler that fails leaves the timings and says why."""
    out = in_fresh_python(f"OUT = {str(tmp_path)!r}\nBACKEND = {backend!r}\n" + _POINT, backend, timed=True)
    res = json.loads(out.split("RESULT", 1)[1])
    good, bad = res["good"], res["bad"]
    b = good["step_breakdown"]
    assert good["status"] == "ok" and b is not None, good["step_breakdown_reason"]
    parts = b["parts_ms"]
    total = sum(parts.values())
    print(f"PROFILE {backend} mlp_mnist cpu: parts {parts} = {total:.3f} ms; clock {b['clock_step_ms']:.3f} ms "
          f"(profiled), {b['unprofiled_step_ms']:.3f} ms (unprofiled), timed step {b['timed_step_ms']:.3f} ms; "
          f"overhead x{b['profiler_overhead']:.3f}; top {[t['name'] for t in b['top']]}")
    assert abs(total - b["clock_step_ms"]) <= 0.10 * b["clock_step_ms"]
    assert parts["device_busy"] > 0 and parts["host_only"] > 0
    assert set(parts) == {"device_busy", "copies", "host_only"} and sum(b["shares"].values()) == pytest.approx(1)
    assert 1 <= len(b["top"]) <= 5 and b["top"][0]["ms"] >= b["top"][-1]["ms"]
    assert b["profiler_overhead"] > 0 and b["steps"] >= profiling.MIN_STEPS
    trace = tmp_path / "good" / b["trace"]["path"]
    assert trace.is_dir() and b["trace"]["bytes"] <= profiling.TRACE_MAX_BYTES
    assert all((trace / f).is_file() for f in b["trace"]["files"])
    assert not list(trace.rglob("*.json"))  # nothing the report would read as a record
    recs, skipped = read_records([tmp_path / "good", tmp_path / "bad"])
    assert len(recs) == 2 and not skipped
    # the broken profiler: the timed figures stand, the breakdown is null with the reason
    assert bad["status"] == "ok" and bad["step_s"] > 0 and bad["samples_per_s"] > 0
    assert bad["step_breakdown"] is None and "no profiler here" in bad["step_breakdown_reason"]
