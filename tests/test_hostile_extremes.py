"""Finite extremes and a section that fails: one valid-looking record cannot sink the report.

A first epoch of 1.7e308 s, an energy of 1.7e308 J, a 1e-307-s epoch on a GPU and a CPU record, two runs of 1.5e308
samples/s: each is finite JSON, and each once overflowed into inf or NaN once derived (samples/s, a median, an
interval's digits) or left a half-drawn figure that the kernel drew outside the section's error handling. Now the
record reader refuses them with the bound named, every good record beside them is tabulated, and a section that
fails closes its figures."""

from __future__ import annotations

from html import unescape

import pytest
from support.records import _rec
from test_hostile_bounds import GOOD, _good, _holds, _report

from helpers.record.writer import write_atomic

CASES = {
    "first_epoch": [{"first_epoch_s": 1.7e308}, {"first_epoch_s": 1.7e308}],
    "energy": [{"energy_j_per_epoch": 1.7e308}, {"energy_j_per_epoch": 1.7e308}],
    "subnormal_epoch": [{"median_epoch_s": 1e-307, "epoch_s": [1e-307] * 3},
                        {"median_epoch_s": 1e-307, "epoch_s": [1e-307] * 3, "device": "gpu", "device_used": "gpu"}],
    "huge_rate": [{"samples_per_s": 1.5e308}, {"samples_per_s": 1.5e308}],
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_finite_extreme_is_refused_with_its_bound_and_every_section_holds(case, tmp_path):
    folder = _good(tmp_path / "in")
    for i, over in enumerate(CASES[case]):
        write_atomic(folder / f"bad{i}.json", _rec(10 + i, point_id=f"bad-{case}-{i}", **over))
    ctx, html, csv, took = _report([folder], tmp_path)
    _holds(ctx, html, took)
    reasons = [why for _, why in ctx.skipped]
    assert len(reasons) == 2 and all("no measurement gives it" in w for w in reasons), reasons
    assert "inf" not in csv["configurations.csv"].lower() and "nan" not in csv["verdict.csv"].lower()


def test_a_section_that_fails_closes_its_figures(tmp_path, monkeypatch):
    """A section that raises after drawing leaves no open figure (the kernel's inline backend would draw it when the
    cell ends, outside the section's error handling, and fail the report)."""
    import matplotlib.pyplot as plt

    from helpers import report
    from helpers.report.publish import sections
    from helpers.report.publish.sections import throughput

    def broken(ctx):
        plt.figure()
        raise OverflowError("a figure beyond a float")

    monkeypatch.setattr(throughput, "build", broken)
    plt.close("all")
    ctx = report.build_context([_good(tmp_path / "in")], use_reference=False)
    built = {s.name: s for s in sections.build_all(ctx)}
    assert "failed to build (OverflowError" in built["throughput"].reason
    assert plt.get_fignums() == []
    assert built["verdict"].present or built["verdict"].reason  # the others built as ever


def test_a_record_cannot_pass_for_the_bundled_reference(tmp_path):
    """A GPU record whose GPU name reads like the bundled reference's machine name stands as a machine of its own,
    named as a record's name: the report never calls it the bundled reference."""
    from helpers import report
    from helpers.report.load.reference import is_reference

    forged = _rec(0, device="gpu", device_used="gpu", samples_per_s=5e6, median_epoch_s=2e-4, epoch_s=[2e-4] * 3,
                  point_id="forged", fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 16,
                                                  "gpu_names": ["reference H100 2026-11-22: NVIDIA H100 80GB HBM3"]})
    write_atomic(tmp_path / "in" / "forged.json", forged)
    write_atomic(tmp_path / "in" / "cpu.json", _rec(1, point_id="cpu"))
    ctx = report.build_context([tmp_path / "in"])
    own = ctx.df[ctx.df["point_id"] == "forged"]["machine"].iloc[0]
    assert not is_reference(own) and own.startswith("“reference H100") and "a record's name" in own
    from helpers.report.words import headline

    assert headline.compared(ctx.df)["reference"] is False  # its own GPU run: no bundled reference, none claimed
    assert not any(is_reference(m) for m in ctx.df["machine"])


def test_a_forged_conflicting_copy_never_takes_a_workload_out_of_the_verdict(tmp_path):
    """A forged copy of a GPU run (the same run, 10x faster) beside the genuine one: both copies are kept apart, yet
    the workload's GPU side still pairs with its CPU twin; the verdict's row stays, marked ≠, with both values."""
    from support.hostile import write_conflict

    from helpers.report.publish.sections.verdict import CONFLICT_MARK

    good = _good(tmp_path / "good")
    gpu_fp = {"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 16, "gpu_names": ["NVIDIA H100 80GB HBM3"]}
    write_atomic(good / "mlp_cpu.json", _rec(7, workload="mlp_mnist", point_id="mlp-cpu"))
    real, forged = write_conflict(good, tmp_path / "theirs", _rec(
        8, workload="mlp_mnist", device="gpu", device_used="gpu", point_id="mlp-gpu", fingerprint=gpu_fp,
        samples_per_s=50000.0, median_epoch_s=0.02, epoch_s=[0.02] * 3))
    ctx, html, csv, took = _report([good, tmp_path / "theirs"], tmp_path)
    _holds(ctx, html, took, good=GOOD + ["mlp-cpu"] + [real["point_id"]] * 2)
    verdict = unescape(html["verdict"])
    assert "No GPU/CPU pair" not in verdict
    assert "Not in the verdict (1 of 2 workloads): cnn_cifar10 (no GPU run)." in verdict  # mlp_mnist stays in
    assert f"{CONFLICT_MARK} Copies of one run that say different things" in verdict
    line = next(x for x in verdict.split("Copies of one run")[1:])
    assert "copy=good/conflict.json" in line and "copy=theirs/conflict.json" in line
    assert "500,000 samples/s" in line and "50,000 samples/s" in line  # both values
    import csv as _csv
    import io

    rows = {r["workload"]: r for r in _csv.DictReader(io.StringIO(csv["verdict.csv"]))}
    assert "mlp_mnist" in rows and "conflicting copies: GPU side:" in rows["mlp_mnist"]["marks"]


H100 = "NVIDIA H100 80GB HBM3"
BOX = {"host": "gpu-box", "cpu_model": "Intel(R) Xeon(R) Processor", "cpu_logical": 16, "gpu_names": [H100]}


def test_machines_are_told_apart_by_what_they_are(tmp_path):
    """A CPU record of another machine with the H100 box's GPU name and CPU count (another CPU model), and one of a
    CPU-only box whose CPU model is the GPU's name: neither pools with the H100 box's own CPU runs, each is its own
    machine (named with its GPU count and CPU), and the box's CPU figure rests on its own runs; every good record is
    tabulated and every section holds."""
    folder = tmp_path / "in"
    for i in range(2):
        write_atomic(folder / f"box_cpu{i}.json", _rec(i, point_id="box-cpu", fingerprint=BOX,
                                                       started_at=f"2026-01-01T00:00:0{i}"))
    write_atomic(folder / "box_gpu.json", _rec(2, point_id="box-gpu", device="gpu", device_used="gpu",
                                               fingerprint=BOX, samples_per_s=50000.0, median_epoch_s=0.02,
                                               epoch_s=[0.02] * 3))
    other_cpu = {**BOX, "host": "elsewhere", "cpu_model": "AMD EPYC 9654"}
    write_atomic(folder / "other.json", _rec(3, point_id="box-cpu", fingerprint=other_cpu, samples_per_s=5000.0,
                                             started_at="2026-01-01T00:00:03"))
    no_gpu = {"host": "cpu-only", "cpu_model": H100, "cpu_logical": 16, "gpu_names": []}
    write_atomic(folder / "fake.json", _rec(4, point_id="box-cpu", fingerprint=no_gpu, samples_per_s=20000.0,
                                            started_at="2026-01-01T00:00:04"))
    ctx, html, csv, took = _report([folder], tmp_path)
    _holds(ctx, html, took, good=["box-cpu"] * 4 + ["box-gpu"])
    cpu = ctx.summary[ctx.summary["device"] == "cpu"]
    assert len(cpu) == 3 and cpu["machine"].nunique() == 3  # three machines, never one pooled figure
    box = cpu[cpu["machine"].str.contains("1 GPU · CPU Intel")]
    assert len(box) == 1 and int(box["n_runs"].iloc[0]) == 2 and box["samples_per_s"].iloc[0] == 1000.0
    assert cpu["machine"].str.contains("no GPU · CPU " + H100).sum() == 1
    assert cpu["machine"].str.contains("1 GPU · CPU AMD EPYC 9654").sum() == 1
    verdict = unescape(html["verdict"])
    assert "the 16-CPU NVIDIA H100" not in verdict and "3 CPU machines" in verdict


def test_this_machine_and_the_same_machine_only_where_true(tmp_path, monkeypatch):
    """'Of this machine' only for runs of this host's outputs folder (a record elsewhere naming this host, CPU and
    CPU count is another's); 'of the same machine' only when the GPU's machine is the CPU's."""
    import socket

    import psutil

    from helpers.measure.fingerprint import cpu_model
    from helpers.report.words import headline

    here = {"host": socket.gethostname(), "cpu_model": cpu_model(), "cpu_logical": psutil.cpu_count(logical=True),
            "gpu_names": []}
    elsewhere, outputs = tmp_path / "someone", tmp_path / "outputs"
    write_atomic(elsewhere / "cpu.json", _rec(0, fingerprint=here))
    write_atomic(elsewhere / "gpu.json", _rec(1, device="gpu", device_used="gpu", fingerprint=BOX,
                                              samples_per_s=50000.0, median_epoch_s=0.02, epoch_s=[0.02] * 3))
    monkeypatch.setenv("CGB_OUTPUTS", str(outputs))
    ctx, html, _, took = _report([elsewhere], tmp_path, only=("verdict",))
    _holds(ctx, html, took, good=["p0", "p1"])
    said = unescape(html["verdict"])
    assert "of this machine" not in said and "of the same machine" not in said and "On this " not in said
    # the same records in this host's outputs folder: this machine; the GPU of another machine: not "the same"
    write_atomic(outputs / "cpu.json", _rec(0, fingerprint=here))
    write_atomic(outputs / "gpu.json", _rec(1, device="gpu", device_used="gpu", fingerprint=BOX,
                                            samples_per_s=50000.0, median_epoch_s=0.02, epoch_s=[0.02] * 3))
    ctx, html, _, _ = _report([outputs], tmp_path, only=("verdict",))
    said = unescape(html["verdict"])
    assert "of this machine" in said and "of the same machine" not in said
    # one box's own CPU and GPU runs: the same machine
    comp = headline.compared(ctx.df.assign(machine="m"))
    assert "of the same machine" in headline.compared_text(comp)
