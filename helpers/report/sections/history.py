"""Loss and accuracy per epoch: the latest run of each configuration."""

from __future__ import annotations

from .. import findings as said
from ..aggregate import labels
from ..charts import MAX_LINES, grid
from ..table import latest_ok
from .base import Section

TITLE = "Loss and accuracy per epoch"
NAV = "Loss and accuracy"  # its name in the one-line contents
LEAD = ("The latest run of each configuration (at most eight per workload). On synthetic data, accuracy only "
        "shows that the model learns; compare accuracies on real data only.")


def plot_history(df, records_by_path: dict):
    from matplotlib.ticker import MaxNLocator

    ok = latest_ok(df) if not df.empty else df
    ok = ok[ok["path"].isin(list(records_by_path))] if not ok.empty else ok
    workloads = sorted(ok["workload"].dropna().unique()) if not ok.empty else []
    if not workloads:
        return None
    fig, axes = grid(2 * len(workloads), [2.4] * (2 * len(workloads)), ncols=4)
    for i, wl in enumerate(workloads):
        a1, a2 = axes[2 * i], axes[2 * i + 1]
        sub = ok[ok["workload"] == wl].sort_values("started_at").tail(MAX_LINES)
        for lab, (_, r) in zip(labels(sub), sub.iterrows()):
            h = records_by_path[r["path"]].get("history")
            h = h if isinstance(h, dict) else {}
            loss, acc = h.get("loss") or [], h.get("accuracy") or h.get("acc") or []
            if isinstance(loss, list) and loss:
                a1.plot(range(1, len(loss) + 1), loss, marker=".", label=lab)
            if isinstance(acc, list) and acc:
                a2.plot(range(1, len(acc) + 1), acc, marker=".", label=lab)
        a1.set_title(f"{wl}: training loss")
        a2.set_title(f"{wl}: training accuracy")
        for a in (a1, a2):
            a.set_xlabel("epoch", fontsize=8)
            a.xaxis.set_major_locator(MaxNLocator(integer=True))
        if a2.get_legend_handles_labels()[0]:  # a workload without accuracy draws no curve there
            a2.legend(fontsize=5, loc="lower right")
    fig.tight_layout()
    return fig


def build(ctx) -> Section:
    fig = plot_history(ctx.df, ctx.by_path)
    if fig is None:
        return Section.absent(__name__, "no loss/accuracy history recorded.")
    return Section.of(__name__).found(*said.history(ctx.summary)).figure(fig)
