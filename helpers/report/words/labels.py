"""How the report names a configuration: short labels that say only what differs between the rows shown together
(``labels``: charts and tables), a configuration in full (``describe``), a knob in a label's words (``knob_short``)
and the devices a point used in words ('2 GPUs, one process each'); a record's hardware as every part of the report
names it (``hardware_name``: a name that reads like the bundled reference's, in quotes as a record's name).

    labels(summary_rows)      -> ['cpu · jax · b64', 'gpu · jax · b64 · 2 GPUs, one process each', ...]
    hardware_name("\\u00adreference H100")  -> '“\\xadreference H100” (a record's name)'
"""

from __future__ import annotations

import functools

from helpers.report.load.values import isnull, knob_items

DEVICE_KEYS = ("gpus", "processes", "hosts")  # said together, in words (``devices_words``)


def devices_words(gpus, processes=1, hosts=1) -> str:
    """The devices of a point in words: '1 GPU', '2 GPUs, one process', '2 GPUs, one process each',
    '4 GPUs, 2 processes of 2'."""
    def n(v):
        try:
            return max(1, int(v))
        except (TypeError, ValueError):
            return 1
    g, p = n(gpus), n(processes) * n(hosts)
    total = g * p
    if total == 1:
        return "1 GPU"
    if p == 1:
        return f"{total} GPUs, one process"
    return f"{total} GPUs, one process each" if g == 1 else f"{total} GPUs, {p} processes of {g}"


def varying_knobs(sub) -> set:
    """The workload knobs whose values differ between the rows of ``sub``."""
    items = [knob_items(k) for k in sub["knobs"]] if "knobs" in sub else []
    keys = set().union(*items) if items else set()
    return {k for k in keys if len({i.get(k) for i in items}) > 1}


PRECISION_SHORT = {"float32": "fp32", "mixed_bfloat16": "bf16", "mixed_float16": "fp16", "bfloat16": "bf16"}


def labels(sub, keep=("device", "backend")) -> list[str]:
    """Short labels for the configurations in ``sub``: device and backend, then only what varies
    between its rows (batch ``b64``, ``bf16``, threads ``t4``, ``jit=False``, the knobs that differ...)."""
    @functools.cache  # asked once a row and column: the answer is the frame's
    def varies(k):
        return k in sub.columns and sub[k].astype(str).nunique(dropna=False) > 1

    knob_keys = sorted(varying_knobs(sub))
    # a machine is named when two rows of one device differ by it (else a chart's key names it once)
    machine_varies = varies("machine") and ("device" not in sub.columns or any(
        g["machine"].astype(str).nunique() > 1 for _, g in sub.groupby("device")))
    out = []
    for _, r in sub.iterrows():
        parts = [str(r[k]) for k in keep if k in sub.columns]
        if machine_varies:
            parts.append(str(r["machine"]).split(" (")[0] + ("*" if r.get("fixture") else ""))
        if varies("batch_size") and not isnull(r["batch_size"]):
            parts.append(f"b{r['batch_size']:g}")
        if varies("precision"):
            parts.append(PRECISION_SHORT.get(str(r["precision"]), str(r["precision"])))
        if varies("threads"):
            t = r["threads"]
            parts.append("t?" if isnull(t) else ("t=all" if not t else f"t{int(t)}"))
        if varies("jit_compile") and str(r["jit_compile"]) != "auto":  # the default goes unsaid
            parts.append(f"jit={r['jit_compile']}")
        if varies("augment"):
            parts.append("aug" if str(r["augment"]) == "true" else "no aug")
        if varies("workers") and not isnull(r["workers"]):
            parts.append(f"{r['workers']:g} input worker{'s' * (r['workers'] != 1)}")  # said, not 'w4'

        items = knob_items(r.get("knobs"))
        if any(k in knob_keys for k in DEVICE_KEYS):  # one set-up, one name
            parts.append(devices_words(*(items.get(k, 1) for k in DEVICE_KEYS)))
        parts.extend(knob_short(k, items.get(k, "-")) for k in knob_keys if k not in DEVICE_KEYS)
        if varies("data_source"):
            parts.append(str(r["data_source"]))
        out.append(" · ".join(parts))
    if "n_train" in sub.columns and len(set(out)) < len(out):  # only the epoch size tells them apart
        out = [f"{lab} · n={r['n_train']:g}" if not isnull(r["n_train"]) else lab
               for lab, (_, r) in zip(out, sub.iterrows())]
    return out


def describe(r, knobs: set | None = None) -> str:
    """A configuration named in full: machine · device · backend · batch · precision · knobs (only the
    knobs in ``knobs`` when given: those that vary within the table it appears in)."""
    parts = [str(r["machine"]).split(" (")[0], str(r["device"]), str(r["backend"])]
    if not isnull(r.get("batch_size")):
        parts.append(f"batch {r['batch_size']:g}")
    parts.append(str(r.get("precision") or "float32"))
    if r.get("device") == "cpu":
        t = r.get("threads")
        parts.append("all threads" if isnull(t) or not t else f"{t:g} threads")
    if r.get("jit_compile") not in (None, "None", "auto"):
        parts.append(f"jit={r['jit_compile']}")
    items = knob_items(r.get("knobs"))
    parts.extend(f"{k}={v}" for k, v in items.items() if knobs is None or k in knobs)
    return " · ".join(parts)


_KNOB_SHORT = {"input_dtype": ("{} inputs", "float32"), "steps_per_execution": ("spe{}", "1"),  # (form, unset)
               "data_placement": ("data on {}", "host"), "gpus": ("{} GPU", "1"), "augment_impl": ("{}", "-")}


def knob_short(key: str, value) -> str:
    """A knob as a chart's label says it: 'uint8 in', 'spe8', 'data on device', '2 GPU', 'matmul'; else 'key=value'."""
    form, unset = _KNOB_SHORT.get(key, ("", ""))
    return form.format(unset if str(value) == "-" else value) if form else f"{key}={value}"

