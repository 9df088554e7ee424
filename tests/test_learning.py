"""Fast and right (issue 70): a configuration that did not learn is marked, never the verdict's best (named on its row
with its reason, the next-fastest that learned taking its place), and a workload whose only GPU configuration
diverged says "did not learn" in place of a speedup. Real runs through the runner on the CPU: mlp_mnist on JAX, one
configuration at a learning rate of 1e3 (its loss rises), two at the source's 0.001; then the tolerance of "in line"
from literal records: the spread between runs of one configuration, never a number typed in."""

from __future__ import annotations

import csv
import html
import json
import re

import pytest
from support import XLA_CACHE
from support.records import _ctx, _rec
from support.shared_run import run_all

from helpers import report
from helpers.record.reader import read_records
from helpers.record.writer import write_atomic
from helpers.report.derive import best, learning
from helpers.report.derive.pairs import all_pairs
from helpers.report.publish import csvs, sections
from helpers.report.words import learned

GRID = ("defaults: {backend: jax, device: cpu, data_source: synthetic, workload: mlp_mnist, epochs: 2, n_train: 256,"
        " batch_size: 128, min_steady_s: 0.1}\npoints:\n  - {learning_rate: 1000}\n  - {threads: 1}\n"
        "  - {threads: 0}\n")  # batch 128, fp32: the bundled H100 reference ran it, so it is the GPU side
DIVERGES = "learning_rate=1000"
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The three configurations' records, written by the runner (one call, ``run_all.sh --no-report``)."""
    tmp = tmp_path_factory.mktemp("learning")
    grid = tmp / "g.yaml"
    grid.write_text(GRID)
    # the suite's compilation cache: the second and third points load the model's and the step's executables the first
    # compiled (the same HLO; a threads setting or a learning rate is not in it); the steady-state epochs this test
    # ranks by run the same executables either way
    res = run_all([grid, "--no-report"], tmp / "out", timeout=600, CGB_OFFLINE="1", **XLA_CACHE)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    return tmp / "out"


def _text(section) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", section._repr_html_())))


@pytest.mark.xdist_group("learning")
def test_a_configuration_that_did_not_learn_is_marked_and_the_next_fastest_that_learned_wins(runs, tmp_path):
    report.setup_plots()
    ctx = report.build_context([runs])  # no GPU run here: the bundled reference's H100 is the GPU side
    s = ctx.summary
    mine = s[(s["workload"] == "mlp_mnist") & (s["device"] == "cpu")]
    assert len(mine) == 3, mine[["threads", "knobs"]]
    bad = mine[mine["knobs"].str.contains(DIVERGES)]
    good = mine[~mine["knobs"].str.contains(DIVERGES)]
    assert list(bad["learned"]) == ["no"] and "loss did not fall" in bad["learned_why"].iloc[0], bad["learned_why"]
    assert list(good["learned"]) == ["yes", "yes"], good["learned_why"]
    # the verdict: the fastest CPU configuration that learned, the one that did not named on the row with its reason
    row = learned.with_texts(best.best_over_best(ctx.costed)).set_index("workload").loc["mlp_mnist"]
    winner = good.sort_values("samples_per_s").iloc[-1]
    assert row["samples_per_s_cpu"] == pytest.approx(winner["samples_per_s"]) and row["learned_cpu"] == "yes"
    assert DIVERGES in row["not_learned"] and "loss did not fall" in row["not_learned"]
    faster = bad["samples_per_s"].iloc[0] > winner["samples_per_s"]
    assert ("faster" in row["not_learned"]) == faster  # said when it was faster than the side taken
    page = _text(sections.build(sections.get("verdict"), ctx))
    assert "Left out of the verdict's best, for they did not learn" in page and DIVERGES in page
    assert learned.MARK + " did not learn (the loss-and-accuracy section says why)" in page  # its mark, explained
    # the learned columns of configurations.csv and verdict.csv
    _, conf, verdict = csvs.write_csvs(ctx, tmp_path / "csv")
    conf_rows = list(csv.DictReader(conf.open(encoding="utf-8")))
    marked = {r["knobs"]: (r["learned"], r["marks"]) for r in conf_rows if r["device"] == "cpu"}
    assert all((v[0] == "no") == (DIVERGES in k) == (learned.MARK in v[1]) for k, v in marked.items()), marked
    vrow = next(r for r in csv.DictReader(verdict.open(encoding="utf-8")) if r["workload"] == "mlp_mnist")
    assert (vrow["cpu_learned"], vrow["gpu_learned"]) == ("yes", "yes") and DIVERGES in vrow["not_learned_left_out"]
    # the loss-and-accuracy section: one line for the workload, naming it and why
    line = next(t for t in learned.lines(s) if t.startswith("mlp_mnist:"))
    assert f"{len(s) - 1} of {len(s)} configurations learned" in line and DIVERGES in line, line
    assert line in _text(sections.build(sections.get("history"), ctx))
    # never paired: the speedups hold no pair of it
    pairs = all_pairs(ctx.summary)
    assert not pairs["knobs"].astype(str).str.contains(DIVERGES).any()


@pytest.mark.xdist_group("learning")
def test_a_workload_whose_only_gpu_configuration_diverged_says_did_not_learn_in_place_of_a_speedup(runs, tmp_path):
    """The diverging run's record, as a GPU's (its device and GPU said so), beside a CPU run that learned."""
    records, _ = read_records([runs])
    folder = tmp_path / "records"
    for r in records:
        r = {k: v for k, v in r.items() if not k.startswith("_")}
        if DIVERGES.split("=")[0] in r["params"] and r["params"]["learning_rate"] == 1000:
            r.update(device="gpu", device_used="gpu", point_id=r["point_id"] + "-gpu",
                     fingerprint={**r["fingerprint"], "gpu_names": [H100]})
        elif r["params"].get("threads") != 1:
            continue
        write_atomic(folder / f"{r['point_id']}.json", r)
    report.setup_plots()
    ctx = report.build_context([folder], use_reference=False)
    assert set(ctx.summary["device"]) == {"cpu", "gpu"}
    assert not len(best.best_over_best(ctx.costed))  # no speedup ...
    dnl = ctx.not_learned
    assert list(dnl["workload"]) == ["mlp_mnist"] and list(dnl["side"]) == ["GPU"]
    page = _text(sections.build(sections.get("verdict"), ctx))
    assert "mlp_mnist: did not learn on the GPU side" in page and "so no speedup" in page, page[:2000]
    assert "×" not in page.split("did not learn on the GPU side")[1][:300]
    _, _, verdict = csvs.write_csvs(ctx, tmp_path / "csv")
    vrow = next(r for r in csv.DictReader(verdict.open(encoding="utf-8")) if r["workload"] == "mlp_mnist")
    assert vrow["speedup"] == "" and vrow["speedup_shown"] == "did not learn (GPU side)" and vrow["gpu_learned"] == "no"
    assert "no GPU/CPU pair" in (sections.build(sections.get("speedup"), ctx).reason or "")


def _runs(i0, wl, backend, losses, device="cpu", n=4):
    """One configuration's runs, each with a falling loss that ends at ``losses[k]`` after ``n`` epochs."""
    out = []
    for k, last in enumerate(losses):
        curve = [2.0 - (2.0 - last) * e / (n - 1) for e in range(n)]
        out.append(_rec(i0 + k, workload=wl, backend=backend, device=device, device_used=device,
                        point_id=f"{wl}-{backend}-{device}-{k}", history={"loss": curve},
                        fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4,
                                     "gpu_names": [H100] if device == "gpu" else [], "versions": {"keras": "3"}}))
    return out


def test_in_line_takes_its_tolerance_from_the_spread_between_runs_of_one_configuration(tmp_path):
    """JAX ran twice (0.10 and 0.14 after 4 epochs: a spread of 0.04), TF once at 0.12, PyTorch once at 0.30: PyTorch is
    further above the others' median than 0.04, so it did not learn; the same PyTorch loss among configurations whose
    runs spread more (0.30 apart) is in line. One run each: not compared, and the line says so."""
    ctx = _ctx(tmp_path / "a", _runs(0, "cnn_cifar10", "jax", [0.10, 0.14]) + _runs(10, "cnn_cifar10", "tensorflow",
               [0.12]) + _runs(20, "cnn_cifar10", "torch", [0.30]))
    s = ctx.summary.set_index("backend")
    assert s.loc["torch", "learned"] == "no" and "by more than the spread between runs (0.04)" in s.loc[
        "torch", "learned_why"], s.loc["torch", "learned_why"]
    assert (s.loc["jax", "learned"], s.loc["tensorflow", "learned"]) == ("yes", "yes")
    assert s["loss_tolerance"].tolist() == pytest.approx([0.04] * 3)
    wide = _ctx(tmp_path / "b", _runs(0, "cnn_cifar10", "jax", [0.05, 0.35]) + _runs(10, "cnn_cifar10", "tensorflow",
                [0.12]) + _runs(20, "cnn_cifar10", "torch", [0.30]))
    assert set(wide.summary["learned"]) == {"yes"}
    once = _ctx(tmp_path / "c", _runs(0, "cnn_cifar10", "jax", [0.10]) + _runs(20, "cnn_cifar10", "torch", [0.90]))
    assert set(once.summary["learned"]) == {"yes"}
    assert all("not compared with the other configurations" in w for w in once.summary["learned_why"])


def test_a_run_is_checked_finite_falling_and_above_chance_and_random_targets_for_finiteness_only():
    nan = float("nan")
    assert learning.run_check((2.3, nan, 2.0), 0.5, 10, None) == ("no", "loss not finite (nan) from epoch 2")
    assert learning.run_check((2.3, 2.4), 0.5, 10, None)[0] == "no"
    assert learning.run_check((2.3, 2.0), 0.1, 10, None) == ("no", "accuracy 0.1 at chance (1/10)")
    assert learning.run_check((2.3, 2.0), 0.5, 10, None)[0] == "yes"
    assert learning.run_check((2.3, 2.4), None, None, False)[0] == "not checked"
    assert learning.run_check((2.3, nan), None, None, False)[0] == "no"
    assert learning.run_check((), None, None, None) == ("not checked", "no loss recorded")


def test_larger_batches_say_what_learning_they_give_up():
    import pandas as pd

    base = {"machine": "m", "workload": "mlp_mnist", "backend": "jax", "device": "gpu", "precision": "float32",
            "data_source": "synthetic", "n_train": 1000, "augment": None, "knobs": "", "learned": "yes",
            "threads": 0, "jit_compile": "auto"}
    summ = pd.DataFrame([{**base, "batch_size": 128, "loss_curve_median": (2.0, 1.0, 0.2)},
                         {**base, "batch_size": 1024, "loss_curve_median": (2.0, 1.5, 1.1)}])
    said = learned.batches(summ)
    assert len(said) == 1 and "b1024 1.1 (gives up 50% of b128's fall in loss)" in said[0], said
    assert json.dumps(said)  # plain strings
