"""MFU from the model's FLOPs, forward + backward, the optimiser's FLOPs per step shown apart:
fasttext_imdb on JAX, batch 32 → 256, trained 5.6× faster while its MFU fell 0.132% → 0.095%, because the FLOPs per
sample held the Adam update of its 66M-parameter embedding table divided by the batch. Now MFU rises with throughput
when only the batch changes: in the point's record, and in the report, for records counted either way. Cheap: the
analytic count's numbers (data/flops.csv), no Keras model and no kernel."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from support.records import _ctx, _rec

from helpers.measure import flops_analytic, flops_table, peaks
from helpers.point import record_figures
from helpers.report.publish import csvs

FASTTEXT = flops_analytic.Count(forward=20105.0, trainable_params=66372201, update_per_param=12.0, optimizer="adam")
CAL = {"when": "2026-01-01T00:00:00", "matmul_gflops_all": 100.0, "matmul_gflops_1thread": 55.0, "matmul_threads": 2}
RUNS = ((32, 2_000.0), (256, 11_200.0))  # batch, samples/s: 5.6× faster at batch 256


def test_the_points_mfu_counts_forward_and_backward_and_rises_with_throughput(monkeypatch):
    monkeypatch.setattr(flops_analytic, "analytic", lambda model: FASTTEXT)
    out = {}
    for batch, sps in RUNS:
        point = SimpleNamespace(model="a model (its count faked)", params={"batch_size": batch,
                                                                            "precision": "float32"},
                                dist=SimpleNamespace(gpus=1, hosts=1),
                                record={"samples_per_s": sps, "device_used": "cpu",
                                        "fingerprint": {"calibration": CAL}})
        out[batch] = record_figures.limit_figures(point)
    small, large = out[32], out[256]
    assert small["model_flops_per_sample"] == large["model_flops_per_sample"] == pytest.approx(3 * 20105.0)
    assert small["optimizer_flops_per_step"] == large["optimizer_flops_per_step"] == pytest.approx(66372201 * 12)
    assert large["mfu"] / small["mfu"] == pytest.approx(5.6)  # MFU rises as throughput does
    assert small["mfu"] == pytest.approx(peaks.mfu(3 * 20105.0, 2_000.0, 100e9))
    # the whole step per sample is still recorded (flops_per_sample): the update over the batch, the old basis of
    # MFU, under which the faster batch read lower
    assert small["flops_per_sample"] == pytest.approx(FASTTEXT.train(32))
    assert FASTTEXT.train(256) * 11_200.0 < FASTTEXT.train(32) * 2_000.0


def _record(i, batch, sps, **kw):
    return _rec(i, schema=4, workload="fasttext_imdb", backend="jax", batch_size=batch, n_train=2000,
                samples_per_s=sps, median_epoch_s=2000 / sps, epoch_s=[2000 / sps] * 3, step_s=batch / sps,
                steps_per_epoch=2000 // batch, point_id=f"ft-{batch}", params={"threads": 0, "precision": "float32"},
                fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 2, "gpu_names": [],
                             "calibration": CAL, "versions": {"keras": "3.15.1"}}, **kw)


def test_the_report_mfu_rises_with_throughput_for_records_counted_either_way(tmp_path):
    # batch 32: a record of the earlier count (its whole step per sample, its forward pass apart); batch 256: no count
    # of its own (the committed one, data/flops.csv)
    old = _record(0, 32, 2_000.0, flops_per_sample=FASTTEXT.train(32), flops_forward=20105.0,
                  flops_source="analytic, counted on the trained model")
    fps, opt, src = flops_table.for_record(old)
    assert fps == pytest.approx(3 * 20105.0) and opt == pytest.approx(66372201 * 12) and src.startswith("analytic")
    ctx = _ctx(tmp_path, [old, _record(1, 256, 11_200.0)])
    s = ctx.summary.set_index("batch_size")
    assert s.loc[32, "flops_per_sample"] == pytest.approx(s.loc[256, "flops_per_sample"])
    assert s.loc[256, "mfu"] / s.loc[32, "mfu"] == pytest.approx(5.6)
    assert s["optimizer_flops_per_step"].tolist() == pytest.approx([66372201 * 12] * 2)
    conf = csvs.configurations_frame(ctx.costed)
    assert {"model_flop_per_sample", "optimizer_flop_per_step", "mfu_fraction"} <= set(conf.columns)


def test_a_point_without_a_model_counts_nothing_and_says_so(monkeypatch):
    """A notebook that set no model (``Point.model`` None) gets its reasons, and no count is tried."""
    monkeypatch.setattr(flops_analytic, "analytic", lambda model: pytest.fail("counted a model that is not there"))
    point = SimpleNamespace(model=None, params={"batch_size": 32}, dist=SimpleNamespace(gpus=1, hosts=1),
                            record={"samples_per_s": 10.0})
    out = record_figures.limit_figures(point)
    assert out["flops_per_sample"] is None and out["mfu"] is None
    assert all("no model" in out[k] for k in ("mfu_reason", "model_shape_reason", "model_layers_reason"))
