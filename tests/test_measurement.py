"""How figures are measured: validation timed apart after a device sync, GPU energy from the
board's counter on the GPUs used, thread settings in effect, the process's own CPU %, the schema."""

import json
import os
import statistics
import sys
import textwrap
import threading
import time
import types

import numpy as np
import pytest
from support import in_fresh_python

from helpers.data import loaders as data
from helpers.measure import energy, framework_memory, nvml, sampler, timing
from helpers.point import device
from helpers.point.record_figures import fit_figures
from helpers.point.session import Point
from helpers.record import schema
from helpers.record.reader import read_records
from helpers.record.writer import write_record

INSTALLED = [b for b in ("tensorflow", "jax", "torch") if device.backend_installed(b)]

# ---------------------------------------------------------------- 1. validation vs training time


def test_epoch_clock_waits_for_the_device_before_the_validation_window():
    """An async backend: 5 s of training still queued when validation starts; the clock must wait."""
    now = [0.0]
    queued = [0.0]

    def sync():  # the device finishes what was dispatched
        now[0] += queued[0]
        queued[0] = 0.0

    clock = timing.EpochClock(sync=sync, printer=lambda *_: None, clock=lambda: now[0])
    for epoch in range(2):
        clock.epoch_begin()
        now[0] += 0.1  # dispatching the steps returns at once...
        queued[0] = 5.0  # ...leaving the work queued on the device
        clock.test_begin()
        now[0] += 1.0  # validation
        clock.test_end({"val_loss": 0.5})
        clock.epoch_end(epoch, {"loss": 1.0})
    assert clock.train_s == pytest.approx([5.1, 5.1])
    assert clock.val_s == pytest.approx([1.0, 1.0])
    assert clock.epoch_s == pytest.approx([6.1, 6.1])


_VALIDATION = """
import json
from helpers.params import COMMON_DEFAULTS
from helpers.point.session import begin
from helpers.workloads import get

out, model = {}, None
for n_val in (0, 64, 0):
    prm = {**COMMON_DEFAULTS, **get("cnn_mnist").defaults, "workload": "cnn_mnist", "backend": "jax",
           "device": "cpu", "batch_size": 64, "n_train": 128, "n_val": n_val, "epochs": 3,
           "min_steady_s": 1e-6, "data_source": "synthetic", "output_dir": OUT}
    pt = begin(prm)
    import keras  # noqa: E402
    pt.verify()
    pt.load_data()
    model = model or pt.build_model()  # one compiled model: the runs differ only by the validation
    pt.fit(model)
    rec = pt.finish()
    out.setdefault(n_val, []).append({k: rec[k] for k in ("samples_per_s", "epoch_s", "val_s",
                                                         "epoch_with_val_s", "epoch_total_s")})
print("RESULT" + json.dumps(out))
"""


@pytest.mark.xdist_group("timing")  # a wall-clock bound: one such test at a time
@pytest.mark.skipif("jax" not in INSTALLED, reason="JAX not installed")
def test_validation_does_not_eat_the_training_time_on_jax(tmp_path):
    """JAX dispatches asynchronously: samples/s with validation on equals samples/s without it.

    Before the fix the training still queued when ``evaluate()`` started ran inside the validation
    window: cnn_mnist read 338 samples/s without validation and 112,085 with it on this CPU.
    """
    code = f"OUT = {str(tmp_path)!r}\n" + _VALIDATION
    out = in_fresh_python(code, "jax", timed=True)
    res = json.loads(out.split("RESULT", 1)[1])
    without = max(r["samples_per_s"] for r in res["0"])  # the better of two runs: noise on 2 cores
    with_val = res["64"][0]
    print(f"VALIDATION jax cnn_mnist: {without:.0f} samples/s without, {with_val['samples_per_s']:.0f} with")
    assert 0.5 < with_val["samples_per_s"] / without < 2.0, res
    assert all(v > 0 for v in with_val["val_s"]) and all(v == 0 for v in res["0"][0]["val_s"])
    assert len(with_val["epoch_with_val_s"]) == len(with_val["epoch_s"]) == 2
    for whole, train, val in zip(with_val["epoch_with_val_s"], with_val["epoch_s"], with_val["val_s"][1:]):
        assert whole == pytest.approx(train + val)
        assert val < train  # 64 validation images cost less than 128 training ones
    assert with_val["epoch_total_s"][1:] == with_val["epoch_with_val_s"]


# ---------------------------------------------------------------- 2. energy from the counter


class FakeNVML(types.ModuleType):
    """A ``pynvml`` with two GPUs whose energy counters (mJ) and power the test sets."""

    class NVMLError(Exception):
        pass

    def __init__(self, counter_supported=True):
        super().__init__("pynvml")
        self.uuids = ["GPU-aaaa1111-0000", "GPU-bbbb2222-0000"]
        self.energy_mj = [10_000_000.0, 20_000_000.0]
        self.power_mw = [300_000, 100_000]
        self.idle_rate_w = None  # when set, the counter also grows at this power (W) in real time
        self._t0 = time.perf_counter()
        self.counter_supported = counter_supported

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("handle", i)

    def nvmlDeviceGetUUID(self, h):
        return self.uuids[h[1]]

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.counter_supported:
            raise self.NVMLError("Not Supported")
        extra = 0.0 if self.idle_rate_w is None else self.idle_rate_w * (time.perf_counter() - self._t0) * 1000
        return int(self.energy_mj[h[1]] + extra)

    def nvmlDeviceGetPowerUsage(self, h):
        return self.power_mw[h[1]]

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=[90, 40][h[1]])

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=[8, 2][h[1]] * 2**30)


@pytest.fixture
def fake_nvml(monkeypatch):
    nv = FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    return nv


def test_visible_gpus_follow_cuda_visible_devices(fake_nvml):
    assert nvml.visible_gpu_indices(fake_nvml, {}) == [0, 1]
    assert nvml.visible_gpu_indices(fake_nvml, {"CUDA_VISIBLE_DEVICES": ""}) == []
    assert nvml.visible_gpu_indices(fake_nvml, {"CUDA_VISIBLE_DEVICES": "1,0"}) == [1, 0]
    assert nvml.visible_gpu_indices(fake_nvml, {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}) == [1]
    assert nvml.visible_gpu_indices(fake_nvml, {"CUDA_VISIBLE_DEVICES": "bbbb2222-0000"}) == [1]
    assert nvml.visible_gpu_indices(fake_nvml, {"CUDA_VISIBLE_DEVICES": "1,7,0"}) == [1]  # CUDA stops


def _point_for_collect(params, clock, smp):
    """A Point whose fit has run (what ``fit_figures`` needs), without a framework in this process."""
    pt = Point.__new__(Point)
    pt.params, pt.timer, pt.sampler, pt.data = params, clock, smp, None
    pt.record = schema.empty_record(params, "p1")
    pt.record.update(device_used="gpu", n_train=params["n_train"])
    return pt


def _drive_epochs(clock, nv, used, per_epoch):
    """Three epochs; the counter of GPU ``used`` grows by (train mJ, validation mJ) per epoch, the
    other GPU's by much more (it is not the point's)."""
    for epoch, (train_mj, val_mj) in enumerate(per_epoch):
        clock.epoch_begin()
        nv.energy_mj[used] += train_mj
        nv.energy_mj[1 - used] += 10 * train_mj
        time.sleep(0.02)
        clock.test_begin()
        nv.energy_mj[used] += val_mj
        time.sleep(0.01)
        clock.test_end({})
        clock.epoch_end(epoch, {"loss": 1.0})


def test_energy_is_the_counter_difference_on_the_gpus_used(fake_nvml, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb2222")  # the point sees NVML's GPU 1 only
    monkeypatch.setattr(framework_memory, "framework_peak_memory", lambda backend, dev: {})
    monkeypatch.setattr(energy, "ENERGY_MIN_WINDOW_S", 0.0)  # epochs of 20 ms here
    fake_nvml.idle_rate_w = 60.0  # the counter grows at 60 W while idle
    smp = sampler.Sampler(interval=0.01)
    assert smp.gpu_indices == [1] and smp.energy_counter
    idle = smp.measure_idle(0.3)
    assert idle["idle_method"] == "nvml_energy_counter" and idle["idle_power_w"] == pytest.approx(60, rel=0.1)
    fake_nvml.idle_rate_w = None  # from here on only the test moves the counter
    clock = timing.EpochClock(probe=smp.energy_mj, printer=lambda *_: None)
    with smp:
        _drive_epochs(clock, fake_nvml, 1, [(900_000, 50_000), (400_000, 30_000), (420_000, 30_000)])
    params = {"workload": "cnn_cifar10", "backend": "jax", "device": "gpu", "batch_size": 10, "n_train": 100}
    pt = _point_for_collect(params, clock, smp)
    fit_figures(pt)
    rec = pt.record
    assert rec["energy_method"] == "nvml_energy_counter" and rec["gpu_indices_used"] == [1]
    assert rec["first_epoch_energy_j"] == pytest.approx(900.0)
    assert rec["energy_j_epochs"] == pytest.approx([400.0, 420.0])  # the training part only
    assert rec["energy_with_val_j_epochs"] == pytest.approx([430.0, 450.0])
    assert rec["energy_j_per_epoch"] == pytest.approx(410.0)
    idle_w = rec["idle_power_w"]
    expected = [e - idle_w * t for e, t in zip([400.0, 420.0], rec["epoch_s"])]
    assert rec["energy_above_idle_j_per_epoch"] == pytest.approx(sum(expected) / 2)
    # utilisation over the used GPU only: its 100 W and 2 GiB, not the sum over both GPUs
    util = rec["utilisation"]
    assert util["power_w_mean"] == pytest.approx(100.0) and util["gpu_mem_mb_max"] == pytest.approx(2048)
    assert util["gpu_pct_max"] == pytest.approx(40.0) and util["gpu_indices"] == [1]


def test_energy_falls_back_to_mean_power_and_says_so(monkeypatch):
    nv = FakeNVML(counter_supported=False)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(framework_memory, "framework_peak_memory", lambda backend, dev: {})
    monkeypatch.setattr(energy, "ENERGY_MIN_WINDOW_S", 0.0)
    smp = sampler.Sampler(interval=0.01)
    assert smp.gpu_indices == [0] and not smp.energy_counter and smp.energy_mj() is None
    idle = smp.measure_idle(0.2)
    assert idle == {"idle_power_w": pytest.approx(300.0), "idle_window_s": pytest.approx(0.2, abs=0.15),
                    "idle_method": "mean_power"}
    clock = timing.EpochClock(probe=None, printer=lambda *_: None)
    with smp:
        _drive_epochs(clock, nv, 0, [(0, 0)] * 3)
    params = {"workload": "cnn_cifar10", "backend": "jax", "device": "gpu", "batch_size": 10, "n_train": 100}
    pt = _point_for_collect(params, clock, smp)
    fit_figures(pt)
    rec = pt.record
    assert rec["energy_method"] == "mean_power"
    assert rec["energy_j_per_epoch"] == pytest.approx(300.0 * rec["median_epoch_s"])
    assert "energy_with_val_j_epochs" not in rec


def _stepped_counter_marks(epoch_s: float, n_epochs: int, power_w: float, step_s: float = 0.1):
    """Epoch marks from a counter that, like an H100's, moves once every ``step_s`` by that step's energy:
    back-to-back epochs of ``epoch_s`` at ``power_w``, starting at a phase of a third of a step."""
    def counter(t):
        return int((t + step_s / 3) / step_s) * power_w * step_s * 1000.0  # mJ
    return [{"begin": counter(i * epoch_s), "test_begin": None, "test_end": None, "end": counter((i + 1) * epoch_s)}
            for i in range(n_epochs)]


def test_energy_of_short_epochs_is_the_window_over_its_epochs_not_a_median():
    """27-ms epochs at 150 W on a counter with 0.1-s steps: most epochs read 0 J, a few a whole step
    (15 J). The median epoch (schema 2's figure) is 0 J; the window over its epochs is within 5% of the
    true 4.05 J."""
    marks = _stepped_counter_marks(0.027, 80, 150.0)
    train_s = [0.027] * 80
    per_epoch = [(m["end"] - m["begin"]) / 1000 for m in marks[1:]]
    assert sorted(set(round(e, 6) for e in per_epoch)) == [0.0, 15.0]
    assert statistics.median(per_epoch) == 0.0  # what the old figure was
    out = energy.energy_figures(marks, train_s, idle_power_w=70.0)
    assert out["energy_method"] == "nvml_energy_counter"
    assert out["energy_j_per_epoch"] == pytest.approx(150.0 * 0.027, rel=0.05)
    assert out["energy_above_idle_j_per_epoch"] == pytest.approx(80.0 * 0.027, rel=0.1)
    assert out["energy_window_s"] == pytest.approx(79 * 0.027)


def test_energy_needs_a_window_the_counter_can_resolve():
    marks = _stepped_counter_marks(0.027, 10, 150.0)  # 9 steady epochs: 0.24 s
    out = energy.energy_figures(marks, [0.027] * 10, idle_power_w=70.0, mean_power_w=150.0)
    assert "energy_j_per_epoch" not in out and out["energy_window_s"] == pytest.approx(0.243)
    assert "shorter than 1 s" in out["energy_reason"] and "min_steady_s" in out["energy_reason"]
    assert out["idle_power_w"] == 70.0  # idle power is still said


def test_cpu_point_samples_no_gpu(fake_nvml, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # what device.force sets for a CPU point
    smp = sampler.Sampler()
    assert not smp.has_gpu and smp.energy_mj() is None and smp.measure_idle(0.1) == {}


# ---------------------------------------------------------------- 3. thread settings, fingerprint

_THREADS = """
import json
from helpers.params import COMMON_DEFAULTS
from helpers.point.session import begin
from helpers.workloads import get

prm = {**COMMON_DEFAULTS, **get("mlp_mnist").defaults, "workload": "mlp_mnist", "backend": BACKEND,
       "device": "cpu", "threads": 1, "epochs": 2, "min_steady_s": 1e-6, "output_dir": OUT}
pt = begin(prm)
import keras  # noqa: E402
pt.verify()
rec = pt.finish()
print("RESULT" + json.dumps({"threads": rec["threads_in_effect"], "fp": rec["fingerprint"]}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and at least 2 cores")
@pytest.mark.parametrize("backend", INSTALLED)
def test_threads_in_effect_and_the_machine_before_narrowing(tmp_path, backend):
    code = f"OUT = {str(tmp_path)!r}\nBACKEND = {backend!r}\n" + _THREADS
    res = json.loads(in_fresh_python(code, backend, timed=True).split("RESULT", 1)[1])
    thr, fp = res["threads"], res["fp"]
    assert thr["backend"] == backend and thr["intra_op"] == 1 and thr["cpu_affinity"] == 1, thr
    assert thr["source"] and thr["env"]["OMP_NUM_THREADS"] == "1"
    if backend == "tensorflow":
        assert thr["tf_reports"]["intra_op"] == 1  # TF itself says 1, not "0"
    assert fp["cpu_logical"] == os.cpu_count()  # the machine a user rents
    assert fp["cpu_available"] == len(os.sched_getaffinity(0))  # before the point narrowed it
    assert fp["cpu_allowed"] == 1


# ---------------------------------------------------------------- 4. the process's own CPU %


def test_sampler_records_the_process_cpu_apart_from_the_system():
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            sum(range(1000))

    with sampler.Sampler(interval=0.05) as smp:
        t = threading.Thread(target=spin)
        t.start()
        time.sleep(0.5)
        stop.set()
        t.join()
    summ = smp.summary()
    for key in ("cpu_pct_mean", "cpu_pct_max", "proc_cpu_pct_mean", "proc_cpu_pct_max"):
        assert key in summ, summ
    assert all("proc_cpu_pct" in s and "cpu_pct" in s for s in smp.samples)
    assert summ["proc_cpu_pct_max"] > 30  # one busy thread is ~100 (100 per core)
    assert 0 <= summ["cpu_pct_max"] <= 100  # system-wide, 0-100 over all cores
    doc = sampler.__doc__
    assert "proc_cpu_pct" in doc and "cpu_pct" in doc and "100 per busy core" in doc


# ---------------------------------------------------------------- 5. synthetic data said as it is


def test_synthetic_images_are_said_to_be_easy():
    """The docstrings say what the data is: a nearest-class-mean classifier separates it."""
    x, y = data.synthetic_images(1000, (32, 32, 3), 10, seed=1)
    xv, yv = data.synthetic_images(500, (32, 32, 3), 10, seed=2)
    means = np.stack([x[y == k].reshape(-1, 3072).mean(0) for k in range(10)])
    acc = (((xv.reshape(-1, 1, 3072) - means[None]) ** 2).sum(-1).argmin(1) == yv).mean()
    assert acc > 0.95
    for text in (data.__doc__, data.synthetic_images.__doc__):
        assert "not trivially" not in text and "easy" in text.lower()


# ---------------------------------------------------------------- 6. the schema


def test_schema_bumped_and_older_records_still_read(tmp_path):
    assert schema.SCHEMA == 4
    p = {"workload": "cnn_cifar10", "backend": "jax", "device": "cpu"}
    new = schema.empty_record(p, "new")
    new["status"] = "ok"
    assert new["schema"] == 4
    write_record(new, tmp_path)
    (tmp_path / "old.json").write_text(json.dumps({**new, "point_id": "old", "schema": 1}))
    (tmp_path / "two.json").write_text(json.dumps({**new, "point_id": "two", "schema": 2}))
    (tmp_path / "three.json").write_text(json.dumps({**new, "point_id": "three", "schema": 3}))
    (tmp_path / "future.json").write_text(json.dumps({**new, "point_id": "future", "schema": 5}))
    recs, skipped = read_records([tmp_path])
    assert sorted(r["point_id"] for r in recs) == ["new", "old", "three", "two"]
    assert [os.path.basename(s[0]) for s in skipped] == ["future.json"]


def test_module_docstrings_name_the_new_keys():
    for key in ("epoch_with_val_s", "energy_above_idle_j_per_epoch", "idle_power_w", "gpu_indices_used",
                "threads_in_effect", "cpu_available"):
        assert key in schema.__doc__, key
    assert textwrap.dedent(timing.__doc__).count("sync") >= 2


# ---------------------------------------------------------------- 7. the timing window (min_steady_s)


def _epochs(clock, now, seconds, n_max=1000):
    """Run epochs of the given length (s) until ``clock.done()``; the number of epochs run."""
    for epoch in range(n_max):
        clock.epoch_begin()
        now[0] += seconds[min(epoch, len(seconds) - 1)]
        clock.epoch_end(epoch, {"loss": 1.0})
        if clock.done():
            return epoch + 1
    raise AssertionError("never done")


def test_window_extends_training_until_the_steady_epochs_add_up():
    now = [0.0]
    lines = []
    clock = timing.EpochClock(printer=lines.append, clock=lambda: now[0], min_epochs=3, min_steady_s=1.0)
    n = _epochs(clock, now, [5.0, 0.3])  # a 5-s compile epoch, then 0.3-s epochs: 4 steady ones make 1.2 s
    assert n == 5 and clock.stopped_by == "window"
    assert clock.steady_s == pytest.approx(1.2)  # the compile epoch is never in the window


def test_window_never_cuts_the_epochs_asked_for():
    now = [0.0]
    clock = timing.EpochClock(printer=lambda *_: None, clock=lambda: now[0], min_epochs=4, min_steady_s=0.5)
    assert _epochs(clock, now, [1.0, 2.0]) == 4 and clock.stopped_by == "epochs"


def test_window_stops_before_the_deadline_and_says_so():
    now = [0.0]
    clock = timing.EpochClock(printer=lambda *_: None, clock=lambda: now[0], min_epochs=2, min_steady_s=100.0,
                              deadline=10.0)
    n = _epochs(clock, now, [1.0, 2.0])
    assert clock.stopped_by == "deadline" and now[0] <= 10.0 and n == 5  # 1 + 4 x 2 s; a 5th would pass 10 s


def test_processes_of_one_point_stop_after_the_same_epoch():
    """Two processes' clocks, the second's epochs a little slower: alone, they would stop after different epochs,
    and the one that trains on would wait in the step's collective for ever (a point hung so on two H200s);
    through ``agree`` (every process's decision gathered, as process_group.agree_stop does) both stop after the
    first one is done."""
    nows, clocks = [[0.0], [0.0]], []  # process 1's epochs a little slower: its window fills in fewer of them
    for i in range(2):
        clocks.append(timing.EpochClock(printer=lambda *_: None, clock=lambda i=i: nows[i][0], min_epochs=3,
                                        min_steady_s=3.0))
    alone = []
    for i, step in enumerate((0.100, 0.104)):
        c = timing.EpochClock(printer=lambda *_: None, clock=lambda i=i: nows[i][0], min_epochs=3, min_steady_s=3.0)
        alone.append(_epochs(c, nows[i], [6.0, step]))
    assert alone == [32, 30]  # the fault the agreement mends: alone, process 0 trains two epochs more
    decided = {}
    for epoch in range(1000):
        mine = []
        for i, step in enumerate((0.100, 0.104)):
            clocks[i].epoch_begin()
            nows[i][0] += 6.0 if epoch == 0 else step
            clocks[i].epoch_end(epoch, {"loss": 1.0})
            mine.append(clocks[i]._done())
        gathered = any(mine)
        decided = {i: clocks[i].done(agree=lambda _mine, g=gathered: g) for i in range(2)}
        if any(decided.values()):
            break
    assert decided == {0: True, 1: True} and epoch + 1 == 30
    assert [c.stopped_by for c in clocks] == ["another process", "window"]


def test_window_prints_at_most_a_line_a_second_past_the_epochs_asked_for():
    now = [0.0]
    lines = []
    clock = timing.EpochClock(printer=lines.append, clock=lambda: now[0], min_epochs=2, min_steady_s=3.0)
    n = _epochs(clock, now, [1.0, 0.01])
    assert 301 <= n <= 302 and 2 <= len(lines) <= 2 + 4  # 300 x 0.01 s: float sums may need one more
    assert "steady window" in lines[-1]


_WINDOW = """
import json
from helpers.params import COMMON_DEFAULTS
from helpers.point.session import begin
from helpers.workloads import get

prm = {**COMMON_DEFAULTS, **get("mlp_mnist").defaults, "workload": "mlp_mnist", "backend": BACKEND,
       "device": "cpu", "batch_size": 64, "n_train": 256, "epochs": 2, "min_steady_s": 2.0,
       "data_source": "synthetic", "output_dir": OUT}
pt = begin(prm)
import keras  # noqa: E402
pt.verify()
pt.load_data()
pt.build_model()
pt.fit()
rec = pt.finish()
print("RESULT" + json.dumps({k: rec[k] for k in ("epochs_run", "steady_s", "epoch_s", "window_stopped_by",
                                                 "first_epoch_s", "epochs", "params")}))
"""


@pytest.mark.xdist_group("timing")  # a wall-clock bound: one such test at a time
@pytest.mark.parametrize("backend", INSTALLED[-1:])
def test_a_real_point_trains_on_until_its_window_is_filled(tmp_path, backend):
    """The same model goes on training past `epochs` (2) until its steady epochs add up to 2 s (an epoch of 4
    small steps takes well under that, also on a loaded 2-core machine)."""
    out = in_fresh_python(f"OUT = {str(tmp_path)!r}\nBACKEND = {backend!r}\n" + _WINDOW, backend, timed=True)
    rec = json.loads(out.split("RESULT", 1)[1])
    assert rec["epochs"] == 2 and rec["params"]["min_steady_s"] == 2.0
    assert rec["epochs_run"] > 2 and rec["window_stopped_by"] == "window"
    assert len(rec["epoch_s"]) == rec["epochs_run"] - 1  # the compile epoch apart
    assert rec["steady_s"] == pytest.approx(sum(rec["epoch_s"])) and rec["steady_s"] >= 2.0
    assert rec["steady_s"] - rec["epoch_s"][-1] < 2.0  # it stopped as soon as the window was filled


@pytest.mark.parametrize("value", [0, -1, 0.0, "2", True, None, float("nan"), float("inf")])
def test_a_bad_window_is_refused_before_anything_runs(tmp_path, value):
    import yaml

    from helpers import grid

    g = tmp_path / "g.yaml"
    g.write_text(yaml.safe_dump({"points": [{"workload": "mlp_mnist", "backend": "jax", "device": "cpu",
                                             "min_steady_s": value}]}))
    with pytest.raises(grid.GridError, match="min_steady_s.*allowed: int or float > 0"):
        grid.expand(g)


def test_idle_power_is_measured_while_the_data_is_made(fake_nvml, monkeypatch):
    """The idle window opens before the data is made and closes at fit: no waiting when that took >= 1 s,
    the rest of the second waited out when it was shorter; the power is the counter's difference."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    fake_nvml.idle_rate_w = 80.0
    smp = sampler.Sampler(interval=0.01)
    smp.idle_begin()
    time.sleep(0.3)  # "making the data"
    t0 = time.perf_counter()
    idle = smp.idle_end(0.2)  # the window is already longer than 0.2 s: no wait
    assert time.perf_counter() - t0 < 0.15
    assert idle["idle_method"] == "nvml_energy_counter" and idle["idle_power_w"] == pytest.approx(80, rel=0.1)
    assert idle["idle_window_s"] >= 0.3
    smp.idle_begin()
    idle = smp.idle_end(0.25)  # a short window: waited out to 0.25 s
    assert idle["idle_window_s"] >= 0.25 and idle["idle_power_w"] == pytest.approx(80, rel=0.1)
    assert smp.idle_end(0.05)["idle_window_s"] >= 0.05  # no window open: measured there and then


def test_idle_power_once_per_run_is_used_by_the_points_gpus(fake_nvml, monkeypatch):
    """The runner measures every GPU's idle power once (energy counter) and exports it; a point on GPU 1
    takes GPU 1's figure without waiting; a point whose GPU is not covered measures its own."""
    fake_nvml.idle_rate_w = 50.0  # both counters grow at 50 W
    run = sampler.measure_gpus_idle(0.2)
    assert set(run["per_gpu_w"]) == set(fake_nvml.uuids) and run["method"] == "nvml_energy_counter"
    assert all(w == pytest.approx(50, rel=0.15) for w in run["per_gpu_w"].values())
    monkeypatch.setenv(sampler.IDLE_ENV, json.dumps({**run, "per_gpu_w": {fake_nvml.uuids[1]: 77.0}}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    smp = sampler.Sampler(interval=0.01)
    t0 = time.perf_counter()
    idle = smp.idle_from_run()
    assert time.perf_counter() - t0 < 0.1 and idle["idle_power_w"] == 77.0 and "once per run" in idle["idle_method"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # GPU 0 is not in the run's figure
    assert sampler.Sampler(interval=0.01).idle_from_run() == {}
    monkeypatch.setenv(sampler.IDLE_ENV, "not json")
    assert sampler.Sampler(interval=0.01).idle_from_run() == {}
