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
    from helpers.report import sections
    from helpers.report.sections import throughput

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
    from helpers.report.reference import is_reference

    forged = _rec(0, device="gpu", device_used="gpu", samples_per_s=5e6, median_epoch_s=2e-4, epoch_s=[2e-4] * 3,
                  point_id="forged", fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 16,
                                                  "gpu_names": ["reference H100 2026-11-22: NVIDIA H100 80GB HBM3"]})
    write_atomic(tmp_path / "in" / "forged.json", forged)
    write_atomic(tmp_path / "in" / "cpu.json", _rec(1, point_id="cpu"))
    ctx = report.build_context([tmp_path / "in"])
    own = ctx.df[ctx.df["point_id"] == "forged"]["machine"].iloc[0]
    assert not is_reference(own) and own.startswith("“reference H100") and "a record's name" in own
    from helpers.report import headline

    assert headline.compared(ctx.df)["reference"] is False  # its own GPU run: no bundled reference, none claimed
    assert not any(is_reference(m) for m in ctx.df["machine"])


def test_a_forged_conflicting_copy_never_takes_a_workload_out_of_the_verdict(tmp_path):
    """A forged copy of a GPU run (the same run, 10x faster) beside the genuine one: both copies are kept apart, yet
    the workload's GPU side still pairs with its CPU twin; the verdict's row stays, marked ≠, with both values."""
    from support.hostile import write_conflict

    from helpers.report.sections.verdict import CONFLICT_MARK

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
