"""The report's answer, first: per workload, how much faster the GPU trains, and what one source epoch takes and
costs on each side; the sentences that say it, generated from the figures; short names for configurations.

    rows = ctx.best                                        # the verdict: fastest GPU over fastest CPU, per workload
    pairs = headline.best_pairs(ctx.pairs)                 # like for like: one matched pair per workload × backend
    for s in headline.sentences(rows, headline.compared(ctx.df), pairs): print(s)

Everything here is a function of the tidy tables (no files, no context object), so the sentences are tested
against fixtures whose numbers are known.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.report.load.reference import is_reference
from helpers.report.load.values import isnull
from helpers.report.load.visible import hardware_name
from helpers.report.words import fmt
from helpers.report.words.fmt import speedup_shown
from helpers.report.words.labels import PRECISION_SHORT
from helpers.report.words.style import backend_short
from helpers.report.words.words import differs, duration, money  # noqa: F401 - the verdict's words use them from here

# the files beside report.html, linked from the top of its first section
LINKS = ('<span class="cgb-links"><a href="verdict.csv">verdict.csv</a> · <a href="results.csv">results.csv</a> · '
         '<a href="configurations.csv">configurations.csv</a> · <a href="index.html">notebooks</a></span>')


def short_gpu(name) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100'; 'NVIDIA GeForce RTX 4090' -> 'RTX 4090'; '' for nothing."""
    if isnull(name) or not str(name).strip() or (name := hardware_name(name)).startswith("“"):
        return "" if isnull(name) or not str(name).strip() else name  # a quoted record's name: whole
    words = [w for w in str(name).replace("NVIDIA", "").replace("GeForce", "").split() if w]
    if not words:
        return str(name)[:24]
    if words[0] in ("RTX", "GTX", "Tesla", "Quadro") and len(words) > 1:
        return " ".join(words[:2])
    return words[0]


def short_cpu(model) -> str:
    """'AMD EPYC 7B13 64-Core Processor' -> 'AMD EPYC 7B13'; 'Intel(R) Xeon(R) Platinum 8480+' -> 'Xeon 8480+'."""
    if isnull(model) or not str(model).strip() or (model := hardware_name(model)).startswith("“"):
        return "CPU" if isnull(model) or not str(model).strip() else model  # a quoted record's name: whole
    text = re.sub(r"\((R|TM|tm|r)\)|CPU|Processor|@.*$|\d+-Core", " ", str(model))
    words = text.split()
    if "Xeon" in words:
        rest = [w for w in words[words.index("Xeon") + 1:] if w not in ("Platinum", "Gold", "Silver", "Bronze")]
        return " ".join(["Xeon", *rest[:1]])
    return " ".join(words[:3]) or "CPU"


def gpu_side(machine) -> str:
    """The GPU side's short name: 'H100 ref' for the bundled reference, else the GPU's short name."""
    m = str(machine)
    if is_reference(m):
        hw = m.split(": ", 1)[1] if ": " in m else m
        return f"{short_gpu(hw.split(' · ')[0])} ref"
    return short_gpu(m.split(" · ")[0])


def config_key(r, suffix: str = "_gpu") -> str:
    """A configuration named briefly: 'H100 ref · jax · b32' (precision only when it is not float32)."""
    parts = [gpu_side(r.get("gpu_machine", r.get("machine"))), str(r.get("backend"))]
    if not isnull(r.get("batch_size")):
        parts.append(f"b{r['batch_size']:g}")
    prec = str(r.get("precision") or "float32")
    if prec != "float32":
        parts.append(PRECISION_SHORT.get(prec, prec))
    return " · ".join(p for p in parts if p)


def cores(r, suffix: str = "_cpu"):
    """The CPU cores a CPU configuration trained on: its thread setting, else the machine's logical CPUs."""
    t = r.get(f"threads{suffix}")
    if not isnull(t) and t:
        return int(t)
    v = next((r.get(f"{k}{suffix}") for k in ("machine_cpus", "cpus") if not isnull(r.get(f"{k}{suffix}"))), None)
    return None if v is None else int(v)


def side(r, suffix: str) -> str:
    """One side of a verdict row (best.best_over_best) named: 'TF on 2 CPU cores', 'JAX on the H100', 'JAX on
    the reference H100', 'JAX on 2 H200' (one configuration over several GPUs)."""
    be = backend_short(r.get(f"backend{suffix}", r.get("backend")))
    if suffix == "_cpu":
        n = cores(r, suffix)
        return f"{be} on {n} CPU core{'s' if n != 1 else ''}" if n else f"{be} on the CPU"
    m = r.get("gpu_machine", r.get(f"machine{suffix}"))
    name, ref = gpu_side(m), is_reference(m)  # the bundled reference by its files, never by a name's words
    name = (name[:-4] if ref else name) or "GPU"
    n = r.get(f"gpus{suffix}")
    if not isnull(n) and n > 1:
        return f"{be} on {int(n)} {name}" + (" (reference)" if ref else "")
    return f"{be} on the {'reference ' if ref else ''}{name}"


def sides(r) -> str:
    """'TF on 2 CPU cores → JAX on the H100', then every knob the two sides differ in besides the backend and threads
    (``differs``): 'TF on 2 CPU cores → JAX on the H100 (input workers: 1 on the CPU, 4 on the GPU)'."""
    d = differs(r)
    return f"{side(r, '_cpu')} → {side(r, '_gpu')}" + (f" ({d})" if d else "")


def best_pairs(pairs):
    """One pair per workload × backend: the one whose GPU side is fastest."""
    if pairs is None or not len(pairs):
        return pairs
    ok = pairs[pairs["speedup"].notna()]
    return (ok.sort_values("samples_per_s_gpu", ascending=False).groupby(["workload", "backend"], sort=False)
            .head(1).sort_values(["workload", "backend"]).reset_index(drop=True))


def per_workload(pairs):
    """One pair per workload: its fastest GPU configuration's (the one a reader would train with)."""
    b = best_pairs(pairs)
    if b is None or not len(b):
        return b
    return (b.sort_values("samples_per_s_gpu", ascending=False).groupby("workload", sort=False).head(1)
            .sort_values("workload").reset_index(drop=True))


def _under(path, folder) -> bool:
    try:
        return Path(str(path)).resolve().is_relative_to(Path(folder).resolve())
    except (OSError, ValueError, RuntimeError):
        return False


def compared(df, here: tuple = ()) -> dict:
    """What the report compares: the CPU machine(s) and the GPU(s), and whether a GPU is the bundled reference's.
    ``here`` = (host, CPU model, logical CPUs, outputs folder) of the renderer: "this machine" only for runs read
    from this host's outputs folder whose host, CPU and CPUs are this host's (a record elsewhere is another's)."""
    ok = df[df["status"] == "ok"] if len(df) else df
    cpu = ok[(ok["device"] == "cpu") & ~ok["machine"].map(is_reference)] if len(ok) else ok
    gpu = ok[ok["device"] == "gpu"] if len(ok) else ok
    out = {"cpus": [], "gpus": [], "reference": False}
    for m, g in cpu.groupby("machine", sort=False):
        r = g.iloc[0]
        cores = r.get("machine_cpus") if not isnull(r.get("machine_cpus")) else r.get("cpus")
        mine = len(here) == 4 and any(
            (str(x.get("host")), str(x.get("cpu_model")), x.get("machine_cpus")) == tuple(here[:3])
            and _under(x.get("path"), here[3]) for x in g.to_dict("records"))
        out["cpus"].append({"model": short_cpu(r.get("cpu_model")), "cores": None if isnull(cores) else int(cores),
                            "here": mine, "machine": m})
    for m, g in gpu.groupby("machine", sort=True):
        ref = is_reference(m)
        out["reference"] |= ref
        date = str(g["started_at"].dropna().max())[:10] if "started_at" in g and g["started_at"].notna().any() \
            else ""
        out["gpus"].append({"name": hardware_name(g["gpu"].dropna().iloc[0]) if g["gpu"].notna().any() else gpu_side(m),
                            "short": gpu_side(m), "reference": ref, "date": date, "machine": m})
    return out


def compared_text(c: dict) -> str:
    """'Compared: the 2-CPU AMD EPYC 7B13 of this machine against the NVIDIA H100 80GB HBM3 of the bundled
    reference run (measured 2026-11-23 on another machine).'"""
    cpus = c["cpus"]
    if not cpus:
        cpu = "no CPU run"
    elif len(cpus) == 1:
        n = cpus[0]["cores"]
        cpu = (f"the {n}-CPU {cpus[0]['model']}" if n else f"the {cpus[0]['model']}") + \
            (" of this machine" if cpus[0]["here"] else "")
    else:
        cpu = f"{len(cpus)} CPU machines ({', '.join(x['model'] for x in cpus[:3])})"
    gpus = c["gpus"]
    if not gpus:
        return f"Measured: {cpu}; no GPU run, and no bundled reference matches these configurations."
    same = [len(cpus) == 1 and cpus[0]["machine"] == g["machine"] for g in gpus]  # equal machines only
    named = [f"the {g['name']} of the bundled reference run (measured {g['date']} on another machine; "
             f"“{short_gpu(g['name'])} ref” on the charts)" if g["reference"] else
             f"the {g['name']}" + (" of the same machine" if s else "") for g, s in zip(gpus[:3], same)]
    more = f" and {len(gpus) - 3} more GPUs" if len(gpus) > 3 else ""
    return f"Compared: {cpu} against {' and '.join(named)}{more}."


def _span(v) -> str:
    lo, hi = int(v.min()), int(v.max())
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def runs_sentence(rows) -> str:
    """'The GPU figures rest on 2–3 runs each, the CPU figures on 1 (10 of 10 rest on a single run a side ...).'"""
    g, c = rows["n_runs_gpu"].astype(float), rows["n_runs_cpu"].astype(float)
    one = (g <= 1) | (c <= 1)
    tail = (f" ({int(one.sum())} of {len(rows)} rest on a single run on one side, marked †: no between-run "
            "interval)") if one.any() else ""
    return (f"The GPU figures rest on {_span(g)} run{'s' if g.max() > 1 else ''} each, the CPU figures on "
            f"{_span(c)}{tail}.")


def _first(rows, c: dict) -> str:
    n = len(rows)
    lo, hi = rows.iloc[0], rows.iloc[-1]
    gpu = " and ".join(dict.fromkeys(g["short"] for g in c["gpus"])) or "the GPU"
    cpu = c["cpus"][0] if len(c["cpus"]) == 1 else None
    this = "this" if cpu and cpu["here"] else "the"
    on = (f"On {this} {cpu['cores']}-CPU {cpu['model']}" if cpu and cpu["cores"] else
          f"On {this} {cpu['model']}" if cpu else "On these CPUs")
    faster = rows[rows["speedup"] > 1]
    what = f"{n} workload{'s' if n != 1 else ''}"
    if len(faster) == n:
        text = (f"{on}, {'every one of the ' + what if n > 1 else 'the one workload'} trains "
                f"{speedup_shown(lo)}" + (f" to {speedup_shown(hi)}" if n > 1 else "") + f" faster on the {gpu}")
    elif len(faster) == 0:
        text = (f"{on}, none of the {what} trains faster on the {gpu} (from {speedup_shown(lo)} to "
                f"{speedup_shown(hi)} of the CPU's speed)")
    else:
        slow = rows[rows["speedup"] <= 1]
        text = (f"{on}, {len(faster)} of the {what} train faster on the {gpu} (up to {speedup_shown(hi)}); "
                + ", ".join(f"{r['workload']} does not ({speedup_shown(r)})" for _, r in slow.head(3).iterrows()))
    return text + (" (per sample, each workload's fastest GPU configuration against its fastest CPU configuration, "
                   "any backend, at the same batch size and precision).")


def _cost(rows) -> str:
    priced = rows[rows["on_demand_per_source_epoch_cpu"].notna() & rows["on_demand_per_source_epoch_gpu"].notna()]
    if not len(priced):
        return "No price is known for one side (params/prices.yaml), so the cost per epoch is not compared."
    if (priced["machine"] == priced["gpu_machine"]).all():
        r = priced.loc[priced["on_demand_per_source_epoch_cpu"].idxmax()]
        return (f"One machine, one hourly price: an epoch costs the speedup's factor less on its GPU ({r['workload']}: "
                f"{_money_pair(r)}, on-demand).")
    cheaper = priced[priced["on_demand_per_source_epoch_gpu"] < priced["on_demand_per_source_epoch_cpu"]]
    eg = cheaper.iloc[0] if len(cheaper) else None
    return (f"At on-demand prices an epoch on the sides compared above is cheaper on the GPU machine for "
            f"{len(cheaper)} of the {len(priced)} workloads priced on both sides" +
            (f" (e.g. {eg['workload']}: {_money_pair(eg)})" if eg is not None else "") + ".")


def _money_pair(r) -> str:
    """'$0.0042 on the CPU against $0.0038 on the GPU': a verdict row's on-demand cost of a source epoch, CPU first
    (as every pair reads), each with its marks."""
    return (f"{money(r['on_demand_per_source_epoch_cpu'], fmt.row_marks(r, '_cpu'))} on the CPU against "
            f"{money(r['on_demand_per_source_epoch_gpu'], fmt.row_marks(r, '_gpu'))} on the GPU")


def one_side_sentence(alone: dict) -> str:
    """'Measured on one side only: TF on the CPU (cnn_cifar10, mlp_mnist): no like-for-like pair for it.' ('' for
    none); ``alone`` as ``best.one_side`` gives it."""
    if not alone:
        return ""
    by = {}
    for (wl, be), dev in sorted(alone.items()):
        by.setdefault((be, dev), []).append(wl)
    parts = [f"{backend_short(be)} on the {dev.upper()} ({', '.join(w[:4])}"
             + (f" and {len(w) - 4} more)" if len(w) > 4 else ")") for (be, dev), w in sorted(by.items())]
    return (f"Measured on one side only: {'; '.join(parts)}: no like-for-like pair has it; the figures above count "
            "it on its own side.")


def sentences(rows, c: dict, pairs=None, alone: dict | None = None) -> list[str]:
    """Three to six sentences a reader can act on, from ``best.best_over_best`` rows, ``compared``, the like-for-like
    pairs (``best_pairs``: to name the backends that lose on the GPU) and the backends measured on one side only
    (``best.one_side``); [] without rows."""
    if rows is None or not len(rows):
        return []
    rows = rows.sort_values("speedup").reset_index(drop=True)
    out = [_first(rows, c)]
    if pairs is not None and len(pairs):
        slower = pairs[(pairs["speedup"] <= 1) & ~pairs["workload"].isin(rows[rows["speedup"] <= 1]["workload"])]
        if len(slower):
            out[0] = out[0][:-1] + "; but like for like, " + ", ".join(
                f"{r['workload']} on {r['backend']} is slower on the GPU ({speedup_shown(r)})"
                for _, r in slower.sort_values("speedup").head(3).iterrows()) + "."
    lo, hi = rows.iloc[0], rows.iloc[-1]
    if len(rows) > 1:
        why = ""
        if not isnull(lo.get("mfu_gpu")):
            why = f": its GPU does {fmt.mfu_shown(lo['mfu_gpu'])}% of its peak arithmetic (too little work a step)"
        elif not isnull(lo.get("gpu_pct_gpu")):
            why = f": the GPU is busy {lo['gpu_pct_gpu']:.0f}% of the time"
        out.append(f"The smallest gain is {lo['workload']}, {sides(lo)} ({speedup_shown(lo)}, batch "
                   f"{lo['batch_size']:g}){why}; the largest is {hi['workload']}, {sides(hi)} ({speedup_shown(hi)}).")
    both = rows[rows["source_epoch_s_cpu"].notna() & rows["source_epoch_s_gpu"].notna()]
    if len(both):
        r = both.loc[(both["source_epoch_s_cpu"] - both["source_epoch_s_gpu"]).idxmax()]
        cpu, gpu = (duration(r[f"source_epoch_s_{d}"], fmt.row_marks(r, f"_{d}")) for d in ("cpu", "gpu"))
        out.append(f"The most time saved is on {r['workload']}: one epoch of its source's dataset "
                   f"({r['source_samples_cpu']:,.0f} samples) takes {cpu} on the CPU and {gpu} on the GPU.")
    out.append(_cost(rows))
    if one_side_sentence(alone or {}):
        out.append(one_side_sentence(alone))
    out.append(runs_sentence(rows))
    return out
