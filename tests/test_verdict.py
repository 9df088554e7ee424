"""The verdict answers "how much faster can I train on a GPU": each workload's fastest GPU
configuration over its fastest CPU configuration, any backend, at the same batch size and precision, both sides
named; verdict.csv holds those rows, as configurations.csv's figures say; every figure is shown with one string
wherever it appears (sentences, chart labels, tables, CSV, the reference's README)."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest
from support.records import _ctx, _rec

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.report.derive import best
from helpers.report.derive.pairs import all_pairs
from helpers.report.publish import csvs, sections
from helpers.report.words import fmt, headline

H100 = "NVIDIA H100 80GB HBM3"


def _point(i, backend, device, sps, batch=1000, precision="float32", runs=(1.0,), workload="cnn_cifar10"):
    """Records of one configuration: one a run, each run's samples/s = ``sps`` × the factor in ``runs``."""
    out = []
    for k, f in enumerate(runs):
        s = sps * f
        out.append(_rec(100 * i + k, workload=workload, backend=backend, device=device, device_used=device,
                        batch_size=batch, n_train=1000, median_epoch_s=1000 / s, epoch_s=[1000 / s] * 3,
                        samples_per_s=s, step_s=batch / s, steps_per_epoch=max(1, 1000 // batch),
                        params={"threads": 0, "precision": precision},
                        point_id=f"{workload}-{backend}-{device}-{batch}-{precision}-{k}",
                        fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4, "gpu_names": [H100],
                                     "versions": {"keras": "3.15.1"}}))
    return out


@pytest.fixture()
def tf_fast(tmp_path):
    """cnn_cifar10: TensorFlow on the CPU 10,000 samples/s, JAX on the CPU 1,000 (10× slower); JAX on the GPU
    240,000 and PyTorch 60,000 at the same batch; JAX on the GPU at batch 5000 in bf16 500,000 (no CPU ran it);
    TensorFlow has no GPU run. mlp_mnist: JAX only, CPU 2,000 and GPU 5,000 (two runs a side)."""
    recs = (_point(0, "tensorflow", "cpu", 10_000) + _point(1, "jax", "cpu", 1_000) + _point(2, "jax", "gpu", 240_000)
            + _point(3, "torch", "gpu", 60_000) + _point(4, "jax", "gpu", 500_000, batch=5000,
                                                        precision="mixed_bfloat16")
            + _point(5, "jax", "cpu", 2_000, batch=128, workload="mlp_mnist", runs=(0.95, 1.05))
            + _point(6, "jax", "gpu", 5_000, batch=128, workload="mlp_mnist", runs=(0.9, 1.1)))
    report.setup_plots()
    return _ctx(tmp_path, recs)


def test_the_verdict_takes_the_fastest_cpu_backend_and_names_both_sides(tf_fast):
    rows = best.best_over_best(tf_fast.costed).set_index("workload")
    r = rows.loc["cnn_cifar10"]
    assert (r["backend_cpu"], r["backend_gpu"]) == ("tensorflow", "jax")
    assert (r["batch_size"], r["precision"]) == (1000, "float32")  # never the bf16 batch-5000 GPU point
    assert r["speedup"] == pytest.approx(24.0)  # 240,000 / 10,000, not JAX's 240× like for like
    assert headline.sides(r) == "TF on 4 CPU cores → JAX on the H100"
    page = sections.build(sections.get("verdict"), tf_fast)._repr_html_()
    said = headline.sentences(rows.reset_index(), headline.compared(tf_fast.df),
                              headline.best_pairs(all_pairs(tf_fast.costed)), best.one_side(tf_fast.costed))
    assert any("TF on 4 CPU cores → JAX on the H100 (24.0×" in s or "TF on 4 CPU cores → JAX on the H100 (24×" in s
               for s in said), said
    assert "Measured on one side only: TF on the CPU (cnn_cifar10)" in " ".join(said)
    assert "TF on 4 CPU cores → JAX on the H100" in page and "sides compared: CPU → GPU" in page
    like = sections.get("verdict").like_for_like(headline.best_pairs(all_pairs(tf_fast.costed)))
    jax = like[(like["workload"] == "cnn_cifar10") & (like["backend (both sides)"] == "jax")].iloc[0]
    assert jax["GPU ÷ CPU"].startswith("240×")  # the same backend on both sides stays below, as the detail


def _conf(ctx, tmp_path):
    res, conf, verdict = csvs.write_csvs(ctx, tmp_path / "out")
    assert verdict.name == "verdict.csv" and verdict.parent == conf.parent
    return pd.read_csv(conf), pd.read_csv(verdict)


def _matches(conf, verdict):
    """Each verdict row: its sides are the fastest CPU and GPU configuration of configurations.csv at its batch
    size and precision among those that learned, and its speedup their ratio."""
    assert len(verdict) and verdict["workload"].is_unique
    for v in verdict.to_dict("records"):
        at = conf[(conf["workload"] == v["workload"]) & (conf["batch_size"] == v["cpu_batch_size"])
                  & (conf["precision"] == v["cpu_precision"])]
        assert (v["gpu_batch_size"], v["gpu_precision"]) == (v["cpu_batch_size"], v["cpu_precision"])
        for d in ("cpu", "gpu"):
            side = at[(at["device"] == d) & (at["learned"] != "no")]  # the fastest that learned (issue 70)
            top = side.loc[side["samples_per_s_median"].idxmax()]
            assert v[f"{d}_samples_per_s_median"] == pytest.approx(top["samples_per_s_median"], rel=1e-9), v
            assert (v[f"{d}_backend"], v[f"{d}_runs"]) == (top["backend"], top["runs"])
        assert v["speedup"] == pytest.approx(v["gpu_samples_per_s_median"] / v["cpu_samples_per_s_median"])
        assert v["speedup_shown"].endswith("×")


def test_verdict_csv_matches_configurations_csv(tf_fast, tmp_path):
    conf, verdict = _conf(tf_fast, tmp_path)
    _matches(conf, verdict)
    r = verdict.set_index("workload").loc["cnn_cifar10"]
    assert (r["cpu_backend"], r["gpu_backend"], r["speedup_shown"]) == ("tensorflow", "jax", "24×")
    assert r["sides"] == "TF on 4 CPU cores → JAX on the H100"


def test_verdict_csv_matches_configurations_csv_on_the_h100_reference(reference_ctx, tmp_path):
    conf, verdict = _conf(reference_ctx, tmp_path)
    _matches(conf, verdict)
    assert len(verdict) == 10  # every workload of the table, best over best
    r = verdict.set_index("workload").loc["cnn_cifar10"]  # TF's CPU is the fastest: 54,268 against 10,439 and 6,396
    assert (r["cpu_backend"], r["gpu_backend"], r["speedup_shown"]) == ("tensorflow", "jax", "5.1×")


# ------------------------------------------------------------------ one string per figure

def _candidates(v) -> set:
    """Every way a figure has been shown: 1 to 4 significant digits, whole with thousands, two decimals."""
    out = {fmt.rounded(v, d) for d in range(1, 5)} | {f"{v:,.0f}", f"{v:,.2f}", f"{v:.2g}", f"{v:.3g}"}
    return {c for c in out if c not in ("0", "0.0")}


def _sps_candidates(v) -> set:
    """A samples/s figure's renderings with three digits or more (fewer would meet tick labels and durations)."""
    out = {fmt.rounded(v, d) for d in range(2, 5)} | {f"{v:,.0f}", f"{v:,.2f}"}  # the report shows 2 digits or more
    return {c for c in out if sum(ch.isdigit() for ch in c) >= 3}


def _one_string(text, figures: dict, unit: str, candidates=_candidates) -> None:
    """``figures``: name -> (value, the string the report shows). For each figure, the renderings of its value
    found in ``text`` (a number followed by ``unit``, standing alone) are at most its shown string (a rendering that
    is another figure's shown string is that figure's); the verdict's figures (names not starting 'config', 'pair')
    are found."""
    shown = {s for _, s in figures.values()}
    for name, (v, s) in figures.items():
        found = set()
        for c in candidates(v) | {s}:
            if (c == s or c not in shown) and re.search(rf"(?<![\d.,]){re.escape(c)}{re.escape(unit)}(?![\d,])", text):
                found.add(c)
        assert found <= {s}, (name, v, s, found)
        assert found or name.startswith(("config", "pair")), (name, v, s)


def _figures(ctx):
    rows = best.best_over_best(ctx.costed)
    pairs = headline.best_pairs(all_pairs(ctx.costed))
    speed = {f"verdict {r['workload']}": (r["speedup"], fmt.speedup_shown(r)[:-1]) for r in rows.to_dict("records")}
    speed.update({f"pair {r['workload']} {r['backend']}": (r["speedup"], fmt.speedup_shown(r)[:-1])
                  for r in pairs.to_dict("records")})
    sps = {f"config {i}": (r["samples_per_s"], fmt.sps_shown(r)) for i, r in enumerate(ctx.costed.to_dict("records"))}
    for r in rows.to_dict("records"):
        for d in ("_cpu", "_gpu"):
            sps[f"{r['workload']}{d}"] = (r[f"samples_per_s{d}"], fmt.sps_shown(r, d))
    return rows, speed, sps


def _page(ctx, names) -> str:
    html = " ".join(sections.build(sections.get(n), ctx)._repr_html_() for n in names)
    # predicted figures are another kind (helpers/report/derive/predicted.py: marked, each with its interval), not
    # strings of the measured ones: left out here
    html = re.sub(r'<ul class="cgb-predicted">.*?</ul>', " ", html, flags=re.S)
    html = re.sub(r"<details><summary>Predicted beside measured.*?</details>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)  # the text, SVG labels included


def test_one_string_per_figure_in_a_default_like_report(tmp_path):
    """A 2-core CPU run of the default grid's cnn_cifar10 and mlp_mnist on the three backends, paired with the bundled
    H100 reference: every speedup and samples/s figure has one string in the verdict (sentences, chart labels,
    tables), the speedup and throughput sections and verdict.csv."""
    recs = (_point(0, "tensorflow", "cpu", 11_622) + _point(1, "jax", "cpu", 1_169) + _point(2, "torch", "cpu", 2_350)
            + _point(3, "jax", "cpu", 27_100, batch=128, workload="mlp_mnist")
            + _point(4, "tensorflow", "cpu", 9_000, batch=128, workload="mlp_mnist"))
    for r in recs:
        r["fingerprint"] = {**r["fingerprint"], "gpu_names": [], "cpu_logical": 2}
    report.setup_plots()
    ctx = _ctx(tmp_path, recs, use_reference=True)
    rows, speed, sps = _figures(ctx)
    assert set(rows["workload"]) == {"cnn_cifar10", "mlp_mnist"}
    text = _page(ctx, ["verdict", "speedup", "throughput"])
    _, verdict = _conf(ctx, tmp_path)
    text += " " + " ".join(f"{s}× {a} {b}" for s, a, b in zip(
        verdict["speedup_shown"].str[:-1], verdict["cpu_samples_per_s_shown"], verdict["gpu_samples_per_s_shown"]))
    _one_string(text, speed, "×")
    _one_string(re.sub(r"\[[^\]]*\]", " ", text), sps, "", _sps_candidates)  # intervals' bounds are not figures
    r = rows.set_index("workload").loc["cnn_cifar10"]
    assert headline.sides(r) == "TF on 2 CPU cores → JAX on the reference H100"
    assert fmt.speedup_shown(r) in text  # 275,995 / 11,622


def test_one_string_per_figure_in_the_h100_reference_and_its_readme(reference_ctx, tmp_path):
    rows, speed, sps = _figures(reference_ctx)
    text = _page(reference_ctx, ["verdict"])
    _, verdict = _conf(reference_ctx, tmp_path)
    text += " " + " ".join(f"{s}× {a} {b}" for s, a, b in zip(
        verdict["speedup_shown"].str[:-1], verdict["cpu_samples_per_s_shown"], verdict["gpu_samples_per_s_shown"]))
    _one_string(text, speed, "×")
    _one_string(re.sub(r"\[[^\]]*\]", " ", text), sps, "", _sps_candidates)  # intervals' bounds are not figures
    # the READMEs quote the verdict with the report's strings (the spread table, printed by
    # benchmarks/reference_spread.py from the runs, is a table of its own and not the verdict)
    readmes = [PROJECT_ROOT / "README.md", PROJECT_ROOT / "reference" / "h100" / "README.md"]
    quoted = " ".join(line for p in readmes for line in p.read_text(encoding="utf-8").splitlines()
                      if "best against best" in line or "fastest CPU configuration" in line)
    verdict_only = {k: v for k, v in speed.items() if k.startswith("verdict")}
    lo, hi = rows.sort_values("speedup").iloc[[0, -1]].to_dict("records")
    for r in (lo, hi):
        assert f"{fmt.speedup_shown(r)} ({r['workload']}" in quoted, (fmt.speedup_shown(r), quoted)
    for name, (v, s) in verdict_only.items():
        found = {c for c in _candidates(v) if re.search(rf"(?<![\d.,]){re.escape(c)}×", quoted)}
        assert found <= {s}, (name, s, found)


# ------------------------------------------------------------------ when the GPU pays off

def _side(first, steady, source_epoch, d):
    """One side of a verdict row: first and steady epoch of the run's own n_train, a source epoch (seconds)."""
    return {f"first_epoch_s{d}": first, f"s_per_epoch{d}": steady, f"source_epoch_s{d}": source_epoch}


def test_the_break_even_by_hand():
    from helpers.report.derive import breakeven as be
    from helpers.report.words import payoff

    rows = pd.DataFrame([
        # GPU: compiles 60 s, 2 s a source epoch; CPU: compiles 1 s, 20 s an epoch. 60 + 2n <= 1 + 20n from
        # n >= 59/18 = 3.3: after 3 epochs 66 s against 61 s, after 4 68 s against 81 s
        {"workload": "cnn_cifar10", **_side(61.0, 1.0, 2.0, "_gpu"), **_side(11.0, 10.0, 20.0, "_cpu")},
        # GPU 60 + 10n against CPU 1 + 10.5n: ahead from n >= 118, past the horizon
        {"workload": "mlp_mnist", **_side(61.0, 1.0, 10.0, "_gpu"), **_side(2.0, 1.0, 10.5, "_cpu")},
        # GPU 2 + 1n against CPU 1 + 20n: 3 s against 21 s after the first epoch
        {"workload": "cnn_mnist", **_side(3.0, 1.0, 1.0, "_gpu"), **_side(2.0, 1.0, 20.0, "_cpu")},
        # GPU 1 + 2n against CPU 10 + 1n: ahead through n = 9, behind from 10
        {"workload": "lstm_textgen", **_side(2.0, 1.0, 2.0, "_gpu"), **_side(11.0, 1.0, 1.0, "_cpu")},
    ])
    out = be.add(rows, {"cnn_mnist": 50}).set_index("workload")
    assert list(out["gpu_ahead_after"].astype(object).where(out["gpu_ahead_after"].notna(), None)) == [4, None, 1, 1]
    assert out.loc["lstm_textgen", "gpu_behind_from"] == 10 and out["gpu_behind_from"].isna().sum() == 3
    assert (out.loc["cnn_cifar10", "compile_s_gpu"], out.loc["cnn_cifar10", "compile_s_cpu"]) == (60.0, 1.0)
    # N: the records' epochs_planned, else the source's epochs ("(the source: 20)"), else the default
    n = out[["epochs_planned", "planned_from"]].to_dict("index")
    assert n["cnn_mnist"] == {"epochs_planned": 50, "planned_from": "records"}
    assert n["mlp_mnist"] == {"epochs_planned": 20, "planned_from": "source"}
    assert n["cnn_cifar10"] == {"epochs_planned": be.DEFAULT_EPOCHS, "planned_from": "default"}
    assert out.loc["cnn_cifar10", "planned_s_gpu"] == 60 + 2 * be.DEFAULT_EPOCHS
    assert out.loc["mlp_mnist", "planned_s_cpu"] == pytest.approx(1 + 10.5 * 20)
    said = {t.split(":")[0]: t for t in payoff.per_workload(out.reset_index())}
    assert said["cnn_cifar10"].endswith("the GPU is ahead after 4 epochs (its first epoch spends 1.0 min compiling, "
                                        "the CPU's 1.0 s).")
    assert said["cnn_cifar10"].startswith("cnn_cifar10: 10 epochs (the suite's default), the first (compiling) one "
                                          "included, take 3.4 min on the CPU and 1.3 min on the GPU;")  # 201 s, 80 s
    assert said["mlp_mnist"].endswith("the GPU is never ahead within 100 epochs.")
    assert said["cnn_mnist"].endswith("the GPU is ahead from the first epoch.") and "50 epochs (epochs_planned)" in \
        said["cnn_mnist"]
    assert said["lstm_textgen"].endswith("the GPU is ahead for the first 9 epochs only, the CPU from epoch 10 on.")
    assert payoff.overall(out.reset_index()) == (
        "Counting the first (compiling) epoch, the GPU is ahead from the first epoch on 1 of the 4 workloads, after "
        "4 epochs on cnn_cifar10, early on lstm_textgen (the first 9 epochs only); never within 100 epochs on "
        "mlp_mnist.")
    # a first epoch shorter than the steady one costs nothing; an unknown one leaves the row out of the sentences
    assert be.compile_overhead(0.5, 1.0) == 0.0 and be.ahead_after((float("nan"), 1.0), (0.0, 1.0)) is None
    assert payoff.per_workload(be.add(rows.assign(first_epoch_s_gpu=float("nan")))) == []


def _payoff(i, workload, device, sps, compile_s, planned=None):
    """A run of 1,000 samples at ``sps`` whose first epoch is a steady one plus ``compile_s``."""
    steady = 1000 / sps
    params = {"threads": 0, "precision": "float32", **({"epochs_planned": planned} if planned else {})}
    return _rec(i, workload=workload, backend="jax", device=device, device_used=device, batch_size=100,
                n_train=1000, median_epoch_s=steady, epoch_s=[steady] * 3, samples_per_s=sps, step_s=100 / sps,
                steps_per_epoch=10, first_epoch_s=steady + compile_s, params=params,
                point_id=f"{workload}-{device}-{i}",
                fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4,
                             "gpu_names": [H100] if device == "gpu" else [], "versions": {"keras": "3.15.1"}})


def test_verdict_csv_says_when_the_gpu_pays_off(tmp_path):
    """mlp_mnist (60,000 samples a source epoch): CPU 3,000 samples/s (20 s an epoch) compiling 1 s, GPU 30,000
    (2 s) compiling 60 s, planned for 50 epochs: ahead after 4 (60 + 2n against 1 + 20n), 1,001 s against 160 s.
    cnn_mnist (60,000): CPU 6,000 (10 s), GPU 60,000 / 9.5 (9.5 s) compiling 60 s: never within 100 epochs."""
    from helpers.record.ids import point_id

    recs = [_payoff(0, "mlp_mnist", "cpu", 3000, 1.0), _payoff(1, "mlp_mnist", "gpu", 30000, 60.0, planned=50),
            _payoff(2, "cnn_mnist", "cpu", 6000, 1.0), _payoff(3, "cnn_mnist", "gpu", 60000 / 9.5, 60.0)]
    report.setup_plots()
    ctx = _ctx(tmp_path, recs)
    _, verdict = _conf(ctx, tmp_path)
    assert list(verdict.columns) == csvs.VERDICT_COLUMNS
    for c in ("epochs_planned", "gpu_ahead_after_epochs", "cpu_s_for_epochs_planned", "gpu_s_for_epochs_planned",
              "cpu_compile_overhead_s", "gpu_source_epoch_s", "gpu_first_epoch_s", "gpu_behind_again_from_epoch"):
        assert c in verdict.columns, c
    v = verdict.set_index("workload")
    m = v.loc["mlp_mnist"]
    assert (m["epochs_planned"], m["epochs_planned_from"], m["gpu_ahead_after_epochs"]) == (50, "records", 4)
    assert m["cpu_s_for_epochs_planned"] == pytest.approx(1001) and m["gpu_s_for_epochs_planned"] == pytest.approx(160)
    assert (m["cpu_compile_overhead_s"], m["gpu_compile_overhead_s"]) == (pytest.approx(1), pytest.approx(60))
    c = v.loc["cnn_mnist"]
    assert pd.isna(c["gpu_ahead_after_epochs"]) and (c["epochs_planned"], c["epochs_planned_from"]) == (12, "source")
    text = _page(ctx, ["verdict"])
    assert "the GPU is ahead after 4 epochs" in text and "the GPU is never ahead within 100 epochs" in text
    # the knob measures nothing: a point keeps its id with it set
    assert point_id({"workload": "mlp_mnist", "epochs_planned": 50}, "m") == point_id({"workload": "mlp_mnist"}, "m")


def test_every_workload_left_out_of_the_verdict_is_named_with_its_reason(tmp_path):
    """A workload measured on the CPU at one batch and on the GPU at another never pairs: the verdict names it with
    each side's configuration; one with no GPU run is named too (its GPU side predicted)."""
    recs = (_point(0, "jax", "cpu", 2_000, batch=128, workload="mlp_mnist") + _point(1, "jax", "gpu", 5_000, batch=128,
                                                                                     workload="mlp_mnist")
            + _point(2, "jax", "cpu", 9, batch=8, workload="resnet50") + _point(3, "jax", "gpu", 2_000, batch=64,
                                                                              workload="resnet50")
            + _point(4, "jax", "cpu", 1_000, batch=32, workload="vgg_cifar10"))
    report.setup_plots()
    ctx = _ctx(tmp_path, recs)
    assert list(best.best_over_best(ctx.costed)["workload"]) == ["mlp_mnist"]
    text = re.sub(r"\s+", " ", _page(ctx, ["verdict"]))
    assert ("Not in the verdict (2 of 3 workloads): resnet50 (no configuration measured on both: the CPU at batch 8"
            in text)
    assert "the GPU at batch 64" in text and "vgg_cifar10 (no GPU run)" in text


def test_the_verdict_names_what_differs_between_its_sides_besides_the_device(tmp_path):
    """A CPU side on JAX 0.10.2 in epochs of 4 steps against a GPU side on JAX 0.11.2 in epochs of 100: the verdict
    says both; sides that agree say nothing."""
    from helpers.report.words import sides

    cpu = _rec(0, workload="cnn_cifar10", backend="jax", device="cpu", device_used="cpu", batch_size=100,
               n_train=400, steps_per_epoch=4)
    gpu = _rec(1, workload="cnn_cifar10", backend="jax", device="gpu", device_used="gpu", batch_size=100,
               n_train=10_000, steps_per_epoch=100, samples_per_s=50_000.0, median_epoch_s=0.2, epoch_s=[0.2] * 3)
    gpu["fingerprint"] = {**gpu["fingerprint"], "gpu_names": ["NVIDIA H100 80GB HBM3"],
                          "versions": {"keras": "3.15.1", "jax": "0.11.2"}}
    cpu["fingerprint"] = {**gpu["fingerprint"], "versions": {"keras": "3.15.1", "jax": "0.10.2"}}
    ctx = _ctx(tmp_path, [cpu, gpu])
    rows = best.best_over_best(ctx.costed)
    said = sides.differences(rows, ctx.df)
    assert "JAX 0.10.2 on the CPU side, 0.11.2 on the GPU side" in said and "Keras" not in said, said
    assert "epochs of 4 steps on the CPU side against 100 on the GPU side" in said, said
    assert fmt.esc(said) in sections.build(sections.get("verdict"), ctx)._repr_html_()
    same = rows.assign(steps_per_epoch_gpu=rows["steps_per_epoch_cpu"])
    ctx.df.loc[ctx.df["device"] == "cpu", "backend_version"] = "0.11.2"
    assert sides.differences(same, ctx.df) == ""


def test_the_default_grid_pairs_every_workload_with_the_bundled_reference(tmp_path):
    """The default grid (params/quick.yaml) runs each workload on the CPU at a configuration the bundled H100
    reference has on the GPU (batch, image size, knobs): a CPU run of each of its CPU points, written as the
    notebooks write records, pairs in the verdict, all ten workloads; a workload measured at another batch on the
    CPU is named in the verdict with its reason."""
    from helpers.grid.points import expand
    from helpers.runner.notebook import notebook_params

    points = [p for p in expand(PROJECT_ROOT / "params" / "quick.yaml") if p["device"] == "cpu"]
    recs = []
    for i, p in enumerate(points):
        params = notebook_params(p)  # what the notebook receives, and its record keeps
        recs.append(_rec(i, workload=p["workload"], backend=p["backend"], device="cpu", device_used="cpu",
                         batch_size=p["batch_size"], n_train=p["n_train"], params=params, point_id=f"q{i}",
                         median_epoch_s=1.0, epoch_s=[1.0] * 2, samples_per_s=float(p["n_train"]),
                         fingerprint={"host": "laptop", "cpu_model": "Some CPU", "cpu_logical": 2, "gpu_names": [],
                                      "versions": {"keras": "3.15.1"}}))
    ctx = _ctx(tmp_path / "quick", recs, use_reference=True)
    rows = best.best_over_best(ctx.costed)
    assert sorted(rows["workload"]) == sorted({p["workload"] for p in points}) and len(rows) == 10
    # the CPU side on the backends that can win it: what it leaves out is named with the command that measures it
    page = html.unescape(sections.build(sections.get("verdict"), ctx)._repr_html_())
    left = page.split("The CPU side was not measured on every backend: ")[1].split("</p>")[0]
    nine = ", ".join(sorted({p["workload"] for p in points} - {"mlp_mnist"}))
    assert left.startswith(f"JAX and PyTorch for {nine}; PyTorch for mlp_mnist. "), left
    assert "./run_all.sh params/cpu_full.yaml measures the rest" in left
    full = [p for p in expand(PROJECT_ROOT / "params" / "cpu_full.yaml")]
    assert {(p["workload"], p["backend"]) for p in full} >= {(p["workload"], p["backend"]) for p in points}
    assert len(full) == 30 and {p["device"] for p in full} == {"cpu"}
    # resnet50 on the CPU at batch 8 and 32 px: no configuration on both sides, said with each side's
    other = [r for r in recs if r["workload"] != "resnet50"] + [
        _rec(999, workload="resnet50", backend="jax", device="cpu", device_used="cpu", batch_size=8, n_train=16,
             params={**next(r["params"] for r in recs if r["workload"] == "resnet50"), "batch_size": 8,
                     "image_size": 32, "n_train": 16}, point_id="r-small", median_epoch_s=1.0, epoch_s=[1.0] * 2,
             samples_per_s=16.0, fingerprint=recs[0]["fingerprint"])]
    ctx = _ctx(tmp_path / "other", other, use_reference=True)
    page = sections.build(sections.get("verdict"), ctx)._repr_html_()
    assert "Not in the verdict (1 of 10 workloads): resnet50 (no configuration measured on both: the CPU at" in page
    assert "b8" in page.split("Not in the verdict")[1].split("</p>")[0] or "batch 8" in page.split(
        "Not in the verdict")[1].split("</p>")[0]
