"""When the GPU pays off, in words: per workload (``per_workload``) and over all workloads in one sentence
(``overall``), from the rows of ``breakeven.add``."""

from __future__ import annotations

from helpers.report.derive.breakeven import FROM, HORIZON
from helpers.report.load.values import isnull
from helpers.report.words.fmt import row_marks
from helpers.report.words.headline import duration


def _plural(n: int, word: str = "epoch") -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def when_ahead(r) -> str:
    """'the GPU is ahead from the first epoch', '... ahead after 6 epochs (...)', '... never ahead within 100
    epochs', '... ahead for the first 3 epochs only, the CPU from epoch 4'; '' where a figure is unknown."""
    if any(isnull(r.get(k)) for k in ("compile_s_cpu", "epoch_s_cpu", "compile_s_gpu", "epoch_s_gpu")):
        return ""
    a, b = r.get("gpu_ahead_after"), r.get("gpu_behind_from")
    if isnull(a):
        return f"the GPU is never ahead within {HORIZON} epochs"
    if not isnull(b):
        return f"the GPU is ahead for the first {_plural(int(b) - 1)} only, the CPU from epoch {int(b)} on"
    if int(a) == 1:
        return "the GPU is ahead from the first epoch"
    return (f"the GPU is ahead after {_plural(int(a))} (its first epoch spends "
            f"{duration(r['compile_s_gpu'], row_marks(r, '_gpu'))} compiling, the CPU's "
            f"{duration(r['compile_s_cpu'], row_marks(r, '_cpu'))})")


def _one(r) -> str:
    """One workload's: 'cnn_cifar10: 10 epochs (the suite's default), the first (compiling) one included, take
    2.1 min on the CPU and 9.4 s on the GPU; the GPU is ahead from the first epoch.' ('' where a figure is
    unknown)."""
    when = when_ahead(r)
    if not when or isnull(r.get("planned_s_cpu")) or isnull(r.get("planned_s_gpu")):
        return ""
    n = int(r["epochs_planned"])
    return (f"{r['workload']}: {_plural(n)} ({FROM.get(r.get('planned_from'), '')}), the first (compiling) one "
            f"included, take {duration(r['planned_s_cpu'], row_marks(r, '_cpu'))} on the CPU and "
            f"{duration(r['planned_s_gpu'], row_marks(r, '_gpu'))} on the GPU; {when}.")


def per_workload(rows) -> list[str]:
    """``_one`` for each row of ``add``'s, by workload; the unknown ones left out."""
    if rows is None or not len(rows):
        return []
    return [t for t in (_one(r) for r in rows.sort_values("workload").to_dict("records")) if t]


def overall(rows) -> str:
    """All workloads in one sentence, from ``add``'s rows: 'Counting the first (compiling) epoch, the GPU is ahead
    from the first epoch on 7 of the 10 workloads, after 2 epochs on cnn_mnist, 5 on cnn_cifar10 ...' ('' for
    none known)."""
    known = [r for r in rows.sort_values("workload").to_dict("records") if when_ahead(r)] if len(rows) else []
    if not known:
        return ""
    first = [r for r in known if not isnull(r["gpu_ahead_after"]) and int(r["gpu_ahead_after"]) == 1
             and isnull(r["gpu_behind_from"])]
    later = sorted((r for r in known if not isnull(r["gpu_ahead_after"]) and int(r["gpu_ahead_after"]) > 1),
                   key=lambda r: int(r["gpu_ahead_after"]))
    never = [r["workload"] for r in known if isnull(r["gpu_ahead_after"])]
    lapse = [f"{r['workload']} (the first {_plural(int(r['gpu_behind_from']) - 1)} only)" for r in known
             if not isnull(r["gpu_behind_from"])]
    parts = [f"from the first epoch on {len(first)} of the {len(known)} workloads"] if first else []
    parts += [f"after {_plural(int(r['gpu_ahead_after']))} on {r['workload']}" if i == 0 else
              f"{int(r['gpu_ahead_after'])} on {r['workload']}" for i, r in enumerate(later)]
    if lapse:
        parts.append("early on " + ", ".join(lapse))
    text = "Counting the first (compiling) epoch, the GPU is ahead " + ", ".join(parts) if parts else \
        "Counting the first (compiling) epoch, the GPU is never ahead"
    if never:
        text += ("; " if parts else " ") + f"never within {HORIZON} epochs on " + ", ".join(never)
    return text + "."
