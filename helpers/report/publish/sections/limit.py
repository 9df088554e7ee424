"""How far from the limit: FLOPs per sample, achieved TFLOP/s and MFU per configuration, the tuning ladder, a
roofline-style chart."""

from __future__ import annotations

import functools

from helpers.params import LATER_DEFAULTS
from helpers.report.load import bare as _bare
from helpers.report.load import columns as C
from helpers.report.load.ladder import ladder_points
from helpers.report.load.values import isnull, knob_items
from helpers.report.publish.sections.base import Section
from helpers.report.words import findings as said
from helpers.report.words.fmt import fixed, mfu_shown, note, num, rounded, shown
from helpers.report.words.labels import describe

TITLE = "How far from the limit"
NAV = "MFU and limit"  # its name in the one-line contents
LEAD = ("How much of the machine each configuration uses: the model's FLOPs per training sample (forward and "
        "backward; the optimiser's update per step shown apart, never divided into the figure), "
        "achieved TFLOP/s (FLOPs per sample × samples/s) and MFU, the share of the device's peak arithmetic it "
        "achieved; then the tuning ladder, one knob at a time, and which rung went furthest.")

# what tells the ladder's rungs apart (the rest of a configuration: the workload's source values)
RUNG_KEYS = ("batch_size", "steps_per_execution", "precision", "input_dtype", "jit_compile", "data_placement")
MAX_PANELS = 24  # ten workloads x two backends on one machine fit; more are named, not drawn
LOSS = 0.8  # a rung under 0.8 × the rung before it is named as a loss
NVML_VS_MFU = ("NVML's GPU utilisation (the utilisation section) is busy time: the share of time any kernel runs, "
               "however little of the chip it keeps busy; MFU is work done: the share of the peak arithmetic "
               "the model's FLOPs needed. A GPU can read 100% busy at 10% MFU.")


@functools.lru_cache(maxsize=2)
def rungs(path: str | None = None) -> dict:
    """(workload, backend) -> [(label, {rung key: value})], in the ladder's order (params/ladder.yaml, then
    params/ladder_tf.yaml; or the one grid ``path``)."""
    out: dict = {}
    for p in ladder_points(path):
        key = {k: str(p.get(k, LATER_DEFAULTS.get(k))) for k in RUNG_KEYS}
        lst = out.setdefault((p["workload"], p["backend"]), [])
        if key not in [k for _, k in lst]:
            lst.append(("", key))
    for chain in out.values():
        prev = None
        for i, (_, key) in enumerate(chain):
            if prev is None:
                label = f"source b{key['batch_size']}"
            else:
                changed = [k for k in RUNG_KEYS if key[k] != prev[k]]
                label = " + ".join(_short(k, key[k]) for k in changed) or "same"
            chain[i] = (label, key)
            prev = key
    return out


def _short(k: str, v: str) -> str:
    return {"batch_size": f"b{v}", "steps_per_execution": f"steps/exec {v}", "input_dtype": f"{v} inputs",
            "jit_compile": f"jit={v}", "data_placement": f"data on the {v}",
            "precision": {"mixed_bfloat16": "bf16", "mixed_float16": "fp16"}.get(v, v)}[k]


def _rung_key(r) -> dict:
    items = knob_items(r.get("knobs"))
    return {"batch_size": str(int(r["batch_size"])) if not isnull(r.get("batch_size")) else "",
            "steps_per_execution": items.get("steps_per_execution", "1"), "precision": str(r.get("precision")),
            "jit_compile": str(r.get("jit_compile")),
            **{k: items.get(k, LATER_DEFAULTS[k]) for k in ("input_dtype", "data_placement")}}


def ladder_rows(summ):
    """The summary's GPU configurations that are rungs of the ladder: one row per (machine, workload, backend,
    rung) with ``rung`` (its position) and ``rung_label``; the fastest where two configurations match a rung."""
    import pandas as pd

    chains = rungs()
    out = []
    gpu = summ[(summ["device"] == "gpu") & summ[C.SAMPLES_PER_S].notna()] if len(summ) else summ
    for r in gpu.to_dict("records"):
        chain = chains.get((r["workload"], r["backend"]))
        if not chain:
            continue
        key = _rung_key(r)
        for i, (label, rk) in enumerate(chain):
            if rk == key:
                out.append({**r, "rung": i, "rung_label": f"{i}: {label}"})
    if not out:
        return pd.DataFrame()
    df = pd.DataFrame(out).sort_values(C.SAMPLES_PER_S, ascending=False)
    return df.drop_duplicates(["machine", "workload", "backend", "rung"]).sort_values(
        ["workload", "backend", "machine", "rung"]).reset_index(drop=True)


def limit_table(summ):
    import pandas as pd

    s = summ[summ[C.SAMPLES_PER_S].notna()].sort_values(["workload", "machine", "device", "backend", "batch_size"])
    rows = []
    for r in s.to_dict("records"):
        reason = "" if not isnull(r.get("mfu")) else (r.get("peak_source") if not isnull(r.get("flops_per_sample"))
                                                      else r.get("flops_source"))
        rows.append({
            "workload": r["workload"], "configuration": describe(r), "samples/s": shown(r[C.SAMPLES_PER_S], r),
            "GFLOP per sample (forward + backward)": num(r["flops_per_sample"] / 1e9)
            if not isnull(r["flops_per_sample"]) else "",
            "optimiser GFLOP per step": num(r["optimizer_flops_per_step"] / 1e9)
            if not isnull(r.get("optimizer_flops_per_step")) else "",
            "achieved TFLOP/s": num(r["achieved_tflops"]) if not isnull(r["achieved_tflops"]) else "",
            "peak TFLOP/s": num(r["peak_flops"] / 1e12) if not isnull(r["peak_flops"]) else "",
            "MFU %": mfu_shown(r["mfu"]), "why no MFU / peak source": reason or r.get("peak_source") or "",
            "FLOPs from": (r.get("flops_source") or "") if not isnull(r["flops_per_sample"]) else ""})
    return pd.DataFrame(rows)


def roofline(summ):
    """Achieved TFLOP/s of every configuration against FLOPs per sample, each device's peak a ceiling."""
    from helpers.report.publish.charts import plain_log, setup_plots
    from helpers.report.words.style import backend_name, scatter_look

    s = summ[summ["achieved_tflops"].notna() & (summ["achieved_tflops"] > 0)] if len(summ) else summ
    if not len(s):
        return None
    plt = setup_plots()
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for (dev, be), g in s.groupby(["device", "backend"]):  # colour: backend; mark: device (as every chart)
        ax.scatter(g["flops_per_sample"], g["achieved_tflops"], s=18, alpha=0.85, label=f"{dev.upper()} · "
                   f"{backend_name(be)}", **scatter_look(be, dev))
    # one line per peak: a machine's device at a precision and a GPU count (1, 2 and 4 GPUs: three peaks, never
    # their median)
    p = s[s["peak_flops"].notna()]
    peaks = p.assign(gpus=p["gpus"].fillna(1)).groupby(["machine", "device", "precision", "gpus"])[
        "peak_flops"].median()
    for ls, ((_machine, dev, prec, n), pk) in zip(["--", ":", "-.", (0, (5, 1))] * 4, peaks.items()):
        ax.axhline(pk / 1e12, ls=ls, lw=0.9, color="#222222" if dev == "gpu" else "#888888",  # no backend's colour
                   label=f"{dev.upper()}{f' ×{int(n)}' if dev == 'gpu' and n > 1 else ''} peak · {prec} "
                         f"({num(pk / 1e12)})")  # named in the key
    plain_log(ax, "x")
    plain_log(ax, "y")
    ax.set_xlabel("FLOPs per training sample (log)")
    ax.set_ylabel("achieved TFLOP/s (log)")
    ax.set_title("achieved TFLOP/s against the peak (dashed: each device's peak per precision)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def _ladders(lad) -> list:
    """The ladders worth a chart panel: one per (workload, backend, machine) with more than one rung run."""
    return [g for _, g in lad.groupby(["workload", "backend", "machine"], sort=True) if len(g) > 1]


def ladder_chart(lad, bare=None):
    """One panel per (workload, backend, machine): samples/s per rung (bars) and MFU (line, right axis); a dashed
    line where a bare loop of that workload and backend ran on that host (its best precision)."""
    from helpers.report.publish.charts import grid, setup_plots
    from helpers.report.words.style import bar_look

    groups = _ladders(lad)[:MAX_PANELS]
    if not groups:
        return None
    setup_plots()
    few = max(len(g) for g in groups) <= 3  # rungs a panel: three panels a row, else two, taller for the labels
    fig, axes = grid(len(groups), [1.9 if few else 2.7] * len(groups), ncols=3 if few else 2)
    one = len({str(g.iloc[0]['machine']) for g in groups}) == 1  # then the machine is named once, above
    for ax, g in zip(axes, groups):
        x = list(range(len(g)))
        look = bar_look(g.iloc[0]["backend"], "gpu")  # a ladder's rungs: one backend's, on the GPU
        ax.bar(x, g[C.SAMPLES_PER_S], color=look["facecolor"], edgecolor=look["edgecolor"], lw=look["linewidth"])
        ax.set_xticks(x, [t.replace(": source ", ": src ") for t in g["rung_label"]], rotation=60, ha="right",
                      fontsize=6.5)
        ax.set_ylabel("samples/s", fontsize=7)
        r0 = g.iloc[0]
        ax.set_title(f"{r0['workload']} · {r0['backend']}" + ("" if one else f" · {str(r0['machine'])[:30]}"))
        loops = [b for b in (_bare.beside(bare, r0["workload"], r0["backend"], p, r0.get("host"))
                             for p in sorted(set(g["precision"]))) if b]
        if loops:
            top = max(loops, key=lambda b: b[C.SAMPLES_PER_S])
            ax.axhline(top[C.SAMPLES_PER_S], ls="--", color="k", lw=1)
            ax.annotate(f"{top['impl']} b{top['batch']}", (0, top[C.SAMPLES_PER_S]), fontsize=6, va="top",
                        textcoords="offset points", xytext=(2, -2))  # under its line: clear of the title
        if g["mfu"].notna().any():
            ax2 = ax.twinx()
            ax2.plot(x, g["mfu"] * 100, "x-", color="k", lw=1, ms=4)  # not a device's mark
            ax2.set_ylabel("MFU %", fontsize=7)
            ax2.set_ylim(0, max(float(g["mfu"].max()) * 100 * 1.25, 1e-9))  # from 0: never a sliver stretched
            ax2.grid(False)
    fig.tight_layout()
    return fig


def _loop_text(loop, against, top) -> str:
    """The bare loop's cell; ``against`` is the rung it is set beside (the best rung ``top``, or the best rung of
    the loop's precision when it has none at the best rung's)."""
    if not loop:
        return "not run"
    other = (f"; against the best {against['precision']} rung, {num(against['samples_per_s'])} samples/s"
             if against is not top else "")
    return f"{num(loop['samples_per_s'])} ({loop['impl']}, b{loop['batch']}, {loop['runs']} run(s){other})"


def _moves(g) -> tuple[str, str]:
    """(the rung that gained most over the rung run before it, the rungs that lost more than LOSS of it), each
    as "label × ratio"; ``g``: one workload and backend's rungs on one machine, in the ladder's order."""
    g = g.sort_values("rung")
    sps = g[C.SAMPLES_PER_S].to_numpy()
    steps = list(zip(g["rung_label"].iloc[1:], sps[1:] / sps[:-1]))
    if not steps:
        return "", ""
    label, ratio = max(steps, key=lambda t: t[1])
    up = f"{label} (× {rounded(ratio, 2)})" if ratio > 1 else "none"
    return up, "; ".join(f"{lb} (× {rounded(r, 2)})" for lb, r in steps if r < LOSS) or "none"


def build(ctx) -> Section:
    summ = ctx.summary
    if summ.empty or not summ[C.SAMPLES_PER_S].notna().any():
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__).found(*said.limit(summ))
    counted = summ["flops_per_sample"].notna()
    how = [note("FLOPs per sample of one training step, counted once per model by walking its layers: "
           "2 FLOPs per multiply-add, backward = 2 × forward, plus the optimiser's update per step over the batch; "
           "cross-checked against XLA's cost analysis of the compiled JAX train step (benchmarks/flops.py). "
           "{} of {} configurations have a count; {} of them were counted at report time (records that predate "
           "the count).", int(counted.sum()), len(summ),
           int(summ["flops_source"].fillna("").str.contains("report time").sum())),
           note("Peaks: GPUs from NVIDIA's datasheets, dense, for the precision used (params/peaks.yaml: float32 "
           "against the TF32 tensor-core peak where the GPU has one, the most float32 training gets from the card: "
           "JAX and TensorFlow use it by default, PyTorch for convolutions; a PyTorch dense or recurrent model in "
           "float32 runs plain FP32 matmuls, so its MFU also says what allow_tf32 could add); CPUs: "
           "the measured matmul peak of the run's host calibration (numpy float32 matmul on the threads used), "
           "not a datasheet figure. Without a known peak MFU is left empty and the table says why."),
           note("{}", NVML_VS_MFU)]
    s.details("How FLOPs, peaks and MFU are counted (click to open)", "".join(how))
    s.table(limit_table(summ), caption="FLOPs, achieved TFLOP/s and MFU per configuration")
    s.figure(roofline(summ), "achieved TFLOP/s against the peak")
    s.heading("The tuning ladder (params/ladder.yaml)")
    lad = ladder_rows(summ)
    if lad.empty:
        return s.note("The ladder has not been run yet: no GPU configuration in these records is one of its rungs "
                      "(./run_all.sh params/ladder.yaml on a GPU machine).")
    bare = getattr(ctx, "bare", None)
    if len(lad) and lad["machine"].nunique() == 1:  # the charts' titles leave it out
        s.note("Every rung ran on {}.", lad["machine"].iloc[0])
    both = {"cpu", "gpu"} <= set(ctx.costed["device"].dropna())  # beside a CPU/GPU verdict: detail, folded
    s.figure(ladder_chart(lad, bare), "the tuning ladder: samples/s and MFU per rung", fold=both and
             "The ladder's chart: samples/s and MFU per rung (click to open; the table has every rung)")
    panels = len(_ladders(lad))
    if panels > MAX_PANELS:
        s.note("The chart draws the first {} of {} ladders (workload, backend, machine); the table below lists "
               "every one.", MAX_PANELS, panels)
    best = []
    for (wl, be, machine), g in lad.groupby(["workload", "backend", "machine"], sort=True):
        learned = g[g["learned"] != "no"] if "learned" in g else g  # a rung that did not learn is never the best
        top = (learned if len(learned) else g).loc[(learned if len(learned) else g)[C.SAMPLES_PER_S].idxmax()]
        first = g[g["rung"] == 0]
        gain = (rounded(top[C.SAMPLES_PER_S] / first.iloc[0][C.SAMPLES_PER_S], 3) if len(first)
                else "source's rung not run")
        chain = rungs().get((wl, be), [])
        loop, against = _bare.beside(bare, wl, be, top["precision"], top.get("host")), top
        if not loop:  # no bare loop at the best rung's precision: set the best rung of a precision it has beside it
            for prec, gp in g.groupby("precision"):
                loop = _bare.beside(bare, wl, be, prec, top.get("host"))
                if loop:
                    against = gp.loc[gp[C.SAMPLES_PER_S].idxmax()]
                    break
        up, down = _moves(g)
        best.append({"workload": wl, "backend": be, "machine": machine,
                     "rungs run": f"{len(g)} of {len(chain)}", "best rung": top["rung_label"],
                     "largest step (× the rung before)": up, "rungs that lost": down,
                     "samples/s": shown(top[C.SAMPLES_PER_S], top), "MFU %": mfu_shown(top["mfu"]),
                     "gain over the source's rung ×": gain,
                     "bare loop (same host, precision)": _loop_text(loop, against, top),
                     "suite / bare ×": f"{fixed(against['samples_per_s'] / loop['samples_per_s'])}" if loop else ""})
    import pandas as pd

    s.table(pd.DataFrame(best), caption="the best rung per workload and backend")
    done = set(zip(lad["workload"], lad["backend"]))
    todo = sorted(f"{wl} · {be}" for wl, be in rungs() if (wl, be) not in done)
    if todo:
        s.note("Not run yet (no rung in these records): {}.", ", ".join(todo))
    s.details("How the ladder is read: its largest step, the bare loop, how rungs are found (click to open)", note(
        "Largest step: the knob that moved this workload most, its rung's samples/s over the rung's before (medians "
        "over runs); a rung that lost (under {} × the one before) is a finding about that knob on this model (the "
        "README's \"How far from the limit\").", LOSS) + note(
        "The bare loop: benchmarks/bare_jax.py and bare_torch.py (plain JAX / PyTorch, batches kept on the device, "
        "no Keras; <code>--record &lt;run folder&gt;/bare_loops.jsonl</code>, same machine; vgg_cifar10 without "
        "augmentation, resnet50 as torchvision's v1.5): an upper bound on what the framework costs.") + note(
        "Rungs are found by configuration (batch, steps per execution, precision, input dtype, jit_compile), "
        "whichever grid ran them; a rung's label says what it adds to the one before, which it keeps."))
    return s
