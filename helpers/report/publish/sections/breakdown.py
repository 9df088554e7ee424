"""Where one steady step's time goes: the profiler's breakdown per workload × backend × device, beside MFU,
and per workload the dominant cost with the knob that addresses it."""

from __future__ import annotations

from helpers.measure import peaks
from helpers.measure.trace_breakdown import collective_per_device
from helpers.report.load import columns as C
from helpers.report.load.table import CONFIG_KEYS
from helpers.report.load.values import isnull
from helpers.report.publish.charts import grid
from helpers.report.publish.sections.base import Section
from helpers.report.words.fmt import fixed, mfu_shown, rounded, share
from helpers.report.words.labels import labels
from helpers.report.words.style import PALETTE

TITLE = "Where the time of a step goes (profiler)"  # no apostrophe: the page's sanitiser re-encodes it
NAV = "Step breakdown"
LEAD = ("Points run with profile: true train a few more steps after their timed window under the framework's own "
        "profiler (jax.profiler, torch.profiler, tf.profiler); the trace lies beside the record. One steady step, in "
        "milliseconds as traced: device busy (a GPU: kernels; a CPU: the framework's ops), copies between host and "
        "device while no kernel runs, and host only (the device idles while Python, Keras, the framework's dispatch "
        "or the data pipeline work). The parts add up to the traced step; the profiler's own overhead (the traced "
        "step over the same steps unprofiled) is in the table. MFU is the timed window's. docs/profiling.md says how "
        "to open a trace in Perfetto or TensorBoard.")

PARTS = ("device_busy", "copies", "host_only")
PART_LABEL = {"device_busy": "device busy", "copies": "copies", "host_only": "host only (device idle)"}
COLOURS = {part: PALETTE[part] for part in PARTS}  # none of them a backend's colour (style.PALETTE)
MAX_BARS = 16  # configurations per panel


def rows(ctx):
    """One row per profiled record: the tidy table's row with the breakdown's figures; and the profiled records
    without one (their reasons)."""
    import pandas as pd

    df = ctx.df
    with_b, without = {}, []
    for r in ctx.records:
        if r.get("status") != "ok" or "step_breakdown" not in r:
            continue
        b = r.get("step_breakdown")
        if isinstance(b, dict) and isinstance(b.get("parts_ms"), dict):
            with_b[r.get("_path")] = b
        else:
            without.append((r.get("workload"), r.get("backend"), r.get("device"), r.get("step_breakdown_reason")))
    if not with_b or not len(df):
        return pd.DataFrame(), without
    sub = df[df["path"].isin(list(with_b))].copy()
    for part in PARTS:
        sub[part] = [float(with_b[p]["parts_ms"].get(part) or 0.0) for p in sub["path"]]
    sub["traced_ms"] = sub[list(PARTS)].sum(axis=1)
    sub["unprofiled_ms"] = [with_b[p].get("unprofiled_step_ms") for p in sub["path"]]
    sub["overhead"] = [with_b[p].get("profiler_overhead") for p in sub["path"]]
    sub["top"] = [_top_text(with_b[p].get("top") or []) for p in sub["path"]]
    sub["families"] = [_families_text(with_b[p].get("kernel_families_ms")) for p in sub["path"]]
    sub["matmul_share"] = [_matmul_share(with_b[p].get("kernel_families_ms")) for p in sub["path"]]
    sub["trace"] = [(with_b[p].get("trace") or {}).get("path") or (with_b[p].get("trace") or {}).get("reason")
                    for p in sub["path"]]
    sub["mfu"] = peaks.mfu(sub["flops_per_sample"], sub[C.SAMPLES_PER_S], sub["peak_flops"])
    recs = {r.get("_path"): r for r in ctx.records}
    sub["devices"] = [_devices(recs.get(p) or {}) for p in sub["path"]]
    coll = [collective_per_device(with_b[p], d) for p, d in zip(sub["path"], sub["devices"])]
    sub["collective_ms"] = [c[0] for c in coll]
    sub["collective_calls"] = [c[1] for c in coll]
    return sub, without


def _devices(rec: dict) -> int:
    """The devices a record's point trained on: its mesh, else gpus x processes."""
    mesh = rec.get("mesh_devices")
    if mesh:
        return len(mesh)
    p = rec.get("params") or {}
    return int(p.get("gpus") or 1) * int(p.get("processes") or 1) * int(p.get("hosts") or 1)


def scaling_notes(conf) -> list[tuple[str, tuple]]:
    """Per workload profiled on one device and on several (same backend, device kind, batch per device): the
    step side by side, and what the difference is made of (the devices' collectives, the host's share)."""
    out = []
    for (wl, be), g in conf.groupby(["workload", "backend"], sort=True):
        one, many = g[g["devices"] == 1], g[g["devices"] > 1]
        if not len(one) or not len(many):
            continue
        a = one.iloc[0]
        for b in many.sort_values("devices").to_dict("records"):
            coll = b.get("collective_ms")
            calls = b.get("collective_calls")
            step_a, step_b = a["unprofiled_ms"], b["unprofiled_ms"]
            if isnull(step_a) or isnull(step_b):
                continue
            what = ("no collective kernel among its top kernels" if isnull(coll) else
                    f"the collectives (NCCL's kernels{'' if isnull(calls) else f', {fixed(calls, 0)} a step'}) take "
                    f"{rounded(coll, 2)} ms of each GPU's step")
            out.append(("{} ({}) on {} GPUs against 1: {} ms a step unprofiled against {} (+{} ms, the gap from "
                        "linear scaling); {}; the device idles while the host works {} ms a step against {}.",
                        (wl, be, int(b["devices"]), rounded(step_b, 3), rounded(step_a, 3),
                         rounded(step_b - step_a, 2), what, rounded(b["host_only"], 2), rounded(a["host_only"], 2))))
    return out


def _families_text(fam) -> str:
    """GPU kernel time by family, largest first (``trace_breakdown.FAMILIES``)."""
    if not isinstance(fam, dict):
        return ""
    return "; ".join(f"{k.replace('_', '/')} {rounded(v, 2)}" for k, v in sorted(fam.items(), key=lambda kv: -kv[1])
                     if v and v > 0)


def _matmul_share(fam):
    total = sum(v for v in fam.values() if v) if isinstance(fam, dict) else 0
    return (fam.get("matmul_conv") or 0) / total if total else None


def _top_text(top) -> str:
    return "; ".join(f"{t.get('name')} {rounded(t.get('ms'), 2)} ms" for t in top[:3])


def configurations(sub):
    """The profiled runs pooled per configuration (median of each figure over its runs)."""
    keys = [k for k in CONFIG_KEYS if k in sub.columns]
    num = list(PARTS) + ["traced_ms", "unprofiled_ms", "overhead", "mfu", C.SAMPLES_PER_S, "matmul_share",
                         "collective_ms", "collective_calls", "devices"]
    g = sub.groupby(keys, dropna=False, sort=True)
    out = g[num].median().reset_index()
    firsts = g[["top", "families", "trace", "config"]].first().reset_index()
    out = out.merge(firsts, on=keys)
    out["runs"] = g.size().to_numpy()
    return out


def dominant(r) -> str:
    return max(PARTS, key=lambda k: (r[k], {"host_only": 2, "copies": 1, "device_busy": 0}[k]))


def knob(part: str, r) -> str:
    """The knob that addresses ``part`` for configuration ``r`` (its backend, device, workload's data path)."""
    backend, device = str(r.get("backend")), str(r.get("device"))
    generator = not isnull(r.get("workers"))  # the image workloads that decode on the host (a workers knob)
    if part == "copies":
        return "uint8 inputs (input_dtype: uint8) or the data on the device (data_placement: device)"
    if part == "host_only":
        if generator:
            return "more input workers (workers) or a larger batch"
        if backend == "torch":
            return "jit_compile: true (torch.compile) or a larger batch"
        return "steps_per_execution (e.g. 8) or a larger batch"
    if device == "gpu":
        matmul = r.get("matmul_share")
        if not isnull(matmul) and matmul < 0.5:  # busy, but mostly not with the model's arithmetic
            fuse = "jit_compile: true (torch.compile fuses them)" if backend == "torch" else "mixed_bfloat16"
            return (f"fewer, fused kernels: convolutions and matmuls are {share(matmul)} of the kernel time, the rest "
                    f"elementwise work, casts and reductions; {fuse}")
        bf16 = " or mixed_bfloat16" if str(r.get("precision", "float32")) == "float32" else ""
        return f"a larger batch{bf16} (fuller, faster kernels)"
    return "more CPU threads, or a GPU"


def sentence(workload: str, t) -> tuple[str, tuple]:
    """One workload's sentence: its configurations' most common dominant cost, quoted where it weighs most."""
    doms = [dominant(r) for r in t.to_dict("records")]
    common = max(PARTS, key=lambda k: (doms.count(k), {"host_only": 2, "copies": 1, "device_busy": 0}[k]))
    rs = [r for r, d in zip(t.to_dict("records"), doms) if d == common]
    worst = max(rs, key=lambda r: r[common] / r["traced_ms"] if r["traced_ms"] else 0)
    part = worst[common] / worst["traced_ms"] if worst["traced_ms"] else 0
    of = "" if len(rs) == len(doms) else f" ({len(rs)} of {len(doms)} configurations)"
    return ("{}: {} dominates{}, {} of {}'s {} ms step; the knob: {}.",
            (workload, PART_LABEL[common], of, share(part), worst["config"], rounded(worst["traced_ms"], 2),
             knob(common, worst)))


def finding(conf) -> tuple[str, tuple]:
    doms = [dominant(r) for r in conf.to_dict("records")]
    counts = ", ".join(f"{PART_LABEL[k]} in {doms.count(k)}" for k in PARTS if doms.count(k))
    host = (conf["host_only"] / conf["traced_ms"]).dropna()
    return ("Profiled {} configuration(s) of {} workload(s): the largest part of the step is {}; the device idles "
            "while the host works for {}–{} of a step.",
            (len(conf), conf["workload"].nunique(), counts, f"{share(host.min())}", f"{share(host.max())}"))


def chart(conf):
    """Stacked bars, ms per step, one panel per workload; each bar's end says its MFU."""
    import numpy as np

    workloads = sorted(conf["workload"].unique())
    panels = [conf[conf["workload"] == w].sort_values(["device", "backend"]).head(MAX_BARS) for w in workloads]
    fig, axes = grid(len(panels), [0.25 * len(p) + 0.9 for p in panels])
    for ax, w, p in zip(axes, workloads, panels):
        y = np.arange(len(p))
        left = np.zeros(len(p))
        for part in PARTS:
            vals = p[part].to_numpy(dtype=float)
            ax.barh(y, vals, left=left, color=COLOURS[part], label=PART_LABEL[part])
            left += vals
        ax.set_yticks(y, labels(p), fontsize=8)
        ax.invert_yaxis()
        for yi, total, m in zip(y, left, p["mfu"]):
            mfu = "" if isnull(m) else f" · MFU {mfu_shown(m)}%"
            ax.text(total, yi, f" {rounded(total, 2)} ms{mfu}", va="center", fontsize=8)
        ax.set_title(w)
        ax.set_xlabel("ms per step, as traced", fontsize=8)
        ax.set_xlim(0, max(left.max(), 1e-9) * 1.45)
    fig.tight_layout()
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper left", bbox_to_anchor=(0.0, 0.0), ncols=len(PARTS), fontsize=8,
               frameon=False)
    return fig


def table(conf):
    import pandas as pd

    def ms_share(part):
        return [f"{rounded(r[part], 2)} ({share(r[part] / r['traced_ms'])})" if r["traced_ms"] else ""
                for r in conf.to_dict("records")]

    return pd.DataFrame({
        "workload": conf["workload"], "machine": conf["machine"], "device · backend": conf["config"],
        "batch": conf["batch_size"], "traced ms/step": [rounded(v, 3) for v in conf["traced_ms"]],
        **{f"{PART_LABEL[p]} ms (share)": ms_share(p) for p in PARTS},
        "unprofiled ms/step": [rounded(v, 3) for v in conf["unprofiled_ms"]],
        "profiler ×": [rounded(v, 2) for v in conf["overhead"]],
        "MFU %": [mfu_shown(v) for v in conf["mfu"]],
        "GPUs": [int(v) for v in conf["devices"]],
        "collectives ms per GPU (calls)": [
            "" if isnull(c) else f"{rounded(c, 2)}" + ("" if isnull(n) else f" ({fixed(n, 0)})")
            for c, n in zip(conf["collective_ms"], conf["collective_calls"])],
        "top kernels / ops (ms per step)": conf["top"], "GPU kernels by family (ms per step)": conf["families"],
        "trace (beside the record)": conf["trace"],
        "runs": conf["runs"],
    })


def build(ctx) -> Section:
    sub, without = rows(ctx)
    if not len(sub):
        why = ("no record read here has a step breakdown (the bundled ones: reference/h100/profile/): run points "
               "with profile: true (docs/profiling.md)")
        if without:
            why += f"; {len(without)} profiled point(s) have none: " + "; ".join(
                f"{w} {b}/{d}: {r}" for w, b, d, r in without[:3])
        return Section.absent(__name__, why)
    conf = configurations(sub)
    s = Section.of(__name__)
    template, values = finding(conf)
    _found(s, template, *values)
    s.figure(chart(conf), "the step's time per part, stacked, per configuration")
    for w in sorted(conf["workload"].unique()):
        template, values = sentence(w, conf[conf["workload"] == w])
        s.note(template, *values)
    for template, values in scaling_notes(conf):
        s.note(template, *values)
    s.table(table(conf.sort_values(["workload", "machine", "device", "backend"])))
    if without:
        s.note("{} profiled point(s) have no breakdown: {}.", len(without),
               "; ".join(f"{w} {b}/{d}: {r}" for w, b, d, r in without[:5]), kind="warn")
    return s


def _found(s: Section, template: str, *values) -> None:
    """The section's opening sentence (``Section.found`` where the report has it, else the first note)."""
    if hasattr(s, "found"):
        s.found(template, *values)
    else:
        s.note(template, *values)
