"""NVML access: loading it, and the NVML indices of the GPUs a point may use (no framework import).

The GPUs used: ``CUDA_VISIBLE_DEVICES`` (indices or ``GPU-`` UUIDs, as CUDA reads them; unset = all)
mapped to NVML indices, of which a one-device point uses the first (the frameworks' default device).
CUDA's index order equals NVML's when ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or the GPUs are alike.
"""

from __future__ import annotations

import os


def load_nvml():
    """``pynvml`` initialised, or None (not installed, no driver, no GPU)."""
    try:
        import pynvml  # from nvidia-ml-py

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def visible_gpu_indices(nv, environ=None) -> list[int]:
    """NVML indices of the GPUs that ``CUDA_VISIBLE_DEVICES`` lets CUDA see, in CUDA's order.

    Like CUDA, an entry that matches no GPU (or is empty) hides it and every entry after it.
    """
    env = os.environ if environ is None else environ
    n = nv.nvmlDeviceGetCount()
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return list(range(n))
    uuids = None
    out: list[int] = []
    for token in (t.strip() for t in spec.split(",")):
        if token.isdigit() or (token.startswith("-") and token[1:].isdigit()):
            idx = int(token)
            if not 0 <= idx < n:
                break
        elif token:
            if uuids is None:
                uuids = []
                for i in range(n):
                    u = nv.nvmlDeviceGetUUID(nv.nvmlDeviceGetHandleByIndex(i))
                    uuids.append(u.decode() if isinstance(u, bytes) else str(u))
            tok = token if token.startswith("GPU-") else "GPU-" + token
            match = [i for i, u in enumerate(uuids) if u.startswith(tok)]  # CUDA accepts a unique prefix
            if len(match) != 1:
                break
            idx = match[0]
        else:
            break
        if idx in out:
            break
        out.append(idx)
    return out
