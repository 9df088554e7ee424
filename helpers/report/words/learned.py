"""Did each configuration learn, in words: a configuration's name (``name``), the ones that did not (``not_learned``),
the losses of each workload (``lines``) and of each batch size (``batches``), from ``learning.judge``'s columns."""

from __future__ import annotations

from helpers.record.learned import NO, NOT_CHECKED, YES
from helpers.record.learned import shown as _g
from helpers.report.derive.learning import BATCH_GROUP, common_knobs, model_knobs
from helpers.report.load.values import isnull
from helpers.report.words.fmt import NOT_LEARNED as MARK  # a configuration that did not learn: a mark of its own
from helpers.report.words.style import backend_short


def name(r, common=frozenset()) -> str:
    """A configuration as the learning lines name it: 'JAX on the CPU, 1 thread, b128, jit=False,
    learning_rate=1000'."""
    parts = [f"{backend_short(r['backend'])} on the {str(r['device']).upper()}"]
    if r["device"] == "cpu" and not isnull(r.get("threads")) and r.get("threads"):
        parts.append(f"{int(r['threads'])} thread{'s' if int(r['threads']) > 1 else ''}")
    parts.append(f"b{int(r['batch_size'])}" if not isnull(r.get("batch_size")) else "")
    if str(r.get("precision")) not in ("float32", "None", "nan"):
        parts.append(str(r["precision"]))
    if str(r.get("jit_compile")) not in ("auto", "None", "nan"):
        parts.append(f"jit={r['jit_compile']}")
    parts += [p for p in str(r.get("knobs") or "").split(", ") if p and p not in common]
    return ", ".join(p for p in parts if p)


def passed_over_text(sides) -> str:
    """A verdict row's ``passed_over`` (``best.best_over_best``: per side, the configurations that did not learn) in
    words: 'CPU side: JAX on the CPU, b128, learning_rate=1000, faster (loss did not fall)'; '' when none."""
    return "; ".join(f"{d} side: " + "; ".join(f"{name(r, common)}{', faster' if faster else ''} ({r['learned_why']})"
                                               for r, common, faster in gone) for d, gone in (sides or []))


def configurations_text(gone) -> str:
    """A ``best.did_not_learn`` row's ``gone`` in words: each configuration named with its reason."""
    return "; ".join(f"{name(r, common)} ({r['learned_why']})" for r, common in (gone or []))


def copies_text(sides) -> str:
    """A verdict row's ``copy_runs`` (``best.best_over_best``: per side, a run's conflicting copies) in words:
    'GPU side: 1,200 samples/s (copy=a) or 950 samples/s (copy=the original)'; '' when none."""
    from helpers.record.reader import COPY
    from helpers.report.words.fmt import sps_shown

    return "; ".join(f"{d} side: " + " or ".join(f"{sps_shown(t)} samples/s ({COPY}={n if n else 'the original'})"
                                                for t, n in copies) for d, copies in (sides or []))


def with_texts(best):
    """The verdict's rows (``Context.best``) with their words: ``copies`` and ``not_learned`` ('' when none)."""
    out = best.copy()
    if len(out):
        out["copies"] = [copies_text(v) for v in out["copy_runs"]]
        out["not_learned"] = [passed_over_text(v) for v in out["passed_over"]]
    return out


def not_learned(summ) -> list[str]:
    """Every configuration of ``summ`` that did not learn, named with its workload: 'catsdogs: JAX on the GPU, b32'."""
    if summ is None or not len(summ) or "learned" not in summ:
        return []
    common = {wl: common_knobs(g["knobs"]) for wl, g in summ.groupby("workload")}
    return [f"{r['workload']}: {name(r, common.get(r['workload'], set()))}"
            for r in summ[summ["learned"] == NO].sort_values(["workload", "device"]).to_dict("records")]


def lines(summ) -> list[str]:
    """One line per workload: 'mlp_mnist: all 6 configurations learned (loss after epoch 3: 0.12–0.15)', or which
    did not and why, and how many were not checked."""
    if summ is None or not len(summ) or "learned" not in summ:
        return []
    out = []
    for wl, g in summ.groupby("workload", sort=True):
        yes, no, nc = (g[g["learned"] == v] for v in (YES, NO, NOT_CHECKED))
        losses = yes["loss_at"].dropna()
        epochs = sorted({int(e) for e in yes["loss_epoch"].dropna()})
        rng = (f" (loss after epoch {'/'.join(map(str, epochs))}: {_g(losses.min())}–{_g(losses.max())})"
               if len(losses) else "")
        n = len(g)
        if len(yes) == n:
            text = f"{wl}: all {n} configuration{'s' if n > 1 else ''} learned{rng}"
        else:
            text = f"{wl}: {len(yes)} of {n} configurations learned{rng}"
            if len(no):
                common = common_knobs(g["knobs"])
                text += f"; {MARK} did not learn: " + "; ".join(f"{name(r, common)} ({r['learned_why']})"
                                                               for r in no.to_dict("records"))
            if len(nc):
                whys = sorted(set(nc["learned_why"].astype(str)))
                text += f"; not checked: {len(nc)} ({'; '.join(whys)})"
        out.append(text + ".")
    return out


def batches(summ) -> list[str]:
    """Where a grid varies the batch size of one configuration at fixed data and epochs: each larger batch's loss
    against the smallest batch's at their last common epoch, and the share of the smallest batch's fall in loss
    (from its first epoch) the larger one gives up."""
    if summ is None or not len(summ) or "loss_curve_median" not in summ:
        return []
    s = summ[summ["learned"] != NO].copy()
    s["_model_knobs"] = s["knobs"].map(model_knobs)
    out = []
    for _, g in s.groupby([s[c].map(str) for c in BATCH_GROUP], sort=True):
        g = g[g["loss_curve_median"].map(bool)]
        if g["batch_size"].nunique() < 2:
            continue
        g = g.sort_values("batch_size")
        epoch = min(len(c) for c in g["loss_curve_median"])
        small = g.iloc[0]
        base, first = small["loss_curve_median"][epoch - 1], small["loss_curve_median"][0]
        said = []
        for r in g.iloc[1:].to_dict("records"):
            v = r["loss_curve_median"][epoch - 1]
            fall = first - base
            share = (v - base) / fall if fall > 0 else None
            said.append(f"b{int(r['batch_size'])} {_g(v)}" + ("" if share is None else
                        f" (gives up {max(share, 0) * 100:.0f}% of b{int(small['batch_size'])}'s fall in loss)"))
        out.append(f"{small['workload']}, {name({**small, 'batch_size': float('nan')}, common_knobs(g['knobs']))}: "
                   f"loss after epoch {epoch} at b{int(small['batch_size'])} {_g(base)}; " + ", ".join(said) + ".")
    return out
