"""The report's one palette: one colour per backend, one mark per device, the same in every chart.

    ax.barh(y, values, **bars_look(sub["backend"], sub["device"]))   # solid GPU bars, pale outlined CPU bars
    ax.errorbar(x, y, **point_look("jax", "cpu"))                    # open circle (CPU) in JAX's colour
    key_above(fig, ax, style_key(frame))                             # the key: backends, then each device's machine

A configuration is drawn in its backend's colour (``BACKEND_COLOURS``: JAX blue, TensorFlow green, PyTorch orange,
from Okabe and Ito's palette, told apart with any colour vision) and its device's mark: a GPU bar solid, a CPU bar
pale with an outline in the backend's colour; a GPU point a filled square, a CPU point an open circle. Hatching stays
free for the figures' marks (one run, short window: sections.base.mark_bars). Colours that are not a backend's
(``PALETTE``: published figures, the first epoch, utilisation lines, the parts of a step) are none of the three.
"""

from __future__ import annotations

from helpers.report.load.values import isnull

# one colour per backend (Okabe & Ito's palette: told apart with any colour vision), in the key's order
BACKEND_COLOURS = {"jax": "#0072B2", "tensorflow": "#009E73", "torch": "#E69F00"}
BACKEND_NAMES = {"jax": "JAX", "tensorflow": "TensorFlow", "torch": "PyTorch"}  # the one map of backend names
BACKEND_SHORT = {**BACKEND_NAMES, "tensorflow": "TF"}  # where a sentence names both sides of a pair
# one mark per device: points (filled square: GPU, open circle: CPU) and bars (solid: GPU, pale and outlined: CPU)
DEVICE_MARKERS = {"cpu": "o", "gpu": "s"}
DEVICE_NAMES = {"cpu": "CPU", "gpu": "GPU"}
PALE = 0.28  # a CPU bar's fill: this share of its backend's colour over white
NEUTRAL = "#555555"  # the key's device swatches: the mark without a backend's colour
# colours that are no backend's
PALETTE = {"published": "#aaaaaa", "other": "#7f7f7f", "first": "#CC79A7", "base": "#222222", "ratio": "#333333",
           "util_cpu": "#555555", "util_gpu": "#8c564b", "memory": "#9467bd", "power": "#17becf",
           "device_busy": "#882255", "copies": "#DDCC77", "host_only": "#BBBBBB"}  # the last three: a step's parts


def backend_colour(backend) -> str:
    return BACKEND_COLOURS.get(str(backend), PALETTE["other"])


def backend_name(backend) -> str:
    """A backend's name in full, as charts' keys write it: 'TensorFlow', 'JAX', 'PyTorch'."""
    return BACKEND_NAMES.get(str(backend), str(backend))


def backend_short(backend) -> str:
    """A backend's short name, as tables and sentences write it: 'TF', 'JAX', 'torch'."""
    return BACKEND_SHORT.get(str(backend), str(backend))


def device_marker(device) -> str:
    return DEVICE_MARKERS.get(str(device), "^")


def pale(colour: str, share: float = PALE) -> str:
    """``colour`` (#rrggbb) at ``share`` over white."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 - share * (255 - c)):02x}" for c in rgb)


def dark(colour: str, share: float = 0.4) -> str:
    """``colour`` (#rrggbb) ``share`` of the way to black: a second line of the same backend, still its hue."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round((1 - share) * c):02x}" for c in rgb)


def bar_look(backend, device, colour: str | None = None) -> dict:
    """A bar's face, edge and edge width: its backend's colour (or ``colour``), solid on the GPU, pale with an
    outline on the CPU (a hatch is drawn in the edge's colour: white on a solid bar, the colour on a pale one)."""
    c = colour or backend_colour(backend)
    if str(device) == "cpu":
        return {"facecolor": pale(c), "edgecolor": c, "linewidth": 1.0}
    return {"facecolor": c, "edgecolor": "white", "linewidth": 0.5}


def bars_look(backends, devices, colour: str | None = None) -> dict:
    """``bar_look`` of each bar, as the lists ``Axes.bar``/``barh`` take (``color``, ``edgecolor``, ``linewidth``)."""
    looks = [bar_look(b, d, colour) for b, d in zip(backends, devices)]
    return {"color": [x["facecolor"] for x in looks], "edgecolor": [x["edgecolor"] for x in looks],
            "linewidth": [x["linewidth"] for x in looks]}


def point_look(backend, device, colour: str | None = None) -> dict:
    """A line's or point's colour and marker (``plot``/``errorbar`` keywords): filled square on the GPU, open
    circle on the CPU, in its backend's colour (or ``colour``)."""
    c = colour or backend_colour(backend)
    return {"color": c, "marker": device_marker(device), "markeredgecolor": c, "markeredgewidth": 1.2,
            "markerfacecolor": "white" if str(device) == "cpu" else c}


def scatter_look(backend, device, colour: str | None = None) -> dict:
    """``point_look`` as ``Axes.scatter`` takes it."""
    c = colour or backend_colour(backend)
    return {"marker": device_marker(device), "edgecolors": c, "linewidths": 1.2,
            "facecolors": "white" if str(device) == "cpu" else c}


def key_handles(backends=(), devices=(), kind: str = "bar", device_text: dict | None = None,
                extra: list | None = None) -> list:
    """The key of a chart: each backend drawn (its colour), then each device (its mark, in grey; ``device_text``
    names its machine), then ``extra`` handles. ``kind``: "bar" (solid / pale swatches) or "point" (square /
    circle)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    present = {str(b) for b in backends if not isnull(b)}
    out = [Patch(facecolor=backend_colour(b), edgecolor=backend_colour(b), label=backend_name(b))
           for b in [*BACKEND_COLOURS, *sorted(present - set(BACKEND_COLOURS))] if b in present]
    for d in [d for d in ("gpu", "cpu") if d in {str(x) for x in devices}]:
        text = (device_text or {}).get(d) or DEVICE_NAMES[d]
        if kind == "bar":
            out.append(Patch(**bar_look(None, d, NEUTRAL), label=text))
        else:
            out.append(Line2D([], [], ls="", ms=6, label=text, **{k: v for k, v in point_look(None, d, NEUTRAL).items()
                                                                   if k != "color"}))
    return out + list(extra or [])


def _text_pt(handles, fontsize: float = 8.0) -> float:
    """About how wide a one-row legend of ``handles`` is, in points (DejaVu Sans: 0.6 em a character, 4.8 em
    of handle and spacing an entry)."""
    return sum(0.6 * fontsize * len(h.get_label()) + 4.8 * fontsize for h in handles)


def key_above(fig, ax, handles, fontsize: float = 8.0, width: float | None = None):
    """``handles`` above the figure (placed from ``ax``, so that ``fig.legends`` stay free for a key under it):
    one row when it fits the figure's width, else the backends in one row with the devices stacked beside them
    (two legends), else one column."""
    if not handles:
        return
    from matplotlib.patches import Patch

    w = (width or fig.get_figwidth()) * 72 * 0.95
    kw = {"bbox_transform": fig.transFigure, "fontsize": fontsize, "frameon": False}
    if _text_pt(handles, fontsize) <= w:
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=len(handles), **kw)
        return
    colours = [h for h in handles if isinstance(h, Patch) and h.get_label() in BACKEND_NAMES.values()]
    rest = [h for h in handles if h not in colours]
    widest = max((_text_pt([h], fontsize) for h in rest), default=0)
    if colours and rest and _text_pt(colours, fontsize) + widest <= w:
        first = ax.legend(handles=rest, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=1, **kw)
        ax.add_artist(first)
        first.set_clip_on(False)  # unclipped: a saved figure's tight box holds it (add_artist clips to the axes)
        ax.legend(handles=colours, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=len(colours), **kw)
        return
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=1, **kw)


def column(frame, name: str) -> list:
    return list(frame[name]) if name in frame else [None] * len(frame)


def machines(frame) -> dict:
    """device -> its machine's name, when each device drawn in ``frame`` ran on one machine ({} otherwise: the
    bars' labels then name the machines)."""
    if "device" not in frame or "machine" not in frame:
        return {}
    out = {}
    for d, sub in frame.groupby("device", sort=True):
        names = sub["machine"].dropna().astype(str).str.split(" (", regex=False).str[0].unique()
        if len(names) != 1:
            return {}
        out[str(d)] = names[0]
    return out


def style_key(frame, kind: str = "bar", extra: list | None = None) -> list:
    """The key of a chart of ``frame``'s configurations: the backends drawn, each device's mark with its machine
    ('GPU: reference H100 2026-11-25: NVIDIA H100 80GB HBM3 · 16 CPUs'), named once instead of in every label."""
    on = machines(frame)
    return key_handles(column(frame, "backend"), column(frame, "device"), kind,
                       {d: f"{DEVICE_NAMES.get(d, d)}: {m}" for d, m in on.items()}, extra)
