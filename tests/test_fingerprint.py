"""The fingerprint tells hosts and leases apart: CPU identity and flags from
``/proc/cpuinfo`` text, a hashed boot id, the GPUs' clocks and power limit from NVML (a fake one here),
the suite's own git commit only, the host calibration, and the report's provenance grouped by lease.
CPU only; no timing assertion beyond "positive" (a shared 2-core machine is noisy)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from helpers.measure import boot, calibration, machine
from helpers.measure import fingerprint as F
from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic

X86 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile amx_int8
vmx flags\t: vnmi ept

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
stepping\t: 1
flags\t\t: fpu sse2
"""
ARM = """processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes sve
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
CPU revision\t: 1
"""


# ------------------------------------------------------------------ CPU identity


def test_cpu_fields_come_from_the_first_processor_of_cpuinfo_text():
    fields = F.parse_cpuinfo(X86)
    assert fields["vendor_id"] == "GenuineIntel" and fields["model name"].endswith("8480+")
    ident = F.cpu_identity(fields)
    assert ident == {"cpu_vendor": "GenuineIntel", "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8,
                     "cpu_flags": ["avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"]}
    # only the flags that matter, in CPU_FLAGS' order; 'avx' and 'avx512bw' are not among them
    assert set(ident["cpu_flags"]) <= set(F.CPU_FLAGS)
    arm = F.cpu_identity(F.parse_cpuinfo(ARM))
    assert arm == {"cpu_vendor": "0x41", "cpu_family": 8, "cpu_model_number": 0xD40, "cpu_stepping": 1,
                   "cpu_flags": []}  # flags recorded, none of the x86 ones present: [] (not None)
    bare = F.cpu_identity(F.parse_cpuinfo("processor : 0\nvendor_id : Odd\nmodel : x1\n"))
    assert bare["cpu_model_number"] == "x1" and bare["cpu_family"] is None and bare["cpu_flags"] is None
    assert F.cpu_identity({}) == dict.fromkeys(("cpu_vendor", "cpu_family", "cpu_model_number", "cpu_stepping",
                                                "cpu_flags"))


def test_this_machines_cpu_is_recorded_and_the_machine_key_is_unchanged(monkeypatch):
    fp = F.fingerprint()
    real = Path(F.CPUINFO)
    if real.is_file() and "flags" in real.read_text():
        assert isinstance(fp["cpu_vendor"], str) and isinstance(fp["cpu_flags"], list)
        # the machine key's flags hash is what it always was: every line of the old reader, kept
        for line in real.read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = sorted(set(line.split(":", 1)[1].split()))
                assert machine.cpu_flags() == hashlib.sha256(" ".join(flags).encode()).hexdigest()[:12]
                break
    # one definition of the package version, shared
    assert machine.package_version is F.package_version and not hasattr(machine, "_version")
    # neither a new boot nor another calibration changes the key point ids (and resume) rest on
    machine.machine_key.cache_clear()
    before = machine.machine_key()
    machine.machine_key.cache_clear()
    other = calibration.export({"dispatch_mcalls_per_s": 1.0, "when": "x"})
    monkeypatch.setenv(calibration.ENV, other[calibration.ENV])
    monkeypatch.setattr(F, "boot_id", lambda path=boot.BOOT_ID: "0123456789ab")
    try:
        assert machine.machine_key() == before
        assert "0123456789ab" not in before and not (fp["boot_id"] and fp["boot_id"] in before)
        assert "0123456789ab" not in F.host_key()
    finally:
        machine.machine_key.cache_clear()


# ------------------------------------------------------------------ the lease: boot id


def test_boot_id_is_a_short_hash_never_the_raw_id_and_stable_within_a_boot(tmp_path):
    raw = "5c4c1f7e-9a0b-4c1d-8e2f-3a4b5c6d7e8f"
    f = tmp_path / "boot_id"
    f.write_text(raw + "\n")
    h = boot.boot_id(f)
    assert h == hashlib.sha256(raw.encode()).hexdigest()[:12] and raw not in h and len(h) == 12
    assert boot.boot_id(tmp_path / "absent") is None
    f.write_text("another-boot\n")
    assert boot.boot_id(f) != h
    if Path(boot.BOOT_ID).is_file():
        real = Path(boot.BOOT_ID).read_text().strip()
        fp = F.fingerprint()
        assert fp["boot_id"] == boot.boot_id() and len(fp["boot_id"]) == 12
        assert real not in json.dumps(fp)


# ------------------------------------------------------------------ the suite's own commit


def _git(cwd: Path, *args) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_commit_only_when_the_suite_is_the_repository_root(tmp_path):
    commit = F.git_commit.__wrapped__  # not the cached one: each root here is new
    # a copy of the suite (a minimal one: its package folder) inside another project's repository
    outer = tmp_path / "other-project"
    suite = outer / "vendor" / "cpu-gpu-bench"
    (suite / "helpers").mkdir(parents=True)
    (suite / "helpers" / "paths.py").write_text((PROJECT_ROOT / "helpers" / "paths.py").read_text())
    (outer / "README").write_text("another project\n")
    _git(outer, "init", "-q")
    _git(outer, "add", "-A")
    _git(outer, "commit", "-q", "-m", "outer")
    assert _git(outer, "rev-parse", "HEAD")
    assert commit(suite) is None  # not the other project's commit
    assert commit(outer) == _git(outer, "rev-parse", "--short=12", "HEAD")
    # the suite as its own repository: its commit, '-dirty' once a tracked file changes
    own = tmp_path / "suite"
    shutil.copytree(suite, own)
    _git(own, "init", "-q")
    _git(own, "add", "-A")
    _git(own, "commit", "-q", "-m", "suite")
    head = _git(own, "rev-parse", "--short=12", "HEAD")
    assert commit(own) == head and commit(str(own)) == head
    (own / "helpers" / "paths.py").write_text("# changed\n")
    assert commit(own) == head + "-dirty"
    assert commit(tmp_path / "not-a-repo") is None  # no repository (or no such folder): None, no error
    # this checkout: the suite is its repository's root here, so it records its commit
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    if top.returncode == 0 and Path(top.stdout.strip()).resolve() == PROJECT_ROOT.resolve():
        assert F.git_commit() and F.git_commit().split("-")[0] == _git(PROJECT_ROOT, "rev-parse", "--short=12", "HEAD")


# ------------------------------------------------------------------ the host calibration


@pytest.mark.xdist_group("timing")  # a wall-clock bound: one such test at a time
def test_calibration_measures_positive_figures_quickly_and_travels_through_the_environment(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # as on a machine without it, whatever is installed
    t0 = time.perf_counter()
    cal = calibration.measure()
    took = time.perf_counter() - t0
    assert took < 10 and 0 < cal["seconds"] <= took + 0.1
    assert cal["dispatch_mcalls_per_s"] > 0 and cal["matmul_gflops_all"] > 0
    assert cal["threads_controlled"] is False and cal["matmul_gflops_1thread"] is None
    assert cal["matmul_threads"] is None or cal["matmul_threads"] >= 1
    assert cal["when"].endswith("+00:00") and cal["dispatch_calls"] == calibration.DISPATCH_CALLS
    monkeypatch.delenv(calibration.ENV, raising=False)
    assert calibration.from_env() is None
    monkeypatch.setenv(calibration.ENV, calibration.export(cal)[calibration.ENV])
    assert calibration.from_env() == json.loads(json.dumps(cal)) and F.fingerprint()["calibration"] == cal
    assert calibration.export(None) == {}
    monkeypatch.delenv(calibration.ENV)
    assert calibration.ENV not in os.environ and F.fingerprint()["calibration"] is None
    for bad in ("{not json", "[1, 2]", "3"):
        monkeypatch.setenv(calibration.ENV, bad)
        assert calibration.from_env() is None


def test_calibration_takes_a_single_thread_figure_when_threadpoolctl_sets_the_threads(monkeypatch):
    calls = []

    class Limits:  # threadpoolctl.threadpool_limits' signature, as a context manager
        def __init__(self, limits=None, user_api=None):
            self.args = (limits, user_api)

        def __enter__(self):
            calls.append(self.args)

        def __exit__(self, *exc):
            return False

    fake = types.SimpleNamespace(threadpool_limits=Limits,
                                 threadpool_info=lambda: [{"user_api": "blas", "num_threads": 7}])
    monkeypatch.setitem(sys.modules, "threadpoolctl", fake)
    monkeypatch.setattr(calibration, "DISPATCH_CALLS", 20_000)  # the path, not the figure: keep it short
    monkeypatch.setattr(calibration, "MATMUL_N", 64)
    monkeypatch.setattr(calibration, "MATMUL_N_ALL", 64)
    cal = calibration.measure()
    assert calls == [(1, "blas")] and cal["threads_controlled"] is True
    assert cal["matmul_gflops_1thread"] > 0 and cal["matmul_threads"] == 7 and cal["dispatch_calls"] == 20_000


# ------------------------------------------------------------------ the GPUs' state (a fake NVML)


class FakeNVML(types.ModuleType):
    """What ``gpu_state`` and ``gpus`` call, for two GPUs; GPU 1 does not support persistence mode."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    def __init__(self):
        super().__init__("pynvml")

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(total=80 * 2**30)

    def nvmlSystemGetDriverVersion(self):
        return "580.1"

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return 13000

    def nvmlDeviceGetClockInfo(self, h, kind):
        return {1: 345, 2: 2619}[kind]

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return {1: 1980, 2: 2619}[kind]

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000  # mW

    def nvmlDeviceGetPersistenceMode(self, h):
        if h == 1:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return 1


@pytest.fixture
def fresh_gpus():
    F.gpus.cache_clear()
    yield
    F.gpus.cache_clear()


def test_gpu_clocks_power_limit_and_persistence_from_nvml(monkeypatch, fresh_gpus):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML())
    state = F.gpu_state()
    assert state[0] == {"sm_clock_mhz": 345, "sm_clock_max_mhz": 1980, "mem_clock_mhz": 2619,
                        "mem_clock_max_mhz": 2619, "power_limit_w": 700.0, "persistence_mode": True}
    assert state[1]["persistence_mode"] is None and state[1]["power_limit_w"] == 700.0  # one call failed: None
    fp = F.fingerprint()
    assert fp["gpu_state"] == state and fp["gpu_names"] == ["NVIDIA H100 80GB HBM3"] * 2
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no nvidia-ml-py: no GPU, no error
    assert F.gpu_state() == []


# ------------------------------------------------------------------ the report: machines and leases


GPU = {"sm_clock_mhz": 345, "sm_clock_max_mhz": 1980, "mem_clock_mhz": 2619, "mem_clock_max_mhz": 2619,
       "power_limit_w": 700.0, "persistence_mode": True}


def _rec(i, host="h1", **fp) -> dict:
    return {"schema": 2, "point_id": f"p{i}", "workload": "cnn_cifar10", "backend": "jax", "device": "cpu",
            "device_used": "cpu", "status": "ok", "reason": None, "params": {"threads": 0, "precision": "float32"},
            "data_source": "synthetic", "n_train": 1000, "batch_size": 100, "epochs": 3, "first_epoch_s": 2.0,
            "epoch_s": [1.0, 1.0], "median_epoch_s": 1.0, "step_s": 0.1, "samples_per_s": 1000.0,
            "history": {"loss": [2, 1]}, "utilisation": {}, "energy_j_per_epoch": None,
            "fingerprint": {"host": host, "cpu_model": "Some CPU", "cpu_logical": 4, "gpu_names": [],
                            "versions": {"keras": "3.15.1"}, **fp},
            "started_at": f"2026-01-01T00:00:{i:02d}", "duration_s": 5.0, "notebook": None}


def _provenance(folder):
    from helpers import report
    from helpers.report.publish import sections

    ctx = report.build_context([folder])
    s = sections.build(sections.get("provenance"), ctx)
    assert "failed to build" not in (s.reason or ""), s.reason
    return ctx, s


def test_provenance_over_old_records_says_not_recorded():
    """The H100 reference: the re-published cells' five leases, each with its calibration, and the earlier
    single runs, which recorded neither ("not recorded")."""
    from helpers.report.publish.sections import provenance

    ctx, s = _provenance(PROJECT_ROOT / "reference" / "h100" / "records")
    assert s.present and "Machines by lease" in s._repr_html_()
    leases = provenance.leases_table(ctx.df).set_index("lease (boot id)")
    assert set(leases.index) == {"5342731dda41", "ff72ba3637b8", "8e28086d8d20", "8ee8feab14e7",
                                 "c809c2c04d52", provenance.NOT_RECORDED,
                                 # TensorFlow's four leases
                                 "9514dabe9878", "c723a6941779", "946f866b59b1", "94c19643e3ff"}
    assert leases["records"].sum() == len(ctx.df)
    assert leases.loc[provenance.NOT_RECORDED, "runs"] == provenance.NOT_RECORDED
    assert leases.loc["5342731dda41", "dispatch M calls/s"] > leases.loc["ff72ba3637b8", "dispatch M calls/s"]
    old = ctx.df[ctx.df["boot_id"].isna()]
    machines = provenance.machines_table(old)
    assert (machines["CPU flags"] == provenance.NOT_RECORDED).all()


def test_provenance_shows_one_row_per_machine_and_lease_with_calibration_medians(tmp_path):
    from helpers.report.publish.sections import provenance

    ident = {"cpu_vendor": "GenuineIntel", "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8,
             "cpu_flags": ["avx2", "avx512f"], "gpu_state": []}
    run_a = {"dispatch_mcalls_per_s": 12.0, "matmul_gflops_all": 200.0, "matmul_gflops_1thread": None,
             "matmul_threads": 4, "when": "2026-01-01T00:00:00+00:00"}
    run_b = {**run_a, "when": "2026-01-01T00:00:05+00:00", "matmul_gflops_all": 220.0}
    run_c = {**run_a, "when": "2026-01-02T00:00:00+00:00", "dispatch_mcalls_per_s": 9.0, "matmul_gflops_all": 150.0}
    recs = [_rec(0, boot_id="aaaaaaaaaaaa", calibration=run_a, **ident),
            _rec(1, boot_id="aaaaaaaaaaaa", calibration=run_a, **ident),  # same run: its calibration once
            _rec(2, boot_id="aaaaaaaaaaaa", calibration=run_b, **ident),
            _rec(3, boot_id="bbbbbbbbbbbb", calibration=run_c, **ident),
            _rec(4, host="old"),  # an older record: no lease, no calibration
            _rec(5, host="odd", boot_id=7, calibration="fast", cpu_flags="avx2", gpu_state={"x": 1}),  # junk types
            _rec(6, host="gpu1", gpu_names=["NVIDIA H100"], gpu_state=[GPU]),
            _rec(7, host="gpu1", gpu_names=["NVIDIA H100"], gpu_state=[{**GPU, "sm_clock_mhz": 1980}])]
    for i, r in enumerate(recs):
        write_atomic(tmp_path / f"r{i}.json", r)
    ctx, s = _provenance(tmp_path)
    leases = provenance.leases_table(ctx.df)
    h1 = leases[leases["host"] == "h1"].set_index("lease (boot id)")
    assert list(h1.index) == ["aaaaaaaaaaaa", "bbbbbbbbbbbb"]
    assert h1.loc["aaaaaaaaaaaa", "records"] == 3 and h1.loc["aaaaaaaaaaaa", "runs"] == 2
    assert h1.loc["aaaaaaaaaaaa", "matmul GFLOP/s (all threads)"] == pytest.approx(210.0)
    assert h1.loc["bbbbbbbbbbbb", "dispatch M calls/s"] == pytest.approx(9.0)
    assert h1.loc["aaaaaaaaaaaa", "matmul GFLOP/s (1 thread)"] == provenance.NOT_RECORDED
    assert h1.loc["aaaaaaaaaaaa", "first run"] < h1.loc["aaaaaaaaaaaa", "last run"]
    row = leases[leases["host"] == "old"].iloc[0]
    assert row["lease (boot id)"] == provenance.NOT_RECORDED and row["runs"] == provenance.NOT_RECORDED
    # a boot id that is no string is an untrusted record's: the record is listed with its reason, not read
    assert "odd" not in set(leases["host"])
    assert any(f.endswith("r5.json") and "'fingerprint.boot_id' is a number" in why for f, why in ctx.skipped)
    machines = provenance.machines_table(ctx.df).set_index("host")
    assert machines.loc["h1", "CPU vendor/family/model/stepping"] == "GenuineIntel family 6 model 143 stepping 8"
    assert machines.loc["h1", "CPU flags"] == "avx2 avx512f" and machines.loc["h1", "leases"] == 2
    assert machines.loc["h1", "GPU clocks, power limit, persistence"] == "no GPU"
    assert machines.loc["old", "CPU flags"] == provenance.NOT_RECORDED
    assert machines.loc["gpu1", "GPU clocks, power limit, persistence"] == ("SM max 1980 MHz · mem max 2619 MHz · "
                                                                          "700 W limit · persistence on")
    assert machines.loc["gpu1", "GPU clocks at point start (SM, mem MHz)"] == "345–1980, 2619"
    assert machines.loc["old", "GPU clocks at point start (SM, mem MHz)"] == provenance.NOT_RECORDED
    page = s._repr_html_()
    assert "aaaaaaaaaaaa" in page and "bbbbbbbbbbbb" in page and "% apart" in page
    assert "2 leases: matmul GFLOP/s (all threads) 150–210 (40% apart); dispatch M calls/s 9–12" in page
    assert provenance.lease_differences(leases)[0][3] == pytest.approx(0.4)  # pointed out: over DIFFER


def test_gpu_state_is_shown_per_gpu_and_identical_gpus_once():
    from helpers.report.load import columns

    g = GPU
    fp = {"gpu_state": [g, g, {**g, "persistence_mode": None, "sm_clock_mhz": 1755}]}
    assert columns._gpu_state(fp) == ("2 × SM max 1980 MHz · mem max 2619 MHz · 700 W limit · persistence on; "
                                    "SM max 1980 MHz · mem max 2619 MHz · 700 W limit")
    assert columns._gpu_clocks_now(fp, "sm_clock_mhz") == 1755 and columns._gpu_clocks_now({}, "sm_clock_mhz") is None
    assert columns._gpu_state({}) is None and columns._gpu_state({"gpu_state": []}) == "no GPU"


def test_a_calibration_of_this_boot_from_within_the_hour_is_reused_and_no_other(monkeypatch):
    import datetime as dt

    now = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
    mine = {"dispatch_mcalls_per_s": 9.0, "when": "2026-11-26T11:30:00+00:00", "boot_id": boot.boot_id()}
    assert mine["boot_id"]  # this host has a boot id (Linux)
    for cal, reused in [(mine, True), ({**mine, "when": "2026-11-26T10:59:00+00:00"}, False),  # over an hour old
                        ({**mine, "when": "2026-11-26T12:01:00+00:00"}, False),  # from the future: not trusted
                        ({**mine, "boot_id": "another boot"}, False), ({**mine, "boot_id": None}, False),
                        ({**mine, "when": "not a time"}, False)]:
        monkeypatch.setenv(calibration.ENV, json.dumps(cal))
        assert (calibration.reusable(now) == cal) is reused, cal
    monkeypatch.delenv(calibration.ENV)
    assert calibration.reusable(now) is None
    assert calibration.measure()["boot_id"] == mine["boot_id"]  # a measured one carries its boot
