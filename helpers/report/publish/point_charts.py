"""The plots a workload notebook shows for its own run: epoch times and loss/accuracy per epoch.

    from helpers.report import plot_point
    plot_point(record)
"""

from __future__ import annotations

from helpers.report.words.style import PALETTE, bar_look


def plot_point(record: dict):
    """Epoch times (first epoch apart) and the loss/accuracy curves of one record."""
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
    first = record.get("first_epoch_s")
    times = ([first] if first is not None else []) + list(record.get("epoch_s") or [])
    if times:
        steady = len(record.get("epoch_s") or [])
        look = bar_look(record.get("backend"), record.get("device_used"))  # its backend's colour, its device's mark
        first_look = {"facecolor": PALETTE["first"], "edgecolor": "white", "linewidth": 0.5}
        looks = ([first_look] if first is not None else []) + [look] * steady
        a1.bar(range(1, len(times) + 1), times, color=[x["facecolor"] for x in looks],
               edgecolor=[x["edgecolor"] for x in looks], linewidth=[x["linewidth"] for x in looks])
        a1.set_xlabel("epoch (pink: first epoch, includes compilation)")
        a1.set_ylabel(f"seconds (training, {record.get('n_train')} samples)")
    else:
        a1.text(0.5, 0.5, "no epochs timed", ha="center")
    a1.set_title(f"{record.get('workload')} · {record.get('backend')} · {record.get('device_used')}")
    hist = record.get("history") or {}
    for key, values in hist.items():
        if key.endswith("loss") or key.endswith("accuracy"):
            a2.plot(range(1, len(values) + 1), values, marker="o", label=key)
    a2.set_xlabel("epoch")
    a2.legend(fontsize=8)
    a2.set_title(f"loss / accuracy (data: {record.get('data_source')})")
    fig.tight_layout()
    return fig
