"""A report without a GPU run compares this CPU with the bundled reference GPU."""

import json

import pytest

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.derive import best
from helpers.report.derive.pairs import all_pairs, speedup_label
from helpers.report.load import reference
from helpers.report.publish.sections import verdict

REFERENCE = PROJECT_ROOT / "reference" / "h100" / "records"


def _cpu_rec(i, workload="cnn_cifar10", backend="jax", batch=1000, sps=4000.0, **kw) -> dict:
    rec = {"schema": 2, "point_id": f"c{i}", "workload": workload, "backend": backend, "device": "cpu",
           "device_used": "cpu", "status": "ok", "reason": None,
           "params": {"threads": 0, "precision": "float32", "jit_compile": "auto", "batch_size": batch,
                      "min_steady_s": 2.0},
           "data_source": "real", "n_train": 5000, "batch_size": batch, "epochs": 3, "first_epoch_s": 3.0,
           "epoch_s": [5000 / sps] * 3, "median_epoch_s": 5000 / sps, "step_s": batch / sps,
           "samples_per_s": sps, "steps_per_epoch": 5, "steady_s": 3 * 5000 / sps, "history": {},
           "utilisation": {}, "energy_j_per_epoch": None,
           "fingerprint": {"host": "laptop", "cpu_model": "Laptop CPU", "cpu_logical": 8, "gpu_names": []},
           "started_at": f"2026-11-23T10:00:0{i}", "duration_s": 9.0, "notebook": None}
    rec.update(kw)
    return rec


def _write(tmp_path, recs):
    for i, r in enumerate(recs):
        write_atomic(tmp_path / f"r{i}.json", r)


def test_a_cpu_only_report_gets_the_reference_gpu_at_the_same_configurations(tmp_path):
    _write(tmp_path, [_cpu_rec(0), _cpu_rec(1, backend="torch", sps=8000.0),
                      _cpu_rec(2, workload="mlp_mnist", batch=128, sps=30000.0),
                      _cpu_rec(3, batch=333)])  # a batch the reference never ran: no GPU twin
    ctx = report.build_context([tmp_path])
    gpu = ctx.summary[ctx.summary["device"] == "gpu"]
    assert len(gpu) and all(reference.is_reference(m) for m in gpu["machine"])
    assert all(m.startswith("reference H100 ") for m in gpu["machine"])
    # only the configurations this CPU ran: cnn_cifar10 jax/torch at 1000 and mlp_mnist at 128, float32
    assert set(zip(gpu["workload"], gpu["backend"], gpu["batch_size"])) == {
        ("cnn_cifar10", "jax", 1000), ("cnn_cifar10", "torch", 1000), ("mlp_mnist", "jax", 128)}
    assert set(gpu["precision"]) == {"float32"}
    pairs = all_pairs(ctx.summary)
    assert len(pairs) == 3 and all(reference.is_reference(g) for g in pairs["gpu_machine"])
    jax = pairs[(pairs["workload"] == "cnn_cifar10") & (pairs["backend"] == "jax")].iloc[0]
    ref_sps = gpu[(gpu["workload"] == "cnn_cifar10") & (gpu["backend"] == "jax")]["samples_per_s"].iloc[0]
    assert jax["speedup"] == pytest.approx(ref_sps / 4000.0)  # per sample, medians over runs
    assert speedup_label(jax).startswith("your CPU → reference H100 ")
    assert any("bundled reference" in t for t, _, _ in ctx.notes)
    tab = verdict.glance_table(best.best_over_best(ctx.costed)).set_index("workload")
    assert "→ JAX on the reference H100" in tab.loc["cnn_cifar10", "sides compared: CPU → GPU"]
    html = "".join(str(p) for p in verdict.build(ctx).parts) if hasattr(verdict.build(ctx), "parts") else ""
    assert "another machine" in html or html == ""


def test_no_reference_when_asked_or_when_the_records_have_a_gpu_run(tmp_path):
    _write(tmp_path, [_cpu_rec(0)])
    ctx = report.build_context([tmp_path], use_reference=False)
    assert "gpu" not in set(ctx.summary["device"])
    gpu_rec = _cpu_rec(1, device="gpu", device_used="gpu", point_id="g1",
                       fingerprint={"host": "laptop", "cpu_model": "Laptop CPU", "cpu_logical": 8,
                                    "gpu_names": ["NVIDIA RTX 4090"]})
    write_atomic(tmp_path / "g.json", gpu_rec)
    ctx = report.build_context([tmp_path])
    assert not any(reference.is_reference(m) for m in ctx.summary["machine"])


def test_a_workload_without_a_matching_reference_configuration_is_shown_not_paired(tmp_path):
    _write(tmp_path, [_cpu_rec(0, workload="resnet50", batch=8, sps=20.0)])
    ctx = report.build_context([tmp_path])
    gpu = ctx.summary[ctx.summary["device"] == "gpu"]
    assert set(gpu["workload"]) == {"resnet50"} and set(gpu["precision"]) == {"float32"}
    assert set(gpu["batch_size"]) == {64}  # the reference's float32 batch nearest to 8
    assert all_pairs(ctx.summary).empty
    page = verdict.build(ctx)._repr_html_()  # resnet50 alone, unpaired: no verdict row, the sections say why
    assert "no configuration ran on both" in page


def test_the_default_grid_pairs_its_cpu_rows_with_the_reference():
    """The CPU configurations of params/quick.yaml have a GPU twin in the bundled reference (same workload,
    backend, batch size, precision, compilation, knobs), so the at-a-glance table pairs them, every workload:
    cnn_256 and resnet50 run on the CPU at the reference's batch of 64 and full image size, one step an epoch."""
    from helpers import grid
    from helpers.report.load import table

    ref, _, _ = table.load_table([REFERENCE])
    ref = ref[(ref["status"] == "ok") & (ref["device"] == "gpu")]
    have = set(reference.match_key(ref))
    missing = []
    for p in grid.expand(PROJECT_ROOT / "params" / "quick.yaml"):
        if p["device"] != "cpu":
            continue
        rec = _cpu_rec(0, workload=p["workload"], backend=p["backend"], batch=p["batch_size"])
        rec["params"] = {k: v for k, v in p.items() if not k.startswith("_") and k not in ("timeout_s", "repeats")}
        one = table.tidy([{**rec, "_path": "x.json"}])
        if reference.match_key(one).iloc[0] not in have:
            missing.append((p["workload"], p["backend"], p["batch_size"], json.dumps(one["knobs"].iloc[0])))
    assert missing == [], missing


def test_a_knob_added_after_the_reference_pairs_at_the_value_the_reference_ran(tmp_path):
    """Today's records carry `input_dtype`; the reference's, written before it, ran float32 inputs."""
    params = {"threads": 0, "precision": "float32", "jit_compile": "auto", "batch_size": 1000, "min_steady_s": 2.0}
    _write(tmp_path, [_cpu_rec(0, params={**params, "input_dtype": "float32"}),
                      _cpu_rec(1, backend="torch", params={**params, "input_dtype": "uint8"})])
    ctx = report.build_context([tmp_path])
    pairs = all_pairs(ctx.summary)
    assert set(zip(pairs["workload"], pairs["backend"])) == {("cnn_cifar10", "jax")}  # uint8: not the reference's
    gpu = ctx.summary[(ctx.summary["device"] == "gpu") & (ctx.summary["backend"] == "jax")]
    assert "input_dtype=float32" in gpu["knobs"].iloc[0]
