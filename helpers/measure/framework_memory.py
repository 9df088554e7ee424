"""Peak memory as the framework itself counts it (imports the framework only inside the function).

NVML memory includes what a framework *reserved* (JAX preallocates 75% of the card), so peak
memory in the record also comes from the framework's own counters (``framework_peak_memory``).
"""

from __future__ import annotations


def framework_peak_memory(backend: str, device_used: str) -> dict:
    """Peak memory as the framework counts it: device bytes on GPU, process peak RSS on CPU."""
    out: dict = {}
    try:
        import resource

        out["process_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except Exception:
        pass
    if device_used != "gpu":
        return out
    try:
        if backend == "torch":
            import torch

            out["gpu_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
        elif backend == "jax":
            import jax

            stats = jax.devices()[0].memory_stats() or {}
            if "peak_bytes_in_use" in stats:
                out["gpu_peak_mb"] = stats["peak_bytes_in_use"] / 2**20
        elif backend == "tensorflow":
            import tensorflow as tf

            out["gpu_peak_mb"] = tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
    except Exception as exc:  # counters missing on some builds: say so
        out["gpu_peak_error"] = str(exc)[:200]
    return out
