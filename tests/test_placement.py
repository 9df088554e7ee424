"""The data on the device (``data_placement``): validated before anything runs, and a point that
trains from batches already on the device really feeds those very buffers to every step (no copy)."""

import json
import os
import subprocess
import sys

import pytest
from support import in_fresh_python
from support.workload_points import script, script_group

from helpers import grid, params
from helpers.paths import PROJECT_ROOT
from helpers.point.device import backend_installed


def _grid(tmp_path, **point):
    g = tmp_path / "g.yaml"
    body = {"workload": "cnn_cifar10", "backend": "jax", "device": "cpu", **point}
    g.write_text("points:\n  - " + "\n    ".join(f"{k}: {json.dumps(v)}" for k, v in body.items()) + "\n")
    return g


@pytest.mark.parametrize("point, needle", [
    ({"data_placement": "gpu"}, "key 'data_placement' has value 'gpu'; allowed: one of 'host', 'device'"),
    ({"data_placement": "device", "backend": "tensorflow"},
     "key 'data_placement' has value 'device' with backend 'tensorflow'; allowed with backend 'jax' or 'torch'"),
    ({"data_placement": "device", "hosts": 2}, "with hosts=2; allowed with hosts: 1"),
])
def test_grid_refuses_a_placement_that_cannot_hold(tmp_path, point, needle):
    with pytest.raises(grid.GridError) as err:
        grid.expand(_grid(tmp_path, **point))
    assert needle in str(err.value)


def test_the_default_placement_keeps_old_point_ids_and_a_device_one_is_another_point():
    from helpers.record.ids import point_id

    p = {**params.COMMON_DEFAULTS, "workload": "cnn_cifar10", "backend": "jax", "device": "gpu", "batch_size": 8}
    old = {k: v for k, v in p.items() if k != "data_placement"}  # a record written before the knob existed
    assert point_id(p, "m") == point_id(old, "m")
    assert point_id({**p, "data_placement": "device"}, "m") != point_id(p, "m")


_POINT = """
import json
from helpers.params import COMMON_DEFAULTS
from helpers.point.session import begin
from helpers.workloads import get

seen = []  # per pass over the data (Keras' build peeks at one batch, then one pass an epoch): the buffer
           # address of every leaf of each batch fed


def spy(cls):
    orig = cls._get_iterator

    def wrapped(self):
        seen.append([])
        for batch in orig(self):
            seen[-1].append([ADDR(a) for a in keras.tree.flatten(batch)])
            yield batch

    cls._get_iterator = wrapped


out = {}
for placement in ("device", "host"):
    prm = {**COMMON_DEFAULTS, **get("cnn_cifar10").defaults, "workload": "cnn_cifar10", "backend": BACKEND,
           "device": "cpu", "batch_size": 64, "n_train": 300, "epochs": 3, "min_steady_s": 1e-6,
           "data_source": "synthetic", "data_placement": placement, "output_dir": OUT + "/" + placement}
    pt = begin(prm)
    import keras  # noqa: E402
    if placement == "device":  # once, before the first fit
        spy(ITERATOR())
    pt.verify()
    pt.load_data()
    pt.build_model()
    placed = pt._placed(pt.data)
    if placed is not None:  # the buffers put on the device, to compare with what the steps get
        out["placed"] = [[ADDR(a) for a in keras.tree.flatten(placed[i])] for i in range(len(placed))]
        out["placed_types"] = sorted({type(a).__module__.split(".")[0] for a in keras.tree.flatten(placed[0])})
        pt._placed = lambda data, placed=placed: placed  # the same batches to fit (one put, as in a point)
    seen.clear()
    pt.fit()
    rec = pt.finish()
    out[placement] = {"rec": {k: rec.get(k) for k in ("status", "data_placement", "data_on_device", "samples_per_s",
                                                        "epochs_run", "steps_per_epoch", "history", "n_train",
                                                        "host_copy_reason")},
                      "seen": list(seen)}
print("RESULT" + json.dumps(out))
"""

_HOOKS = {
    "jax": ("lambda a: a.unsafe_buffer_pointer() if hasattr(a, 'unsafe_buffer_pointer') else id(a)",
            "lambda: __import__('keras.src.backend.jax.trainer', fromlist=['x']).JAXEpochIterator"),
    "torch": ("lambda a: a.data_ptr() if hasattr(a, 'data_ptr') else id(a)",
              "lambda: __import__('keras.src.backend.torch.trainer', fromlist=['x']).TorchEpochIterator"),
}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_point_on_the_device_feeds_every_step_the_buffers_put_there(tmp_path, backend):
    if not backend_installed(backend):
        pytest.skip(f"{backend} not installed")
    addr, it = _HOOKS[backend]
    code = f"OUT = {str(tmp_path)!r}\nBACKEND = {backend!r}\nADDR = {addr}\nITERATOR = {it}\n" + _POINT
    res = json.loads(in_fresh_python(code, backend).split("RESULT", 1)[1])
    dev, host = res["device"], res["host"]
    want_type = "jaxlib" if backend == "jax" else "torch"
    assert res["placed_types"] == [want_type]  # backend arrays, not numpy
    placed = {tuple(b) for b in res["placed"]}
    assert len(placed) == 5  # 300 samples in batches of 64: 4 full and one of 44, as fit batches arrays
    for r in (dev["rec"], host["rec"]):
        assert r["status"] == "ok" and r["n_train"] == 300 and r["steps_per_epoch"] == 5 and r["samples_per_s"] > 0
        assert r["host_copy_reason"].startswith("not measured: a CPU point")
    assert dev["rec"]["data_placement"] == "device" and host["rec"]["data_placement"] == "host"
    on = dev["rec"]["data_on_device"]
    assert on["batches"] == 5 and on["bytes"] == 300 * 32 * 32 * 3 * 4 + 300 * 8  # float32 images, int64 labels
    # every step of every epoch got one of the placed batches, by address: nothing was copied on the way
    passes = [[tuple(b) for b in p] for p in dev["seen"]]
    epochs = [p for p in passes if len(p) == 5]
    assert len(epochs) == dev["rec"]["epochs_run"] and {b for p in passes for b in p} == placed
    # each epoch visits all five, in a new order (fit's shuffle of the batches)
    assert all(set(e) == placed for e in epochs) and len({tuple(e) for e in epochs}) > 1
    # the host path feeds numpy slices (JAX) or fresh tensors (torch), never those buffers
    assert not {tuple(b) for p in host["seen"] for b in p} & placed
    assert len(dev["rec"]["history"]["loss"]) == dev["rec"]["epochs_run"]


_HOST_COPY = script("host_copy", "jax", """
import json, numpy as np
from helpers.point import placement
x = np.ones((512, 32, 32, 3), np.float32); y = np.zeros((512,), np.int64)
print("RESULT" + json.dumps(placement.host_copy(x, y, 128, "jax", step_s=0.5, repeats=3)))
""")  # in JAX's scripts chunk (support/workload_points.script)


@pytest.mark.xdist_group(script_group(_HOST_COPY))
def test_host_copy_measures_a_batch_and_its_share_of_a_step(workload_runs):
    """The figure the report's scaling section reads: a copy of one batch, timed after a sync, bytes and share."""
    if not backend_installed("jax"):
        pytest.skip("jax not installed")
    res = json.loads(workload_runs("jax").script(_HOST_COPY).split("RESULT", 1)[1])
    assert res["input_bytes_per_step"] == 128 * 32 * 32 * 3 * 4 + 128 * 8
    assert res["host_copy_repeats"] == 3 and res["host_copy_s_per_step"] > 0
    assert res["host_copy_share"] == pytest.approx(res["host_copy_s_per_step"] / 0.5)
    assert res["host_copy_gb_per_s"] == pytest.approx(res["input_bytes_per_step"] / res["host_copy_s_per_step"] / 1e9)


_GENERATOR = script("generator_on_device", "jax", """
import json
from helpers.params import COMMON_DEFAULTS
from helpers.point.session import PointSkipped, begin
from helpers.workloads import get
prm = {**COMMON_DEFAULTS, **get("catsdogs").defaults, "workload": "catsdogs", "backend": "jax", "device": "cpu",
        "batch_size": 8, "n_train": 16, "epochs": 2, "data_source": "synthetic", "data_placement": "device",
        "output_dir": SCRIPT_DIR}
pt = begin(prm)
import keras
pt.verify()
try:
    pt.load_data()
except PointSkipped:
    print("RESULT" + json.dumps(pt.record))
""")  # in JAX's scripts chunk (support/workload_points.script)


@pytest.mark.xdist_group(script_group(_GENERATOR))
def test_a_generator_workload_on_the_device_is_skipped_with_the_reason(workload_runs):
    """catsdogs batches from files through a PyDataset on the host: the point says so, before building."""
    if not backend_installed("jax"):
        pytest.skip("jax not installed")
    rec = json.loads(workload_runs("jax").script(_GENERATOR).split("RESULT", 1)[1])
    assert rec["status"] == "skipped" and "data_placement 'device'" in rec["reason"] and "generator" in rec["reason"]


def _records(folder, rows):
    from helpers.record.writer import write_atomic

    for i, (gpus, placement, sps, copy_s, *processes) in enumerate(rows):
        n = 2560
        rec = {"schema": 2, "point_id": f"p{i}", "workload": "resnet50", "backend": "jax", "device": "gpu",
               "device_used": "gpu", "status": "ok", "reason": None, "data_source": "synthetic",
               "params": {"threads": 0, "precision": "mixed_bfloat16", "gpus": gpus, "hosts": 1,
                          "input_dtype": "float32", "image_size": 224, "data_placement": placement,
                          **({"processes": processes[0]} if processes else {})},
               "n_train": n, "batch_size": 256, "epochs": 4, "first_epoch_s": 9.0, "epoch_s": [n / sps] * 3,
               "median_epoch_s": n / sps, "step_s": n / sps / 10, "samples_per_s": sps, "steps_per_epoch": 10,
               "history": {"loss": [7, 6]}, "utilisation": {}, "energy_j_per_epoch": 100.0 * gpus,
               "started_at": f"2026-01-01T00:00:0{i}", "host_copy_s_per_step": copy_s,
               "input_bytes_per_step": 256 * gpus * 224 * 224 * 3 * 4 + 256 * gpus * 8,
               "fingerprint": {"host": "h", "cpu_model": "c", "cpu_logical": 32,
                               "gpu_names": ["NVIDIA H100 80GB HBM3"]},
               "duration_s": 5.0, "notebook": None}
        write_atomic(folder / f"r{i}.json", rec)


def test_scaling_section_says_where_the_time_goes_and_what_n_gpus_cost(tmp_path):
    """The input path: the copy's share of the host row's step, the device row's gain over its host twin; the
    scaling table: the data's placement and the machine's price per 1,000 samples and per epoch."""
    from helpers import report
    from helpers.report.publish import sections
    from helpers.report.publish.sections import scaling

    # 1 GPU from the host: 2,560 samples/s -> a step of 0.1 s, of which one batch's copy takes 0.04 s (40%);
    # with the data on the device 3,840 samples/s (1.5x); 2 GPUs from the host 4,096 (efficiency 0.8)
    _records(tmp_path, [(1, "host", 2560.0, 0.04), (1, "device", 3840.0, 0.04), (2, "host", 4096.0, 0.07)])
    report.setup_plots()
    ctx = report.build_context([tmp_path])
    path = scaling.input_path(ctx.summary)
    assert len(path) == 3
    one = path[path["samples/s"] == 2560.0].iloc[0]
    assert one["copy / step"] == pytest.approx(0.4) and one["MB per step"] == pytest.approx(154.142, rel=1e-4)
    dev = path[path["data on"] == "device"].iloc[0]
    assert dev["gain of data on the device"] == pytest.approx(1.5) and dev["copy / step"] != dev["copy / step"]  # NaN
    table = scaling.device_scaling(ctx.costed)
    two = table[(table["devices"] == 2)].iloc[0]
    assert two["efficiency"] == pytest.approx(4096 / (2 * 2560)) and two["data on"] == "host"
    # lambda-1x-h100-sxm, $4.29 an hour: 1,000 samples at 4,096/s and one 2,560-sample epoch
    assert two["$ per 1k samples"] == pytest.approx(4.29 / 3600 * 1000 / 4096)
    assert two["$ per epoch"] == pytest.approx(4.29 / 3600 * 2560 / 4096)
    page = sections.build(sections.get("scaling"), ctx)._repr_html_()
    assert "Where the time goes" in page and "40%" in page and "1.50x" in page and "data on the device" in page


def test_scaling_sets_one_process_per_gpu_beside_one_process_driving_both(tmp_path):
    """2 GPUs reached two ways, each against the same one-GPU run: gpus: 2 (one process) and gpus: 1 x
    processes: 2 (one process per GPU); the table's way, the finding's two efficiencies, the section's note."""
    from helpers import report
    from helpers.report.derive import devices
    from helpers.report.publish import devices_chart, sections
    from helpers.report.words import scaling_words

    # 1 GPU 2,500 samples/s; one process driving 2 GPUs 3,000 (0.60); one process per GPU 4,500 (0.90)
    _records(tmp_path, [(1, "host", 2500.0, 0.04), (2, "host", 3000.0, 0.07), (1, "host", 4500.0, 0.04, 2)])
    report.setup_plots()
    ctx = report.build_context([tmp_path], use_reference=False)
    table = devices.device_scaling(ctx.costed)
    two = table[table["devices"] == 2].set_index("way")
    assert sorted(two.index) == ["2 processes x 1 GPU", "one process"]
    assert two.loc["one process", "efficiency"] == pytest.approx(3000 / (2 * 2500))
    assert two.loc["2 processes x 1 GPU", "efficiency"] == pytest.approx(4500 / (2 * 2500))
    assert two.loc["2 processes x 1 GPU", "GPUs"] == "1 x 2 processes"
    assert scaling_words.findings(table) == [
        "resnet50 (jax, mixed_bfloat16) on 2 GPUs: efficiency with float32 inputs from the host 0.60 one process "
        "driving 2 GPUs against 0.90 one process per GPU."]
    fig = devices_chart.plot_devices(table)
    labels = [ln.get_label() for ln in fig.axes[0].get_lines() if not ln.get_label().startswith("_")]
    assert len(labels) == 2 and labels[1].endswith("one process per GPU")  # a line each, from the same 1-GPU run
    page = sections.build(sections.get("scaling"), ctx)._repr_html_()
    assert "Two ways to drive N GPUs" in page and "one process per GPU" in page


_SHARDED = """
import json
from helpers.params import COMMON_DEFAULTS
from helpers.point.session import begin
from helpers.workloads import get

prm = {**COMMON_DEFAULTS, **get("mlp_mnist").defaults, "workload": "mlp_mnist", "backend": "jax", "device": "cpu",
       "batch_size": 32, "n_train": 1030, "epochs": 3, "min_steady_s": 1e-6, "data_source": "synthetic",
       "gpus": 2, "data_placement": "device", "output_dir": OUT}
pt = begin(prm)
import keras  # noqa: E402
pt.verify()
pt.load_data()
pt.build_model()
placed = pt._placed(pt.data)
first = placed[0][0]
shards = sorted(str(s.device) for s in first.addressable_shards)
pt._placed = lambda data: placed
pt.fit()
rec = pt.finish()
print("RESULT" + json.dumps({"shards": shards, "shape": list(first.shape), "n": len(placed),
                             "shard_rows": sorted(s.data.shape[0] for s in first.addressable_shards),
                             "rec": {k: rec.get(k) for k in ("status", "data_placement", "gpus", "global_batch_size",
                                                             "n_train", "steps_per_epoch", "history")}}))
"""


def test_on_several_devices_each_batch_is_put_there_sharded_over_the_mesh(tmp_path):
    """gpus: 2 over JAX's 2 host devices (the test route of tests/test_distribution.py): every batch on the
    device is split over both devices as Keras' data layout splits it, so the step reshards nothing."""
    if not backend_installed("jax"):
        pytest.skip("jax not installed")
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
           "TF_CPP_MIN_LOG_LEVEL": "3", "CGB_HOST_DEVICES": "1",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run([sys.executable, "-c", f"OUT = {str(tmp_path)!r}\n" + _SHARDED], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    res = json.loads(out.stdout.split("RESULT", 1)[1])
    assert len(set(res["shards"])) == 2, res["shards"]  # one shard on each of the two devices
    assert res["shape"][0] == 64 and res["shard_rows"] == [32, 32]  # the global batch, half on each device
    assert res["n"] == 17  # 1030 samples in batches of 64: 16 full and one of 6 (3 a device)
    rec = res["rec"]
    assert rec["status"] == "ok" and rec["data_placement"] == "device" and rec["gpus"] == 2
    assert rec["global_batch_size"] == 64 and rec["n_train"] == 1030 and rec["steps_per_epoch"] == 17
    assert rec["history"]["loss"][-1] < rec["history"]["loss"][0]  # it trains


def test_scaling_section_sets_published_anchors_beside_and_says_the_efficiency_per_input_path(tmp_path):
    """Lambda's 1x..8x H100 figures (data/published_figures.csv) are the anchors: the scaling section lists and
    draws them with their efficiency; the single-device comparison section leaves them out; each model gets a
    sentence with its efficiency per input path and the range over its runs."""
    from helpers import report
    from helpers.report.derive import devices
    from helpers.report.load import published
    from helpers.report.publish import sections
    from helpers.report.words import published_match, scaling_words

    pub = published.load_published()
    anchors = devices.published_devices(pub, {"resnet50"})
    eight = anchors[anchors["GPUs"] == 8]
    assert len(eight) == 2 and set(eight["samples/s"]) == {22063.0, 14969.5}  # AMP and TF32 medians
    assert (eight["efficiency"] - 22063.0 / (8 * 2792.0)).abs().min() < 1e-9
    cov = published.coverage(pub)
    multi = cov[cov["hardware"].str.match(r"[2-8]x NVIDIA H100")]
    assert len(multi) == 6 and (multi["shown"] == "the scaling section (published multi-GPU figures)").all()
    assert devices.published_devices(pub, {"mlp_mnist"}) is None  # no multi-GPU figure for it
    # two runs per configuration: 1 GPU 2,400 and 2,600; 2 GPUs 4,000 and 4,400 (median 4,200)
    _records(tmp_path, [(1, "host", 2400.0, 0.04), (1, "host", 2600.0, 0.04), (2, "host", 4000.0, 0.07),
                        (2, "host", 4400.0, 0.07)])
    report.setup_plots()
    ctx = report.build_context([tmp_path])
    vs = published_match.versus_published(ctx.summary, ctx.published)
    assert not vs["hardware / configuration"].str.contains(r"[2-8]x NVIDIA H100").any()
    assert vs["hardware / configuration"].str.contains("1x NVIDIA H100").any()
    table = devices.device_scaling(ctx.costed)
    two = table[table["devices"] == 2].iloc[0]
    assert two["efficiency"] == pytest.approx(4200 / (2 * 2500))
    assert two["efficiency over the runs"] == pytest.approx((4000 / (2 * 2600), 4400 / (2 * 2400)))
    lines = scaling_words.findings(table)
    assert lines == ["resnet50 (jax, mixed_bfloat16) on 2 GPUs: efficiency 0.84 with float32 inputs from the host "
                     "(0.77-0.92 over 2 run(s))."]
    page = sections.build(sections.get("scaling"), ctx)._repr_html_()
    assert lines[0] in page and "Published multi-GPU figures" in page and "lambdal/deeplearning-benchmark" in page
    assert "0.77-0.92" in page and "0.99" in page  # the run range; the anchors' efficiency


def test_the_run_line_names_the_knobs_a_scaling_grid_varies():
    """The runner's line for a point shows gpus, input_dtype and data_placement away from their defaults, so the
    runs of params/scaling.yaml do not read alike (and a default point's line stays as it was)."""
    from helpers.grid import expand_all
    from helpers.runner import plan

    lines = [plan.describe(p) for p in expand_all([PROJECT_ROOT / "params" / "scaling.yaml"])]
    assert len(set(lines)) == len(lines) == 16
    assert any(line.endswith("gpus=2 data_placement=device input_dtype=uint8") for line in lines)
    one = next(line for line in lines if "resnet50" in line and "=device" not in line and "uint8" not in line
               and "gpus" not in line)
    assert one.endswith("n_train=5120")


def _staged_grid(folder, rows):
    """``_records`` of a weak-scaling grid: a row placed ``staged`` gets uint8 inputs (the recommended path), every
    row 2,560 samples a GPU."""
    _records(folder, rows)
    for f, (gpus, placement, _sps, _copy, *processes) in zip(sorted(folder.glob("r*.json"), key=lambda p:
                                                                   int(p.stem[1:])), rows):
        rec = json.loads(f.read_text())
        rec["params"].update(input_dtype="uint8" if placement == "staged" else "float32", min_steady_s=0.5)
        k = gpus * (processes[0] if processes else 1)  # the same 10 steps an epoch at every GPU count
        rec.update(n_train=2560 * k, epoch_s=[e * k for e in rec["epoch_s"]], median_epoch_s=rec["median_epoch_s"] * k,
                   step_s=rec["step_s"] * k)
        f.write_text(json.dumps(rec))


def test_a_gpu_count_grid_leads_the_report_with_its_efficiency_per_count_way_and_input_path(tmp_path):
    """params/multi_gpu.yaml's shape (1, 2 and 4 GPUs, both ways, uint8 staged on the GPUs and float32 from the
    host, weak scaling), no CPU run: the scaling section comes first, opens with one sentence per model and input
    path giving the efficiency at every GPU count and way, then the chart; the verdict folds to one line; the README
    table's figures are the strings of the report's table."""
    import re

    from helpers import report
    from helpers.report.derive import devices
    from helpers.report.publish import devices_chart, devices_readme, sections
    from helpers.report.words import scaling_words

    # one GPU: staged 4,900 and 5,100 (median 5,000), host 3,900 and 4,100 (4,000); then one run each
    _staged_grid(tmp_path, [(1, "staged", 4900.0, 0.0), (1, "staged", 5100.0, 0.0), (1, "host", 3900.0, 0.04),
                            (1, "host", 4100.0, 0.04), (2, "staged", 9000.0, 0.0), (2, "host", 6000.0, 0.07),
                            (1, "staged", 9500.0, 0.0, 2), (1, "host", 7200.0, 0.04, 2), (4, "staged", 16000.0, 0.0),
                            (4, "host", 8000.0, 0.1), (1, "staged", 18400.0, 0.0, 4), (1, "host", 12800.0, 0.04, 4)])
    assert scaling_words.path_words("uint8", "staged") == "uint8 inputs staged on the GPUs"
    assert scaling_words.path_words("float32", "host", inputs=False) == "float32 from the host"
    report.setup_plots()
    ctx = report.build_context([tmp_path], use_reference=False)
    table = devices.scaling_table(ctx)
    assert scaling_words.answer(table) == [  # each N-GPU point is one run: its efficiency carries †
        "resnet50 (jax, mixed_bfloat16), uint8 inputs staged on the GPUs: efficiency with one process per GPU 0.95 † "
        "on 2 GPUs, 0.92 † on 4; with one process driving them 0.90 † on 2 GPUs, 0.80 † on 4.",
        "resnet50 (jax, mixed_bfloat16), float32 inputs from the host: efficiency with one process per GPU 0.90 † on "
        "2 GPUs, 0.80 † on 4; with one process driving them 0.75 † on 2 GPUs, 0.50 † on 4."]
    assert scaling_words.findings(table) == [
        "resnet50 (jax, mixed_bfloat16) on 4 GPUs: efficiency with uint8 inputs staged on the GPUs 0.80 one process "
        "driving 4 GPUs against 0.92 one process per GPU; with float32 inputs from the host 0.50 one process driving "
        "4 GPUs against 0.80 one process per GPU."]
    labels = [ln.get_label() for ln in devices_chart.plot_devices(table).axes[0].get_lines()
              if not ln.get_label().startswith("_")]
    assert len(labels) == 4 and "uint8 inputs staged on the GPUs · one process per GPU" in labels  # a line a way
    # the report: the scaling answer first (sentences, then the chart), the verdict one line
    assert sections.order(ctx)[:2] == ["scaling", "verdict"] and devices.leads(ctx)
    page = sections.build(sections.get("scaling"), ctx)._repr_html_()
    assert page.index("<h2>Scaling: samples/s and efficiency") < page.index(scaling_words.answer(table)[0]) \
        < page.index("<svg") < page.index("<table")
    verdict = sections.build(sections.get("verdict"), ctx)
    assert not verdict.present and "no CPU run" in verdict.reason
    # the README table: each figure the string the report's table shows
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in devices_readme.readme_table(table).splitlines()]
    assert rows[0] == list(devices_readme.README_COLUMNS) and len(rows) == 2 + len(table)
    assert rows[2] == ["resnet50 (256)", "uint8 staged on the GPUs", "1", "one GPU", "5,000 (4,900-5,100)",
                       "1.00 (0.96-1.04)", "2"]
    assert ["resnet50 (256)", "uint8 staged on the GPUs", "4", "one process per GPU", "18,400 †", "0.92 (0.90-0.94)",
            "1"] in rows
    cells = set(re.findall(r"<(?:td|dd)[^>]*>([^<]*)</(?:td|dd)>", page))
    for r in rows[2:]:
        for fig in (r[4], r[5]):
            assert set(re.findall(r"[\d,.]+-[\d,.]+|[\d,.]+", fig)) <= cells, (fig, r)


def test_the_default_report_still_leads_with_the_verdict_and_old_grids_read_in_words(tmp_path, capsys):
    """A CPU run beside the GPU counts: the verdict first, as ever. The published two-H100 grid with its uint8 rows
    staged: the README table from the records (python -m helpers.report.publish.devices_readme) gives the figures its
    README quotes."""
    import shutil

    from helpers import report
    from helpers.report.publish import devices_readme, sections

    src = PROJECT_ROOT / "reference" / "h100x2" / "multi_gpu" / "records"
    for f in src.glob("*.json"):
        rec = json.loads(f.read_text())
        if rec["params"].get("input_dtype") == "uint8":
            rec["params"]["data_placement"] = "staged"
        (tmp_path / f.name).write_text(json.dumps(rec))
    assert devices_readme.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == ("| resnet50 (256) | uint8 staged on the GPUs | 1 | one GPU | 5,170 (5,100-5,240) | "
                      "1.00 (0.97-1.03) | 2 |")
    assert "| resnet50 (256) | uint8 staged on the GPUs | 2 | one process per GPU | 9,219 (9,211-9,228) | " \
           "0.89 (0.88-0.90) | 2 |" in out
    assert "| vgg_cifar10 (256) | float32 from the host | 2 | one process driving 2 GPUs | 155,000 (150,000-160,000) " \
           "| 0.58 (0.51-0.66) | 2 |" in out
    cpu = tmp_path / "cpu"
    shutil.copytree(PROJECT_ROOT / "reference" / "h100" / "records", cpu)
    ctx = report.build_context([tmp_path, cpu], use_reference=False)
    assert sections.order(ctx) == sections.ORDER
