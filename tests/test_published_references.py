"""The GPU reference's pieces that run without a GPU: the suite's shift layer (vgg_cifar10's augmentation), the
augment_impl knob, publishing a reference folder, machine-neutral paths in records and reports."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from support.workload_points import script, script_group

from helpers import grid
from helpers.paths import PROJECT_ROOT
from helpers.point import device
from helpers.record.ids import notebook_path, point_id, record_name
from helpers.record.reader import read_records
from helpers.record.schema import empty_record, is_record
from helpers.record.writer import write_atomic
from helpers.report.load.visible import shown_path
from helpers.runner import cli as runner
from helpers.runner import notebook

INSTALLED = [b for b in ("tensorflow", "jax", "torch") if device.backend_installed(b)]

SHIFT_CHECK = textwrap.dedent("""
    import json
    import numpy as np
    import keras
    from keras import ops
    from helpers.workloads.shift import RandomShift, interpolation_matrices

    rng = np.random.default_rng(0)
    x = rng.random((4, 12, 10, 3), dtype=np.float32)
    dy = np.array([2.3, -1.7, 0.0, 3.5], np.float32)
    dx = np.array([-1.25, 2.2, 0.5, -4.9], np.float32)
    my = ops.convert_to_numpy(interpolation_matrices(dy, 12, "float32"))
    mx = ops.convert_to_numpy(interpolation_matrices(dx, 10, "float32"))
    ours = np.einsum("bkw,biwc->bikc", mx, np.einsum("bij,bjwc->biwc", my, x))
    # Keras' own op with the same translations: out(y, x) = in(y - dy, x - dx), bilinear, edge clamped
    t = np.stack([np.array([1, 0, -dx[i], 0, 1, -dy[i], 0, 0], np.float32) for i in range(4)])
    ref = ops.convert_to_numpy(ops.image.affine_transform(x, t, interpolation="bilinear", fill_mode="nearest"))

    layer = RandomShift(0.25, 0.25, seed=1)
    same = ops.convert_to_numpy(layer(x, training=False))
    out1 = ops.convert_to_numpy(layer(x, training=True))
    out2 = ops.convert_to_numpy(layer(x, training=True))
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    bf = RandomShift(0.1, 0.1)(ops.convert_to_tensor(x), training=True)
    cfg = RandomShift.from_config(layer.get_config()).get_config()
    print(json.dumps({
        "max_diff_vs_keras": float(np.abs(ours - ref).max()),
        "identity_outside_training": bool(np.array_equal(same, x)),
        "shape": list(out1.shape), "moved": bool(np.abs(out1 - x).max() > 1e-3),
        "draws_differ": bool(np.abs(out1 - out2).max() > 1e-3),
        "within_input_range": bool(out1.min() >= x.min() - 1e-6 and out1.max() <= x.max() + 1e-6),
        "bf16_dtype": ops.dtype(bf),
        "config": [cfg["height_factor"], cfg["width_factor"], cfg["seed"]],
    }))
""")


SHIFT = {b: script(f"shift_check_{b}", b, SHIFT_CHECK) for b in INSTALLED}  # run in each backend's chunk


@pytest.mark.parametrize("backend", [pytest.param(b, marks=pytest.mark.xdist_group(script_group(SHIFT[b])))
                                     for b in INSTALLED])
def test_random_shift_is_keras_translation_as_matmuls(workload_runs, backend):
    out = json.loads(workload_runs(backend).script(SHIFT[backend]).strip().splitlines()[-1])
    assert out["max_diff_vs_keras"] < 1e-5  # the same transformation as RandomTranslation's op
    assert out["identity_outside_training"]
    assert out["shape"] == [4, 12, 10, 3] and out["moved"] and out["draws_differ"]
    assert out["within_input_range"]  # bilinear weights are a convex combination
    assert out["bf16_dtype"] == "bfloat16"  # runs in the mixed policy's compute dtype
    assert out["config"] == [0.25, 0.25, 1]


def test_augment_impl_is_validated_with_the_allowed_values(tmp_path):
    g = tmp_path / "g.yaml"
    g.write_text("points:\n  - workload: vgg_cifar10\n    backend: jax\n    device: cpu\n    augment_impl: fancy\n")
    with pytest.raises(grid.GridError, match=r"augment_impl.*'matmul', 'keras'"):
        grid.expand_all([g])
    g.write_text("points:\n  - workload: vgg_cifar10\n    backend: jax\n    device: cpu\n    augment_impl: keras\n")
    assert grid.expand_all([g])[0]["augment_impl"] == "keras"


def _record(pid: str, status: str, started: str, root: str, **extra) -> dict:
    rec = empty_record({"workload": "cnn_cifar10", "backend": "jax", "device": "gpu", "batch_size": 10,
                               "output_dir": f"{root}/outputs/runs/r1/records"}, pid)
    rec.update(status=status, started_at=started, reason=None if status == "ok" else
               f'Traceback: File "{root}/helpers/point/session.py", line 1',
               notebook=f"{root}/outputs/runs/r1/notebooks/cnn_cifar10-jax-gpu-{pid}.ipynb", **extra)
    return rec


def test_publish_reference_keeps_the_newest_record_per_point_with_neutral_paths(tmp_path):
    from scripts import publish_reference

    src = tmp_path / "out" / "runs" / "r1" / "records"
    src.mkdir(parents=True)
    root = "/some/machine/checkout"
    recs = {"a-old": _record("aaaaaaaaaaaa", "failed", "2026-01-01T00:00:00+00:00", root),
            "a-new": _record("aaaaaaaaaaaa", "ok", "2026-01-02T00:00:00+00:00", root),
            "b": _record("bbbbbbbbbbbb", "failed", "2026-01-01T00:00:00+00:00", root),
            "c": _record("cccccccccccc", "ok", "2026-01-01T00:00:00+00:00", root)}
    for name, rec in recs.items():
        write_atomic(src / f"{name}.json", rec)
    (src / "notes.json").write_text('{"not": "a record"}')
    # bare-loop results beside the records: one in the run's folder, one at the outputs root (with a line
    # repeated from the first and a line that is not JSON)
    jax_line = json.dumps({"impl": "bare-jax", "workload": "resnet50", "precision": "mixed_bfloat16",
                           "batch": 256, "samples_per_s": 5658.5, "host": "h"})
    torch_line = json.dumps({"impl": "bare-torch", "workload": "resnet50", "precision": "mixed_bfloat16",
                             "batch": 256, "samples_per_s": 5623.2, "host": "h"})
    (src.parent / "bare_loops.jsonl").write_text(jax_line + "\n")
    (tmp_path / "out" / "bare_loops.jsonl").write_text(f"{jax_line}\nnot json\n\n{torch_line}\n")
    dest = tmp_path / "reference" / "m"
    (dest / "records").mkdir(parents=True)
    (dest / "records" / "stale.json").write_text("{}")
    (dest / "records" / "bare_loops.jsonl").write_text('{"impl": "stale"}\n')
    rc = publish_reference.main([str(tmp_path / "out"), "--to", str(dest), "--exclude", "cccccccccccc",
                                 "--project-root", root, "--no-report"])
    assert rc == 0
    out = {p.name: json.loads(p.read_text()) for p in (dest / "records").glob("*.json")}
    assert sorted(out) == ["a-new.json", "b.json"]  # newest of a, b, c excluded, stale file gone
    a, b = out["a-new.json"], out["b.json"]
    assert a["status"] == "ok" and b["status"] == "failed"
    assert a["notebook"] == "../notebooks/cnn_cifar10-jax-gpu-aaaaaaaaaaaa.ipynb"
    assert a["params"]["output_dir"] == "records"
    assert b["reason"] == 'Traceback: File "helpers/point/session.py", line 1'
    assert root not in json.dumps(out) and "_path" not in a
    assert is_record(a) and is_record(b)
    published = (dest / "records" / "bare_loops.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["impl"] for x in published) == ["bare-jax", "bare-torch"]  # once each, stale gone
    from helpers.report.load import bare
    df, bad = bare.read([dest / "records"])  # the report reads them from the published folder
    assert sorted(df["impl"]) == ["bare-jax", "bare-torch"] and not bad
    assert publish_reference.main([str(tmp_path / "missing"), "--to", str(dest), "--no-report"]) == 2


def test_publish_reference_keeps_the_runs_of_every_lease(tmp_path):
    """Two leases of one machine type give the same point ids: both leases' runs are published."""
    from scripts import publish_reference

    root = "/some/machine/checkout"
    for lease, day in (("1111aaaa2222", "02"), ("3333bbbb4444", "03")):
        src = tmp_path / f"out-{lease}" / "runs" / "r1" / "records"
        src.mkdir(parents=True)
        for pid in ("aaaaaaaaaaaa", "aaaaaaaaaaaa-r1"):
            rec = _record(pid, "ok", f"2026-01-{day}T00:00:00+00:00", root,
                          fingerprint={"boot_id": lease, "host": "h"})
            write_atomic(src / f"cnn_cifar10-jax-gpu-{pid}.json", rec)
    dest = tmp_path / "reference" / "m"
    assert publish_reference.main([str(tmp_path / "out-1111aaaa2222"), str(tmp_path / "out-3333bbbb4444"),
                                   "--to", str(dest), "--project-root", root, "--no-report"]) == 0
    out = [json.loads(p.read_text()) for p in (dest / "records").glob("*.json")]
    assert sorted((r["point_id"], r["fingerprint"]["boot_id"]) for r in out) == [
        ("aaaaaaaaaaaa", "1111aaaa2222"), ("aaaaaaaaaaaa", "3333bbbb4444"),
        ("aaaaaaaaaaaa-r1", "1111aaaa2222"), ("aaaaaaaaaaaa-r1", "3333bbbb4444")]


def test_notebook_paths_are_relative_to_the_record_and_old_absolute_ones_still_resolve(tmp_path):
    rec_file = tmp_path / "runs" / "r" / "records" / "x.json"
    assert notebook_path({"notebook": "../notebooks/x.ipynb"}, rec_file) == \
        tmp_path / "runs" / "r" / "notebooks" / "x.ipynb"
    assert notebook_path({"notebook": "../notebooks/x.ipynb", "_path": str(rec_file)}) == \
        tmp_path / "runs" / "r" / "notebooks" / "x.ipynb"
    assert notebook_path({"notebook": "/abs/x.ipynb"}, rec_file) == Path("/abs/x.ipynb")
    assert notebook_path({"notebook": None}, rec_file) is None


def test_report_shows_folders_without_this_machines_paths(tmp_path):
    assert shown_path(PROJECT_ROOT / "reference" / "h100" / "records") == "reference/h100/records"
    assert shown_path(Path.home() / "runs") == "~/runs"
    assert shown_path("/elsewhere/x") == "/elsewhere/x"


def test_report_inputs_must_exist(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CGB_OUTPUTS", str(tmp_path / "out"))
    assert runner.main(["--report-only", "--inputs", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing run, nothing written


def test_published_h100_reference_is_consistent():
    """The committed reference: records readable, one per point of params/gpu.yaml, paths neutral."""
    folder = PROJECT_ROOT / "reference" / "h100"
    recs, skipped = read_records([folder / "records"])
    assert not skipped and len(recs) == len({(r["point_id"], r["fingerprint"].get("boot_id")) for r in recs})
    text = "".join(p.read_text() for p in (folder / "records").glob("*.json"))
    assert str(PROJECT_ROOT) not in text and str(PROJECT_ROOT) not in (folder / "report.html").read_text()
    gpu_points = grid.expand_all([PROJECT_ROOT / "params" / "gpu.yaml"])
    keys = {(r["workload"], r["backend"], r["device"]) for r in recs}
    assert {(p["workload"], p["backend"], p["device"]) for p in gpu_points} <= keys
    for r in recs:
        if r["status"] == "ok" and r["device"] == "gpu":
            assert r["device_used"] == "gpu" and r["utilisation"]["gpu_sampled"]
            if r["utilisation"]["n_samples"] >= 3:  # NVML samples every 0.25 s: shorter windows may miss
                assert r["utilisation"]["gpu_pct_max"] > 0
        if r["status"] == "ok" and r["device"] == "cpu":
            assert r["device_used"] == "cpu" and (r["utilisation"].get("gpu_pct_max") or 0) == 0
        if r["status"] == "skipped":
            assert r["backend"] == "tensorflow" and "not installed" in r["reason"]


def test_skip_failed_leaves_failed_points_alone_on_resume(tmp_path, capsys, monkeypatch):
    """GPU grids resume in slices; a deterministic failure (out of memory) need not run in each slice."""
    from helpers.measure.machine import machine_key

    monkeypatch.setenv("CGB_OUTPUTS", str(tmp_path / "out"))
    g = tmp_path / "g.yaml"  # a GPU point: on this GPU-less machine it is skipped without a kernel
    g.write_text("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: gpu\n")
    p = grid.expand_all([g])[0]
    pid = point_id(notebook.notebook_params(p), machine_key())
    old = empty_record(notebook.notebook_params(p), pid)
    old.update(status="failed", reason="OutOfMemoryError: earlier", started_at="2026-01-01T00:00:00+00:00",
               wall_s=1.0)  # the runner's own field: a point counts as done only with it
    write_atomic(tmp_path / "out" / "runs" / "old" / "records" / record_name(p, pid), old)
    assert notebook.done_point_ids(tmp_path / "out" / "runs") == set()
    assert notebook.done_point_ids(tmp_path / "out" / "runs", ("ok", "failed")) == {pid}
    assert runner.main([str(g), "--no-report", "--skip-failed"]) == 0
    assert f"done before ({pid})" in capsys.readouterr().out
    assert runner.main([str(g), "--no-report"]) == 0  # by default the failed point is tried again
    out = capsys.readouterr().out
    assert f"done before ({pid})" not in out and "skipped" in out


def test_fidelity_merge_keeps_repeats_and_is_idempotent(tmp_path, capsys):
    from benchmarks.studies import gpu_fidelity as gf

    def doc(suite, bare, bare_epoch_median=None, status="ok"):
        bk = {"status": status, "samples_per_s": bare,
              "detail": {"epoch_median_samples_per_s": bare_epoch_median} if bare_epoch_median else {}}
        return {"meta": {}, "rows": [{"workload": "resnet50", "precision": "mixed_bfloat16", "batch": 256,
                                      "results": {"suite-jax": {"status": status, "samples_per_s": suite},
                                                  "bare-keras-jax": bk}}]}
    files = []
    for i, d in enumerate([doc(3600, 3400), doc(4000, 4400, 4560), doc(3610, 3200), doc(9999, 1, status="failed")]):
        files.append(tmp_path / f"f{i}.json")
        files[-1].write_text(json.dumps(d))
    out = tmp_path / "merged.json"
    assert gf.main(["--table-from", *map(str, files), "--out", str(out)]) == 0
    cells = json.loads(out.read_text())["rows"][0]["results"]
    assert [r["samples_per_s"] for r in cells["suite-jax"]["repeats"]] == [3600, 4000, 3610]
    assert cells["suite-jax"]["samples_per_s"] == 3610  # the median of the three
    assert [r["samples_per_s"] for r in cells["bare-keras-jax"]["repeats"]] == [3400, 4560, 3200]  # epoch median
    assert cells["bare-keras-jax"]["samples_per_s"] == 3400  # the failed run replaced nothing
    again = tmp_path / "again.json"
    assert gf.main(["--table-from", str(out), "--out", str(again)]) == 0
    assert json.loads(again.read_text())["rows"] == json.loads(out.read_text())["rows"]
    assert "(n3)" in capsys.readouterr().out


def test_fidelity_paired_ratios_compare_runs_of_the_same_call(tmp_path, capsys):
    """suite/bare-keras is taken per call (drift between calls cancels), once three calls measured both."""
    from benchmarks.studies import gpu_fidelity as gf

    def doc(suite, bare):
        results = {"suite-jax": {"status": "ok", "samples_per_s": suite}}
        if bare is not None:
            results["bare-keras-jax"] = {"status": "ok", "samples_per_s": bare}
        return {"meta": {}, "rows": [{"workload": "vgg_cifar10", "precision": "float32", "batch": 512,
                                      "results": results}]}
    # calls on a slow, a fast and a middling machine state: the suite is 1% behind bare Keras in each
    pairs = [(99.0, 100.0), (198.0, 200.0), (148.5, 150.0)]
    files = []
    for i, (s, b) in enumerate([*pairs, (500.0, None)]):  # the last call measured the suite alone
        files.append(tmp_path / f"c{i}.json")
        files[-1].write_text(json.dumps(doc(s, b)))
    assert gf.main(["--table-from", *map(str, files[:2])]) == 0
    two = capsys.readouterr().out
    assert "ratio of medians (2 paired call(s) only)" in two
    out = tmp_path / "m.json"
    assert gf.main(["--table-from", *map(str, files), "--out", str(out)]) == 0
    r = json.loads(out.read_text())["rows"][0]["ratios"]
    assert r["paired_jax"]["n"] == 3 and r["paired_jax"]["ratios"] == [0.99, 0.99, 0.99]
    assert r["suite_jax/bare_keras_jax"] == 0.99  # not median(suite) / median(bare) = 173.25 / 150
    assert r["checks"]["suite_jax_within_5pct_of_bare_keras"] is True
    assert "median of 3 paired calls, range 0.990-0.990" in capsys.readouterr().out
    assert r["paired_torch"] is None


def test_fidelity_merge_names_runs_by_short_distinct_sources(tmp_path):
    """Two calls' files of one name stay two calls (pairing) and no folder of this machine is kept."""
    from benchmarks.studies import gpu_fidelity as gf

    files = []
    for call, (s, b) in [("1", (95.0, 100.0)), ("7", (210.0, 200.0))]:
        f = tmp_path / call / "fid_bf16.json"
        f.parent.mkdir()
        f.write_text(json.dumps({"meta": {"merged_from": [str(tmp_path / "x" / "old.json")]}, "rows": [
            {"workload": "resnet50", "precision": "mixed_bfloat16", "batch": 256,
             "results": {"suite-jax": {"status": "ok", "samples_per_s": s},
                         "bare-keras-jax": {"status": "ok", "samples_per_s": b}}}]}))
        files.append(f)
    out = tmp_path / "m.json"
    assert gf.main(["--table-from", *map(str, files), "--out", str(out)]) == 0
    text = out.read_text()
    assert str(tmp_path) not in text
    d = json.loads(text)
    srcs = [rp["source"] for rp in d["rows"][0]["results"]["suite-jax"]["repeats"]]
    assert srcs == ["1/fid_bf16.json", "7/fid_bf16.json"]
    assert d["rows"][0]["ratios"]["paired_jax"]["ratios"] == [0.95, 1.05]
    assert d["meta"]["runs"][0]["merged_from"] == ["old.json"]


def test_published_h200x2_scaling_reference_holds_one_lease_of_params_scaling():
    """reference/h200x2: every run of params/scaling.yaml (each configuration twice) from one machine boot; the
    2-GPU records name both devices; each model's efficiency on 2 GPUs is there with float32 and uint8 inputs."""
    from helpers import report
    from helpers.report.derive.devices import device_scaling

    folder = PROJECT_ROOT / "reference" / "h200x2"
    recs, skipped = read_records([folder / "records"])
    assert not skipped and len(recs) == 32 and all(r["status"] == "ok" for r in recs)
    assert len({r["fingerprint"]["boot_id"] for r in recs}) == 1  # one lease
    text = "".join(p.read_text() for p in (folder / "records").glob("*.json"))
    assert str(PROJECT_ROOT) not in text and str(PROJECT_ROOT) not in (folder / "report.html").read_text()
    points = grid.expand_all([PROJECT_ROOT / "params" / "scaling.yaml"])
    ran = {(r["config_id"], r["repeat"]) for r in recs}
    assert len(ran) == 2 * len(points) == 32
    for r in recs:
        assert r["device_used"] == "gpu" and r["gpus"] == len(r["utilisation"]["gpu_indices"])
        if r["gpus"] == 2:
            assert r["mesh_devices"] == ["gpu:0", "gpu:1"] and r["global_batch_size"] == 2 * r["batch_size"]
    ctx = report.build_context([folder / "records"], use_reference=False)
    table = device_scaling(ctx.summary)
    two = table[table["devices"] == 2]
    for wl in ("resnet50", "vgg_cifar10", "cnn_256"):
        have = two[(two["workload"] == wl) & (two["data on"] == "host")]
        assert set(have["input"]) == {"float32", "uint8"} and have["efficiency"].between(0.2, 1.2).all(), wl
    assert set(two[two["workload"] == "resnet50"]["data on"]) == {"host", "device"}


@pytest.mark.parametrize("machine, complete", [("h100x2", True), ("h200x2", False)])
def test_published_multi_gpu_sets_one_process_per_gpu_beside_one_process_driving_both(machine, complete):
    """reference/{h100x2,h200x2}/multi_gpu: runs of params/multi_gpu.yaml from one machine boot, each
    twice; resnet50 on 2 GPUs both ways (gpus: 2 and processes: 2) and both input types, each against the same
    1-GPU run; the merged records of two processes name both processes, each on its own GPU and stopped after the
    same epoch. The H100 pair holds the whole grid (the H200 pair's lease lost VGG's two-process runs to a bug)."""
    from helpers import report
    from helpers.report.derive.devices import device_scaling

    folder = PROJECT_ROOT / "reference" / machine / "multi_gpu"
    recs, skipped = read_records([folder / "records"])
    assert not skipped and recs and all(r["status"] == "ok" and r["device_used"] == "gpu" for r in recs)
    assert len({r["fingerprint"]["boot_id"] for r in recs}) == 1  # one lease
    text = "".join(p.read_text() for p in (folder / "records").glob("*.json"))
    assert str(PROJECT_ROOT) not in text and str(PROJECT_ROOT) not in (folder / "report.html").read_text()
    def way(p):
        return (p["workload"], p.get("gpus", 1), p.get("processes", 1), p.get("input_dtype", "float32"))

    # the two-GPU ways of today's grid (it also plans 4 and 8 GPUs, and its uint8 path is staged today)
    planned = {way(p) for p in grid.expand_all([PROJECT_ROOT / "params" / "multi_gpu.yaml"])
               if p.get("gpus", 1) * p.get("processes", 1) <= 2}
    planned |= {(w, g, n, "uint8") for w, g, n, _ in planned}
    runs = {}
    for r in recs:
        assert way(r["params"]) in planned and r["params"]["batch_size"] == 256
        runs[r["config_id"]] = runs.get(r["config_id"], 0) + 1
    assert set(runs.values()) == {2}  # every configuration published ran twice
    if complete:
        assert {way(r["params"]) for r in recs} == planned and len(runs) == len(planned)
    for r in recs:
        if r.get("merged_from"):
            assert r["process_count"] == 2 and [p["process_id"] for p in r["processes"]] == [0, 1]
            assert sorted(p["cuda_visible_devices"] for p in r["launch_processes"]) == ["0", "1"]
            if complete:
                assert {p["epochs_run"] for p in r["processes"]} == {r["epochs_run"]}
    ctx = report.build_context([folder / "records"], use_reference=False)
    table = device_scaling(ctx.summary)
    two = table[(table["devices"] == 2) & (table["workload"] == "resnet50")]
    assert {(r["input"], r["way"]) for r in two.to_dict("records")} == {
        (i, w) for i in ("float32", "uint8") for w in ("one process", "2 processes x 1 GPU")}
    assert two["efficiency"].between(0.2, 1.2).all()
    if complete:
        vgg = table[(table["devices"] == 2) & (table["workload"] == "vgg_cifar10")]
        assert set(vgg["way"]) == {"one process", "2 processes x 1 GPU"} and len(vgg) == 4
    assert "Two ways to drive N GPUs" in (folder / "report.html").read_text()


def test_no_published_report_shows_markup_as_text():
    """A note's own tags (<code>, <i>) reach every published report as markup, never escaped into the text."""
    pages = sorted((PROJECT_ROOT / "reference").rglob("report.html"))
    assert len(pages) >= 5
    for page in pages:
        text = page.read_text()
        assert "<code>" in text, page
        for tag in ("code", "i", "b"):
            assert f"&lt;{tag}&gt;" not in text, (page, tag)


def test_published_h100_ladder_holds_every_rung_of_params_ladder():
    """reference/h100/ladder: every configuration of params/ladder.yaml ran at least twice on the H100,
    every record is ok and carries FLOPs per sample and MFU, the limit section finds every rung of every workload's
    chain, and the bare loops of the same host were published beside the records."""
    from collections import Counter

    from helpers import report
    from helpers.report.load.reference import reference_folders
    from helpers.report.publish import sections

    folder = PROJECT_ROOT / "reference" / "h100" / "ladder"
    recs, skipped = read_records([folder / "records"])
    assert not skipped and recs and all(r["status"] == "ok" and r["device_used"] == "gpu" for r in recs)
    text = "".join(p.read_text() for p in (folder / "records").glob("*.json"))
    assert str(PROJECT_ROOT) not in text and str(PROJECT_ROOT) not in (folder / "report.html").read_text()
    # TensorFlow names the device it used "/device:GPU:0": the card's name is in the record's fingerprint
    assert all(r["flops_per_sample"] > 0 and r["mfu"] > 0 and ("H100" in r["device_detail"] or (
        r["backend"] == "tensorflow" and r["device_detail"].endswith("GPU:0")
        and "H100" in " ".join(r["fingerprint"]["gpu_names"]))) for r in recs)
    runs = Counter(r["config_id"] for r in recs)
    points = grid.expand_all([PROJECT_ROOT / "params" / n for n in ("ladder.yaml", "ladder_tf.yaml")])
    assert len(runs) == len(points) and min(runs.values()) >= 2  # one config_id per ladder point
    limit = sections.get("limit")
    lad = limit.ladder_rows(report.build_context([folder / "records"], use_reference=False).summary)
    chains = limit.rungs()
    have = lad.groupby(["workload", "backend"])["rung"].apply(set).to_dict()
    assert {k: set(range(len(c))) for k, c in chains.items()} == have
    titled = [ax.get_title("left") for ax in limit.ladder_chart(lad).axes if ax.get_title("left")]
    assert len(titled) == len(chains) == 21  # every workload x backend drawn (resnet50 on three), none cut off
    loops = [json.loads(line) for line in (folder / "records" / "bare_loops.jsonl").read_text().splitlines()]
    assert {(b["workload"], b["impl"]) for b in loops} >= {("resnet50", "bare-jax"), ("resnet50", "bare-torch")}
    html = (folder / "report.html").read_text()
    assert folder / "records" not in reference_folders()  # not a CPU-only report's pairing reference
    assert "best rung" in html and "largest step (× the rung before)" in html and "3: bf16 (× 0.0018)" in html


def test_the_reference_top_up_grid_runs_configurations_of_the_reference():
    """params/reference_topup.yaml (the runs the publication still needs) must give the same point ids as
    params/reference.yaml: else its runs would be other configurations, never repeats of the published cells."""
    from helpers.measure.machine import machine_key

    def ids(name):
        return {point_id(notebook.notebook_params(r), machine_key())
                for r in grid.runs(grid.expand_all([PROJECT_ROOT / "params" / name]))}

    reference, top_up = ids("reference.yaml"), ids("reference_topup.yaml")
    assert len(top_up) == 24 and top_up <= reference  # the 20 CPU twins and bilstm_imdb, lstm_textgen on the GPU


def test_published_h100_profile_holds_a_breakdown_for_every_cell_and_the_best_rungs():
    """The step breakdown on the H100: the 20 README cells (params/reference.yaml's GPU cells) and resnet50 at the
    ladder's best rung on both backends, each with a step breakdown whose parts add up to its traced step; the report
    shows the section; the folder is not a pairing reference (one-run profiled figures never meet a CPU-only report)."""
    folder = PROJECT_ROOT / "reference" / "h100" / "profile"
    recs, skipped = read_records([folder / "records"])
    assert not skipped and len(recs) == 22 and all(r["status"] == "ok" and r["device"] == "gpu" for r in recs)
    cells = {(p["workload"], p["backend"], p["batch_size"])
             for p in grid.expand_all([PROJECT_ROOT / "params" / "reference.yaml"]) if p["device"] == "gpu"}
    have = {(r["workload"], r["backend"], r["batch_size"]) for r in recs}
    assert len(cells) == 20 and cells <= have
    best = {(r["backend"], r["params"]["precision"], r["params"].get("input_dtype")) for r in recs
            if r["workload"] == "resnet50" and r["batch_size"] == 256}
    assert best == {("jax", "mixed_bfloat16", "uint8"), ("torch", "mixed_bfloat16", "uint8")}
    for r in recs:
        b = r["step_breakdown"]
        assert r["params"]["profile"] is True and b["device"] == "gpu"
        assert sum(b["parts_ms"].values()) == pytest.approx(b["step_ms"], rel=0.10), r["point_id"]
        assert b["top"] and b["kernel_families_ms"] and b["unprofiled_step_ms"] > 0
    page = (folder / "report.html").read_text()
    assert 'id="breakdown"' in page and "cgb-absent" not in page.split('id="breakdown"', 1)[1][:200]
    assert folder / "records" not in {p for p in (PROJECT_ROOT / "reference").glob("*/records")}


def test_published_h100x4_holds_the_scaling_grid_of_one_lease_and_its_readme_table_is_generated():
    """reference/h100x4: every configuration of params/multi_gpu.yaml up to 4 GPUs from one lease (ResNet-50's
    twice, VGG's at least once), the 8-GPU points skipped by the runner with the reason and no kernel; the two
    profiled points of params/multi_gpu_profile.yaml with their collectives; the README's table is the one the
    records give (helpers.report.publish.devices_readme), and the report leads with the scaling answer."""
    from collections import Counter

    from helpers.report.derive.context import build_context
    from helpers.report.derive.devices import scaling_table
    from helpers.report.publish.devices_readme import readme_table

    folder = PROJECT_ROOT / "reference" / "h100x4"
    recs, _ = read_records([folder / "records"])
    assert len({r["fingerprint"]["boot_id"] for r in recs}) == 1  # one lease

    def key(p):
        return (p["workload"], p.get("gpus", 1), p.get("processes", 1), p.get("input_dtype", "float32"),
                p.get("data_placement", "host"), bool(p.get("profile")))

    planned = {key(p) for p in grid.expand_all([PROJECT_ROOT / "params" / "multi_gpu.yaml"])
               if p.get("gpus", 1) * p.get("processes", 1) <= 4}
    ok = Counter(key(r["params"]) for r in recs if r["status"] == "ok" and not r["params"].get("profile"))
    assert set(ok) == planned
    assert all(n >= (2 if k[0] == "resnet50" else 1) for k, n in ok.items()), ok
    eight = [r for r in recs if r["params"].get("gpus", 1) * r["params"].get("processes", 1) == 8]
    assert eight and all(r["status"] == "skipped" and "needs 8 GPUs" in r["reason"]
                         and "but this host shows 4" in r["reason"] for r in eight)
    prof = [r for r in recs if r["params"].get("profile")]
    assert sorted(r["params"].get("gpus", 1) for r in prof) == [1, 4]
    assert all(r["step_breakdown"]["parts_ms"] for r in prof)
    table = readme_table(scaling_table(build_context([folder / "records"], use_reference=False)))
    assert table in (folder / "README.md").read_text()
    page = (folder / "report.html").read_text()
    assert page.find("Scaling: samples/s and efficiency") < page.find("Where the time of a step goes")
    assert "the collectives (NCCL&#x27;s kernels" in page or "the collectives (NCCL's kernels" in page


def test_mfu_of_a_point_of_several_processes_is_over_every_gpus_peak():
    """A 2-process x 1-GPU record (reference/h100x2/multi_gpu): the report's peak is both GPUs' and its MFU the
    record's own, never the two processes' FLOP/s over one GPU's peak."""
    from helpers.measure import peaks
    from helpers.report.load.table import tidy

    recs, _ = read_records([PROJECT_ROOT / "reference" / "h100x2" / "multi_gpu" / "records"])
    two = [r for r in recs if r.get("merged_from") == 2 and r.get("mfu")]
    one = [r for r in recs if (r["params"].get("processes") or 1) == 1 and (r["params"].get("gpus") or 1) == 1]
    assert two and one
    df = tidy(two + one[:1])
    peak_one = float(df["peak_flops"].iloc[-1])
    for r, row in zip(two, df.head(len(two)).to_dict("records")):
        assert row["peak_flops"] == pytest.approx(2 * peak_one) == pytest.approx(r["peak_tflops"] * 1e12)
        # the record's MFU, from its own achieved FLOP/s over the peak the report now takes
        assert r["achieved_tflops"] * 1e12 / row["peak_flops"] == pytest.approx(r["mfu"], rel=1e-6)
        # the report's MFU (its FLOPs count includes the optimiser's update: a few per cent apart), never twice it
        assert float(peaks.mfu(row["flops_per_sample"], row["samples_per_s"], row["peak_flops"])) == pytest.approx(
            r["mfu"], rel=0.05)


def test_every_published_reference_re_renders_its_csvs_byte_equal(tmp_path):
    """Every reference's CSVs, rebuilt from its records as the report builds them (the reader's upgrade of older
    schemas included), are the committed files byte for byte: the upgrade on read changes no figure."""
    from helpers import report
    from helpers.report.publish import csvs

    folders = sorted(p.parent for p in (PROJECT_ROOT / "reference").glob("**/records") if p.is_dir())
    assert len(folders) >= 8
    for folder in folders:
        ctx = report.build_context([folder / "records"], use_reference=False)
        out = tmp_path / folder.relative_to(PROJECT_ROOT)
        for written in csvs.write_csvs(ctx, out):
            committed = folder / written.name
            assert written.read_bytes() == committed.read_bytes(), committed
