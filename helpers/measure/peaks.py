"""The device's peak arithmetic and the record's limit fields: achieved TFLOP/s and MFU.

    peak(device_used, gpu_name, precision, calibration, threads)   # (FLOP/s or None, source or reason)
    limit_fields(flops_per_sample, samples_per_s, ...)             # the record's limit fields

Peaks: GPUs from ``params/peaks.yaml`` (datasheet dense figures, each with its URL), keyed by the name
NVML reports and the precision; CPUs from the host calibration the runner measured (``helpers.measure.calibration``:
numpy float32 matmul GFLOP/s on all threads, or one thread x the threads a point used), stated as a
measured matmul peak, not a datasheet one. An unknown device gives ``mfu`` None and ``mfu_reason``. FLOPs per
sample come from ``helpers.measure.flops_analytic`` (a point's own count) or ``helpers.measure.flops_table`` (the
committed one, for records that predate the count).
"""

from __future__ import annotations

import functools
from pathlib import Path

from helpers.paths import PROJECT_ROOT

PEAKS = PROJECT_ROOT / "params" / "peaks.yaml"
PRECISION_PEAK = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


@functools.lru_cache(maxsize=4)
def load_peaks(path: str | None = None) -> dict:
    import yaml

    p = Path(path) if path else PEAKS
    doc = yaml.safe_load(p.read_text()) if p.is_file() else {}
    return doc or {}


def gpu_peak(gpu_name, precision: str, path: str | None = None) -> tuple[float | None, str]:
    """(dense peak FLOP/s or None, its source or why none) of the GPU NVML names ``gpu_name``.

    float32 on a GPU with TF32 tensor cores is held against the TF32 peak, the most float32 training can get
    from that card: JAX and TensorFlow run float32 matmuls and convolutions on them by default, PyTorch its
    convolutions (its matmuls only with ``torch.backends.cuda.matmul.allow_tf32``). Against the plain FP32
    figure a JAX ResNet-50 read 99% of the H100's limit while doing 13% of it."""
    prec = PRECISION_PEAK.get(precision or "float32", precision)
    if not gpu_name:
        return None, "no GPU name in the record"
    for entry in (load_peaks(path).get("gpus") or []):
        if any(m.lower() in str(gpu_name).lower() for m in entry["match"]):
            table = entry.get("tflops") or {}
            if prec == "float32" and table.get("tf32") is not None:
                return float(table["tf32"]) * 1e12, (
                    f"{entry['name']} datasheet, dense TF32, the float32 limit (tensor cores: JAX's and TensorFlow's "
                    f"float32 default, PyTorch's for convolutions; plain FP32 {table.get('float32')} TFLOP/s): "
                    f"{entry['source']}")
            tflops = table.get(prec)
            if tflops is None:
                return None, f"{entry['name']}: no dense {prec} peak in params/peaks.yaml"
            return float(tflops) * 1e12, f"{entry['name']} datasheet, dense {prec}: {entry['source']}"
    return None, f"unknown GPU {gpu_name!r}: not in params/peaks.yaml"


def gpu_memory_bandwidth(gpu_name, path: str | None = None) -> float | None:
    """Bytes/s of the GPU NVML names ``gpu_name`` (the datasheet's ``memory_tb_s``), None where not given."""
    for entry in (load_peaks(path).get("gpus") or []) if gpu_name else []:
        if any(m.lower() in str(gpu_name).lower() for m in entry["match"]):
            bw = entry.get("memory_tb_s")
            return float(bw) * 1e12 if bw else None
    return None


def cpu_peak(calibration, threads=None) -> tuple[float | None, str]:
    """(FLOP/s or None, source or reason) from the host calibration: the float32 matmul on all threads (or on one
    thread where that was faster: a busy host; a peak is the most the host showed), capped at one thread x
    ``threads`` for a point that used fewer cores."""
    if not isinstance(calibration, dict):
        return None, "no host calibration in the record (measured per run since the calibration landed)"

    def ok(v):
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None

    all_t, one = ok(calibration.get("matmul_gflops_all")), ok(calibration.get("matmul_gflops_1thread"))
    best = max([v for v in (all_t, one) if v is not None], default=None)
    if best is None:
        return None, "the host calibration has no matmul figure"
    how = "measured matmul peak (numpy float32 matmul, all threads)"
    if threads and one is not None and one * threads < best:
        best, how = one * threads, f"measured matmul peak: 1 thread x {threads} threads used"
    return best * 1e9, how


def peak(device_used, gpu_name=None, precision="float32", calibration=None, threads=None,
         gpus: int = 1) -> tuple[float | None, str]:
    """(FLOP/s or None, source or reason) of the devices a point used: ``gpus`` GPUs (the datasheet's figure is
    per device; samples/s is spread over all of them), or the CPU threads it ran on."""
    if device_used == "gpu":
        pk, why = gpu_peak(gpu_name, precision)
        return (pk * max(int(gpus or 1), 1) if pk is not None else None), why
    if device_used == "cpu":
        return cpu_peak(calibration, threads)
    return None, f"device {device_used!r}: no peak"


def achieved_flops(flops_per_sample, samples_per_s):
    """FLOP/s done: FLOPs per training sample x samples/s (numbers or pandas columns alike)."""
    return flops_per_sample * samples_per_s


def mfu(flops_per_sample, samples_per_s, peak_flops):
    """Model FLOPs utilisation, the one formula the record and the report use: FLOP/s done / the devices' peak."""
    return achieved_flops(flops_per_sample, samples_per_s) / peak_flops


def limit_fields(flops_per_sample, samples_per_s, device_used, gpu_name=None, precision="float32",
                 calibration=None, threads=None, gpus: int = 1) -> dict:
    """``flops_per_sample``, ``achieved_tflops``, ``peak_tflops``, ``peak_source``, ``mfu`` and ``mfu_reason``
    (None unless ``mfu`` is None). ``gpus``: devices the samples/s is spread over (the peak is per device)."""
    out = {"flops_per_sample": flops_per_sample, "achieved_tflops": None, "peak_tflops": None,
           "peak_source": None, "mfu": None, "mfu_reason": None}
    if not flops_per_sample or not samples_per_s:
        out["mfu_reason"] = "no FLOPs count" if not flops_per_sample else "no samples/s"
        return out
    out["achieved_tflops"] = achieved_flops(flops_per_sample, samples_per_s) / 1e12
    pk, why = peak(device_used, gpu_name, precision, calibration, threads, gpus)
    if pk is None:
        out["mfu_reason"] = why
        return out
    out.update(peak_tflops=pk / 1e12, peak_source=why, mfu=mfu(flops_per_sample, samples_per_s, pk))
    return out
