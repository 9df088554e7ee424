"""FLOPs per sample, peaks and MFU, steps_per_execution, the ladder and the report's limit section."""

import json
import os
import textwrap

import pytest
import yaml
from support import FAST_XLA, XLA_CACHE
from support.workload_points import BUILDS_FAST, script, script_group, scripts_group

from helpers import grid, params
from helpers.measure import flops_analytic, flops_table, peaks
from helpers.paths import PROJECT_ROOT
from helpers.point import device

HAS_JAX = device.backend_installed("jax")
REFERENCE = PROJECT_ROOT / "reference" / "h100" / "records"


# ---------------------------------------------------------------- the count against XLA's (JAX, fresh process)

_SMALL = textwrap.dedent("""
    import json, numpy as np, keras
    from keras import layers
    from helpers.measure import flops_analytic, flops_xla

    def mlp():
        return keras.Sequential([keras.Input((64,)), layers.Dense(256, activation="relu"), layers.Dense(256),
                                 layers.Dense(10, activation="softmax")])

    def cnn():
        return keras.Sequential([keras.Input((16, 16, 3)), layers.Conv2D(32, 3, activation="relu"),
                                 layers.BatchNormalization(), layers.MaxPooling2D(2), layers.Conv2D(64, 3),
                                 layers.GlobalAveragePooling2D(), layers.Dense(10, activation="softmax")])

    def lstm():
        return keras.Sequential([keras.Input((12, 16)), layers.LSTM(64), layers.Dense(10, activation="softmax")])

    def bilstm():
        return keras.Sequential([keras.Input((10,), dtype="int32"), layers.Embedding(500, 32),
                                 layers.Bidirectional(layers.LSTM(32)), layers.Dense(10, activation="softmax")])

    out = {}
    for name, make in (("mlp", mlp), ("cnn", cnn), ("lstm", lstm), ("bilstm", bilstm)):
        m = make()
        m.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9), loss="sparse_categorical_crossentropy")
        c = flops_analytic.analytic(m)
        b = 32
        x = np.zeros((b, *m.input_shape[1:]), dtype="int32" if name == "bilstm" else "float32")
        y = np.zeros((b,), dtype="int32")
        xla = flops_xla.xla_train_step(m, x, y, stage="lowered")
        out[name] = {"exact": c.exact(b), "train": c.train(b), "xla": xla["per_sample"], "notes": c.notes}
    print("SMALL " + json.dumps(out))
""")


@pytest.mark.xdist_group(scripts_group("jax"))  # reads JAX's chunk of scripts (jax_counts)
@pytest.mark.skipif(not HAS_JAX, reason="JAX not installed")
def test_analytic_count_agrees_with_xla_on_small_models(jax_counts):
    """Dense, Conv2D + BatchNorm + pooling, LSTM and Embedding + Bidirectional LSTM: the convention less the input
    gradient nobody computes is within 15% of XLA's count of the whole train step (loss and update included).
    'valid' convolutions: XLA leaves out the products with padding, the convention counts them (ResNet-50's)."""
    res = jax_counts["small"]
    for name, r in res.items():
        assert r["notes"] == [], (name, r["notes"])
        assert r["xla"] > 0 and abs(r["xla"] / r["exact"] - 1) <= 0.15, (name, r)
        assert r["train"] >= r["exact"]


_ANCHORS = textwrap.dedent("""
    import json, keras
    from helpers import params, workloads as W; from helpers.measure import flops_analytic

    def macs(name, extra=None):
        w = W.get(name)
        p = {**params.COMMON_DEFAULTS, **w.defaults, "workload": name, "backend": keras.backend.backend(),
             "device": "cpu", **(extra or {})}
        m = W.build_model(name, p)
        c = flops_analytic.analytic(m)
        # multiply-adds of the matmuls and convolutions only (bias and activation out)
        mac = 0
        for layer in m.layers:
            if type(layer).__name__ in ("Conv2D", "Dense"):
                k = layer.kernel.shape
                pos = 1
                for d in layer.output.shape[1:-1]:
                    pos *= d
                mac += pos * k[0] * (k[1] * k[2] * k[3] if len(k) == 4 else k[1])
        return {"macs": mac, "forward": c.forward, "train": c.train(p["batch_size"]), "notes": c.notes}

    res = {"cnn_cifar10": macs("cnn_cifar10"), "resnet50": macs("resnet50", {"image_size": 224})}
    print("ANCHORS " + json.dumps(res))
""")


_COUNTS = script("flops_counts", "jax", _SMALL)  # in JAX's chunk of scripts (support/workload_points)
# the anchors count layer shapes, the same on every backend: built where Keras builds models fastest (ResNet-50 at
# 224 x 224 on JAX compiles every initialiser, ~25 s more than on PyTorch)
_ANCHORS_RUN = script("flops_anchors", BUILDS_FAST, _ANCHORS)


@pytest.fixture(scope="module")
def jax_counts(workload_runs):
    """The small models' script, run in JAX's chunk of scripts: {'small': ...}."""
    if not HAS_JAX:
        pytest.skip("JAX not installed")
    out = workload_runs("jax").script(_COUNTS)
    return {"small": json.loads(out.split("SMALL ", 1)[1].splitlines()[0])}


@pytest.mark.xdist_group(script_group(_ANCHORS_RUN))  # reads BUILDS_FAST's chunk
def test_anchors_resnet50_and_seed_000_cnn(workload_runs):
    """ResNet-50 at 224 x 224: about 4.1 G multiply-adds forward (Keras' ResNet50 is v1: 3.86 G multiply-adds in
    its convolutions and classifier, v1.5's stride-2 3 x 3 convolutions make the 4.1 G often quoted); seed 000's
    CNN: about 1.3 M."""
    out = workload_runs(BUILDS_FAST).script(_ANCHORS_RUN)
    res = json.loads(out.split("ANCHORS ", 1)[1].splitlines()[0])
    cnn, rn = res["cnn_cifar10"], res["resnet50"]
    assert cnn["macs"] == 1_295_720  # conv1 940,800 + conv2 320,000 + dense 34,920
    assert abs(cnn["forward"] / 2 / 1.3e6 - 1) < 0.05
    assert 3.85e9 < rn["macs"] < 4.2e9, rn
    assert abs(rn["forward"] / 2 / 4.1e9 - 1) < 0.05, rn
    assert 3 * rn["forward"] <= rn["train"] < 3.01 * rn["forward"]  # the update per sample is small at batch 64
    assert cnn["notes"] == [] and rn["notes"] == []


# ---------------------------------------------------------------- peaks and MFU


def test_gpu_peaks_by_name_and_precision():
    pk, src = peaks.gpu_peak("NVIDIA H100 80GB HBM3", "mixed_bfloat16")
    assert pk == pytest.approx(989.5e12) and "H100 SXM" in src and "https://" in src
    pk, src = peaks.gpu_peak("NVIDIA H100 PCIe", "float32")  # float32: against TF32 where the card has it
    assert pk == pytest.approx(378e12) and "TF32" in src and "plain FP32 51 TFLOP/s" in src
    assert peaks.gpu_peak("NVIDIA H200", "mixed_float16")[0] == pytest.approx(989.5e12)
    assert peaks.gpu_peak("NVIDIA A100-SXM4-80GB", "float32")[0] == pytest.approx(156e12)
    assert peaks.gpu_peak("Tesla V100-SXM2-16GB", "float32")[0] == pytest.approx(15.7e12)  # no TF32 on Volta
    assert peaks.gpu_peak("NVIDIA L4", "mixed_bfloat16")[0] == pytest.approx(121e12)
    assert peaks.gpu_peak("Tesla P100-PCIE-16GB", "mixed_float16")[0] == pytest.approx(18.7e12)
    assert peaks.gpu_peak("Tesla K80", "float32")[0] == pytest.approx(4.37e12)
    pk, why = peaks.gpu_peak("Tesla T4", "mixed_bfloat16")
    assert pk is None and "no dense bfloat16" in why
    pk, why = peaks.gpu_peak("Imaginary GPU 9000", "float32")
    assert pk is None and "unknown GPU" in why


def test_every_peak_cites_a_datasheet():
    doc = yaml.safe_load((PROJECT_ROOT / "params" / "peaks.yaml").read_text())
    names = {e["name"].split(" (")[0] for e in doc["gpus"]}
    assert {"H100 SXM", "H100 PCIe", "H200 SXM", "A100", "L4", "T4", "K80 ", "P100 PCIe"} - names <= {"K80 "}
    for e in doc["gpus"]:
        assert e["source"].startswith("https://") and e["match"] and e["tflops"]["float32"] > 0, e


def test_cpu_peak_from_the_calibration_and_unknown_device_gives_null_mfu_with_reason():
    cal = {"matmul_gflops_all": 200.0, "matmul_gflops_1thread": 40.0}
    assert peaks.cpu_peak(cal)[0] == pytest.approx(200e9)
    assert peaks.cpu_peak({"matmul_gflops_all": 36.0, "matmul_gflops_1thread": 77.0})[0] == pytest.approx(77e9)
    pk, how = peaks.cpu_peak(cal, threads=2)
    assert pk == pytest.approx(80e9) and "measured matmul peak" in how
    out = peaks.limit_fields(1e9, 1000.0, "cpu", calibration=cal)
    assert out["achieved_tflops"] == pytest.approx(1.0) and out["mfu"] == pytest.approx(1e12 / 200e9)
    out = peaks.limit_fields(1e9, 1000.0, "cpu", calibration=None)
    assert out["mfu"] is None and "calibration" in out["mfu_reason"] and out["achieved_tflops"] == pytest.approx(1.0)
    out = peaks.limit_fields(1e9, 1000.0, "gpu", gpu_name="Imaginary GPU 9000")
    assert out["mfu"] is None and "unknown GPU" in out["mfu_reason"]
    out = peaks.limit_fields(1e9, 1e4, "gpu", gpu_name="NVIDIA H100 80GB HBM3", precision="mixed_bfloat16", gpus=2)
    assert out["mfu"] == pytest.approx(1e13 / (2 * 989.5e12)) and out["mfu_reason"] is None


def test_count_convention_and_table_key():
    c = flops_analytic.Count(forward=1e6, input_grad=2e5, trainable_params=1000, update_per_param=4)
    assert c.train(100) == pytest.approx(3e6 + 40) and c.exact(100) == pytest.approx(3e6 + 40 - 2e5)
    a = flops_table.model_key({"workload": "resnet50", "batch_size": 64, "image_size": 224, "precision": "float32"})
    b = flops_table.model_key({"workload": "resnet50", "batch_size": 512, "image_size": 224,
                               "precision": "mixed_bfloat16"})
    assert a == b != flops_table.model_key({"workload": "resnet50", "image_size": 32})


# ---------------------------------------------------------------- steps_per_execution


def _grid(tmp_path, **block):
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump({"points": [{"workload": "mlp_mnist", "device": "gpu", **block}]}))
    return path


def test_steps_per_execution_is_a_common_knob_default_1(tmp_path):
    assert params.COMMON_DEFAULTS["steps_per_execution"] == 1
    pts = grid.expand(_grid(tmp_path, backend=["jax", "tensorflow"], steps_per_execution=8))
    assert {p["steps_per_execution"] for p in pts} == {8}
    assert grid.expand(_grid(tmp_path, backend="torch"))[0]["steps_per_execution"] == 1
    for bad in (0, "8", 2.0, True):
        with pytest.raises(grid.GridError, match="steps_per_execution"):
            grid.expand(_grid(tmp_path, backend="jax", steps_per_execution=bad))


def test_steps_per_execution_above_1_with_torch_is_refused_with_keras_reason(tmp_path):
    with pytest.raises(grid.GridError) as exc:
        grid.expand(_grid(tmp_path, backend=["jax", "torch"], steps_per_execution=4))
    msg = str(exc.value)
    assert "points[1]" in msg and "'torch'" in msg and "`steps_per_execution` must be 1 with the PyTorch backend" in msg
    from helpers.point.distribution_params import check

    with pytest.raises(params.ParamError, match="PyTorch backend"):
        check({"backend": "torch", "steps_per_execution": 2}, "notebook parameters")
    check({"backend": "torch", "steps_per_execution": 1})


def test_the_ladder_validates_and_climbs_one_knob_at_a_time():
    from helpers.report.publish.sections import limit

    pts = grid.expand(PROJECT_ROOT / "params" / "ladder.yaml")
    assert {p["device"] for p in pts} == {"gpu"} and {p["backend"] for p in pts} == {"jax", "torch"}
    assert not [p for p in pts if p["backend"] == "torch" and p["steps_per_execution"] > 1]
    chains = limit.rungs()
    assert {w for w, _ in chains} == set(flops_workloads())
    for (wl, be), chain in chains.items():
        assert chain[0][0].startswith("source b"), (wl, be)
        assert all(" + " not in label for label, _ in chain), (wl, be, chain)  # one knob per rung
        labels = " ".join(label for label, _ in chain)
        assert ("steps/exec" in labels) == (be != "torch") and "bf16" in labels, (wl, be, labels)
    assert "uint8 inputs" in " ".join(lab for lab, _ in chains[("resnet50", "torch")])
    # TensorFlow's rungs (params/ladder_tf.yaml): resnet50 only, XLA on ('auto' on a GPU) up to the last rung
    tf = grid.expand(PROJECT_ROOT / "params" / "ladder_tf.yaml")
    assert {(p["workload"], p["backend"], p["device"]) for p in tf} == {("resnet50", "tensorflow", "gpu")}
    assert [lab for lab, _ in chains[("resnet50", "tensorflow")]] == [
        "source b64", "b256", "steps/exec 8", "bf16", "uint8 inputs", "jit=False"]


def flops_workloads():
    from helpers import workloads

    return [n for n in workloads.names() if n != "custom"]


# ---------------------------------------------------------------- the report


@pytest.fixture
def ref_ctx(reference_ctx):
    return reference_ctx  # conftest: built once a session


def test_every_ok_reference_record_gets_flops_per_sample_at_report_time(ref_ctx):
    ok = ref_ctx.df[ref_ctx.df["status"] == "ok"]
    assert len(ok) > 100
    missing = ok[ok["flops_per_sample"].isna()]
    assert missing.empty, missing[["workload", "backend", "batch_size", "flops_source"]].to_string()
    # records written before the runner counted FLOPs (schema 1, 2) get them at report time; later ones carry theirs
    old = ok["schema"] < 3
    assert old.sum() > 100 and (ok.loc[old, "flops_source"] == flops_table.REPORT_SOURCE).all()
    assert (~old).sum() >= 110 and (ok.loc[~old, "flops_source"] == "analytic, counted on the trained model").all()
    gpu = ref_ctx.summary[ref_ctx.summary["device"] == "gpu"]
    assert gpu["mfu"].notna().all() and (gpu["mfu"] > 0).all() and (gpu["mfu"] < 2).all()
    cpu = ref_ctx.summary[ref_ctx.summary["device"] == "cpu"]
    assert cpu["achieved_tflops"].notna().all()
    # the CPU twins' records carry the host calibration (a measured matmul peak): MFU; the older ones cannot
    calibrated = cpu["peak_source"].str.contains("measured matmul peak")
    assert calibrated.sum() == 30 and (cpu.loc[calibrated, "mfu"].between(0, 1)).all()
    assert cpu.loc[~calibrated, "mfu"].isna().all() and cpu.loc[~calibrated, "peak_source"].str.contains(
        "calibration").all()


def test_limit_section_builds_over_the_reference_and_the_sentences_say_mfu(ref_ctx):
    from helpers.report.derive.pairs import all_pairs
    from helpers.report.publish import sections
    from helpers.report.words import headline

    s = sections.build(sections.get("limit"), ref_ctx)
    html = s._repr_html_()
    assert s.present and "failed to build" not in html
    assert "MFU" in html and "busy time" in html and "tuning ladder" in html and "class=\"cgb-fig\"" in html
    pairs = headline.best_pairs(all_pairs(ref_ctx.costed))
    assert pairs["mfu_gpu"].notna().all() and (pairs["mfu_gpu"] > 0).all()  # every GPU side of a pair has its MFU
    said = " ".join(headline.sentences(headline.per_workload(pairs), headline.compared(ref_ctx.df), pairs))
    assert "% of its peak arithmetic" in said  # the smallest gain is explained by its MFU


def test_limit_section_ladder_from_fixture_records(ref_ctx):
    """Ladder rungs are found by configuration; with none run the section says 'not run yet'."""
    import dataclasses

    from helpers.report.publish import sections

    s = sections.build(sections.get("limit"), dataclasses.replace(
        ref_ctx, summary=ref_ctx.summary[ref_ctx.summary["device"] == "cpu"]))
    assert "has not been run yet" in s._repr_html_()
    lad = sections.get("limit").ladder_rows(ref_ctx.summary)
    assert set(lad["rung"]) >= {0}  # the reference's source configurations are the ladder's rung 0


def test_seed_001_table_and_seed_003_timeline_get_both_answers_busy_time_and_mfu(ref_ctx):
    """the comparison summary shows MFU beside NVML's GPU %, the drawn run's line says both,
    and the published utilisation figures get your MFU beside your busy time; one sentence says why they differ."""
    from html import escape as html_escape

    from helpers.report.publish import sections
    from helpers.report.publish.sections import utilisation
    from helpers.report.words.published_match import other_figures

    table = utilisation.comparison_summary(ref_ctx.summary)
    cols = list(table.columns)
    assert cols.index("MFU") == cols.index("GPU % (peak)") + 1
    gpu = table[table["configuration"].str.startswith("gpu") | table["configuration"].str.contains("GPU")]
    assert len(gpu) and gpu["MFU"].str.rstrip(" †‡§✗").str.endswith("%").all()  # its marks after it
    # a small model: NVML busy near its mean, the arithmetic a few percent of the card's peak
    run = utilisation.pick_timeline(ref_ctx.records)
    line = utilisation.both_answers(run, utilisation._tidy_row(ref_ctx.df, run))
    assert run["device_used"] == "gpu" and "NVML" in line and "MFU" in line and "TFLOP/s" in line
    html = sections.build(sections.get("utilisation"), ref_ctx)._repr_html_()
    assert "counts the time any kernel ran" in html and "counts the arithmetic done" in html
    assert html_escape(line) in html
    util = other_figures(ref_ctx.summary, ref_ctx.published)
    util = util[util["figure"].str.contains("GPU", case=False) & util["your figure is"].str.contains("NVML")]
    assert len(util) and util["your figure is"].str.contains("MFU").all()


def test_bare_loop_recorded_by_the_benchmark_sits_beside_the_best_rung(tmp_path):
    """benchmarks/bare_jax.py --record writes a bare_loops.jsonl line; the limit section's best-rung table sets
    the same host's bare loop (workload, backend, precision) beside the suite's best rung; a bad line is named."""
    import subprocess
    import sys

    from helpers.report.derive.context import build_context
    from helpers.report.load import bare

    if not HAS_JAX:
        pytest.skip("jax not installed")
    run = tmp_path / "run"
    out = subprocess.run([sys.executable, "benchmarks/bare_jax.py", "vgg_cifar10", "--cpu-smoke", "--record",
                          str(run / bare.FILE)], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "", **FAST_XLA,
                              **XLA_CACHE})
    assert out.returncode == 0, out.stderr[-2000:]
    df, bad = bare.read([tmp_path])
    assert len(df) == 1 and not bad and df.iloc[0]["backend"] == "jax" and df.iloc[0]["samples_per_s"] > 0
    assert df.iloc[0]["device_used"] == "cpu" and df.iloc[0]["gpu"] is None
    # a GPU bare loop on the reference's host, and one line that is not a result
    host = json.loads(next(REFERENCE.glob("vgg_cifar10-jax-gpu-*.json")).read_text())["fingerprint"]["host"]
    with open(run / bare.FILE, "a") as f:
        for sps in (300000.0, 320000.0):
            f.write(json.dumps({"impl": "bare-jax", "workload": "vgg_cifar10", "precision": "float32", "batch": 512,
                                "samples_per_s": sps, "host": host, "gpu": "NVIDIA H100 80GB HBM3",
                                "model": "cifar10_cnn.py, no augmentation"}) + "\n")
        # PyTorch's bare loop only in bfloat16: if the best torch rung is float32 (as in the H100 reference), the
        # table sets the best bfloat16 rung beside it rather than saying "not run"
        f.write(json.dumps({"impl": "bare-torch", "workload": "vgg_cifar10", "precision": "mixed_bfloat16",
                            "batch": 512, "samples_per_s": 120000.0, "host": host, "gpu": "NVIDIA H100 80GB HBM3",
                            "model": "cifar10_cnn.py, no augmentation"}) + "\n")
        f.write('{"impl": "bare-jax"}\n')
    ctx = build_context([REFERENCE, tmp_path], use_reference=False)
    said = [v for t, v, _ in ctx.notes if "not bare-loop results" in t]
    assert len(ctx.bare) == 4 and said and said[0][:2] == (1, bare.FILE) and "missing" in said[0][2]
    loop = bare.beside(ctx.bare, "vgg_cifar10", "jax", "float32", host)
    assert loop == {"samples_per_s": 310000.0, "runs": 2, "batch": 512, "impl": "bare-jax",
                    "model": "cifar10_cnn.py, no augmentation"}
    assert bare.beside(ctx.bare, "vgg_cifar10", "jax", "float32", "another-host") is None
    from helpers.report.publish import sections

    html = sections.build(sections.get("limit"), ctx)._repr_html_()
    assert "bare loop (same host, precision)" in html and "310,000 (bare-jax, b512, 2 run(s))" in html
    assert "120,000 (bare-torch, b512, 1 run(s)" in html


def test_ladder_moves_name_the_knob_that_moved_it_and_the_rungs_that_lost():
    """The best-rung table's 'largest step' is the rung with the largest ratio to the rung run before it (a rung not
    run is skipped over), and a rung under LOSS × the rung before it is named as a loss."""
    import pandas as pd

    from helpers.report.publish import sections

    limit = sections.get("limit")
    g = pd.DataFrame({"rung": [3, 0, 1, 4], "rung_label": ["3: bf16", "0: source b32", "1: b256", "4: jit=True"],
                      "samples_per_s": [500.0, 1000.0, 7000.0, 2000.0]})
    assert limit._moves(g) == ("1: b256 (× 7.0)", "3: bf16 (× 0.071)")  # bf16 against b256: rung 2 not run
    assert limit._moves(g[g["rung"] != 1]) == ("4: jit=True (× 4.0)", "3: bf16 (× 0.50)")
    assert limit._moves(g[g["rung"] <= 1]) == ("1: b256 (× 7.0)", "none")
    assert limit._moves(g[g["rung"] == 0]) == ("", "")
    assert limit._moves(pd.DataFrame({"rung": [0, 1], "rung_label": ["0", "1"], "samples_per_s": [2.0, 1.0]})) == (
        "none", "1 (× 0.50)")
