"""The report's step-breakdown section, from literal records with known numbers."""

from __future__ import annotations

import copy

import pytest

from helpers import report
from helpers.record.writer import write_atomic
from helpers.report.publish import sections


def _rec(i, workload, backend, device, parts, **kw) -> dict:
    b = {"source": "xla", "device": device, "steps": 10, "step_ms": sum(parts.values()), "parts_ms": parts,
         "shares": {k: v / sum(parts.values()) for k, v in parts.items()},
         "top": [{"name": "gemm", "ms": 1.0, "share": 0.1, "calls_per_step": 1.0}],
         "unprofiled_step_ms": sum(parts.values()) / 1.05, "profiler_overhead": 1.05,
         "trace": {"path": f"{workload}-{backend}-{device}-p{i}.trace"}}
    rec = {"schema": 3, "point_id": f"p{i}", "workload": workload, "backend": backend, "device": device,
           "device_used": device, "status": "ok", "reason": None,
           "params": {"threads": 0, "precision": "float32", "profile": True},
           "data_source": "synthetic", "n_train": 1000, "batch_size": 100, "epochs": 2, "first_epoch_s": 2.0,
           "epoch_s": [1.0, 1.0, 1.0], "median_epoch_s": 1.0, "step_s": 0.1, "samples_per_s": 1000.0,
           "steps_per_epoch": 10, "history": {"loss": [2, 1]}, "utilisation": {}, "energy_j_per_epoch": None,
           "fingerprint": {"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4,
                           "gpu_names": ["NVIDIA H100 80GB HBM3"] if device == "gpu" else []},
           "started_at": f"2026-01-01T00:00:{i:02d}", "duration_s": 5.0, "notebook": None,
           "flops_per_sample": 1e9, "step_breakdown": b, "step_breakdown_reason": None}
    rec.update(kw)
    return rec


def _ctx(tmp_path, recs):
    for i, r in enumerate(recs):
        write_atomic(tmp_path / f"r{i}.json", r)
    return report.build_context([tmp_path], use_reference=False)


@pytest.fixture
def built(tmp_path):
    report.setup_plots()
    recs = [
        # resnet50: host-bound on torch (the device idles 70% of a 10 ms step), device-bound on JAX
        _rec(0, "resnet50", "torch", "gpu", {"device_busy": 2.0, "copies": 1.0, "host_only": 7.0}),
        _rec(1, "resnet50", "jax", "gpu", {"device_busy": 8.0, "copies": 0.5, "host_only": 1.5}),
        _rec(2, "resnet50", "torch", "gpu", {"device_busy": 2.2, "copies": 1.0, "host_only": 6.8}),  # a repeat
        # cnn_cifar10: copy-bound on both backends
        _rec(3, "cnn_cifar10", "jax", "gpu", {"device_busy": 1.0, "copies": 3.0, "host_only": 1.0}),
        _rec(4, "cnn_cifar10", "torch", "gpu", {"device_busy": 1.0, "copies": 2.0, "host_only": 1.0}),
        # mlp_mnist on the CPU: the framework's ops dominate
        _rec(5, "mlp_mnist", "jax", "cpu", {"device_busy": 4.0, "copies": 0.0, "host_only": 0.5}),
        # a profiled point whose profiler failed: no breakdown, its reason
        _rec(6, "mlp_mnist", "torch", "cpu", {}, step_breakdown=None,
             step_breakdown_reason="profiling failed: RuntimeError: no profiler here"),
    ]
    return sections.build(sections.get("breakdown"), _ctx(tmp_path, recs))


def test_the_section_opens_with_what_it_found_and_says_each_workloads_dominant_cost_and_knob(built):
    assert built.present, built.reason
    page = built._repr_html_()
    assert "Profiled 5 configuration(s) of 3 workload(s)" in page
    assert "device busy in 2, copies in 2, host only (device idle) in 1" in page
    assert "the device idles while the host works for 11%–69% of a step" in page  # 0.5/4.5; torch pooled: 6.9/10
    assert ("resnet50: host only (device idle) dominates (1 of 2 configurations), 69% of gpu · torch's 10 ms "
            "step; the knob: jit_compile: true (torch.compile) or a larger batch.") in page
    assert ("cnn_cifar10: copies dominates, 60% of gpu · jax's 5.0 ms step; the knob: uint8 inputs "
            "(input_dtype: uint8) or the data on the device (data_placement: device).") in page
    assert "mlp_mnist: device busy dominates, 89% of cpu · jax's 4.5 ms step; the knob: more CPU threads" in page
    assert "1 profiled point(s) have no breakdown" in page and "no profiler here" in page
    assert "resnet50-torch-gpu-p0.trace" in page and '<svg class="cgb-fig"' in page


def test_without_profiled_records_the_section_is_one_line_saying_how(tmp_path):
    from tests.test_report import _rec as plain

    built = sections.build(sections.get("breakdown"), _ctx(tmp_path, [plain(0)]))
    assert not built.present and "profile: true" in built.reason


@pytest.mark.parametrize("part, backend, device, extra, says", [
    ("host_only", "jax", "gpu", {}, "steps_per_execution"),
    ("host_only", "torch", "gpu", {}, "jit_compile"),
    ("host_only", "torch", "gpu", {"workers": 4}, "more input workers"),
    ("copies", "jax", "gpu", {}, "uint8 inputs"),
    ("device_busy", "jax", "gpu", {}, "a larger batch or mixed_bfloat16"),
    ("device_busy", "jax", "gpu", {"precision": "mixed_bfloat16"}, "a larger batch (fuller"),
    ("device_busy", "torch", "gpu", {"matmul_share": 0.06}, "convolutions and matmuls are 6% of the kernel time"),
    ("device_busy", "torch", "gpu", {"matmul_share": 0.06}, "jit_compile: true (torch.compile fuses them)"),
])
def test_each_cost_names_its_knob(part, backend, device, extra, says):
    from helpers.report.publish.sections import breakdown

    assert says in breakdown.knob(part, {"backend": backend, "device": device, **extra})


def test_the_records_are_not_changed_by_the_section(tmp_path):
    r = _rec(0, "resnet50", "torch", "gpu", {"device_busy": 2.0, "copies": 1.0, "host_only": 7.0})
    ctx = _ctx(tmp_path, [r])
    before = copy.deepcopy([dict(x) for x in ctx.records])
    sections.build(sections.get("breakdown"), ctx)
    assert [dict(x) for x in ctx.records] == before
