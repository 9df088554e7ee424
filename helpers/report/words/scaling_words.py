"""The scaling table in words: an input path (``path_words``), a way of driving the GPUs (``way_words``), an efficiency
and a range as shown (``eff_shown``, ``range_shown``), and the sentences of the scaling section (``findings``,
``answer``), from ``devices.device_scaling``'s table."""

from __future__ import annotations

from helpers.report.derive.devices import BN_PER_DEVICE, INPUTS, ONE_PROCESS, PER_GPU, way
from helpers.report.load.values import isnull
from helpers.report.words.fmt import marked, marks, num, rounded, union_marks

PLACED = {"host": " from the host", "device": ", data on the device", "staged": " staged on the GPUs"}


def path_words(inp, on, inputs: bool = True) -> str:
    """'uint8 inputs staged on the GPUs', 'float32 inputs from the host'; without ``inputs``: 'float32 from the
    host' (a table's cell)."""
    return f"{inp}{' inputs' if inputs else ''}" + PLACED.get(on, f", data_placement {on}")


def findings(table) -> list[str]:
    """One sentence per model (workload, backend, precision): its efficiency at the most devices it ran on, per
    input path (float32 / uint8; from the host, staged on the GPUs or on the device), with the range over the runs;
    where the devices were driven both ways, one process driving them and one process per GPU side by side."""
    out = []
    for (wl, be, prec), g in table.groupby(["workload", "backend", "precision"], sort=True):
        n = g["devices"].max()
        top = g[g["devices"] == n]
        ways = sorted(set(top["way"]), key=lambda w: (w != ONE_PROCESS, w))
        parts = []
        for inp, on in INPUTS:
            said = []
            for w in ways:
                r = top[(top["input"] == inp) & (top["data on"] == on) & (top["way"] == w)]
                if len(r) and not isnull(r["efficiency"].iloc[0]):
                    rng = r["efficiency over the runs"].iloc[0]
                    said.append((eff_shown(r["efficiency"].iloc[0]), way_words(w, n),
                                 f" ({range_shown(rng, eff_shown)} over {int(r['runs'].iloc[0])} run(s))"
                                 if rng and int(r["runs"].iloc[0] or 1) > 1 else ""))
            if len(said) == 1 and len(ways) == 1:
                parts.append(f"{said[0][0]} with {path_words(inp, on)}{said[0][2]}")
            elif said:
                parts.append(f"with {path_words(inp, on)} " + " against ".join(f"{e} {w}{r}" for e, w, r in said))
        if parts:
            out.append(f"{wl} ({be}, {prec}) on {n} GPUs: efficiency " + "; ".join(parts) + ".")
    return out


def answer(table) -> list[str]:
    """The scaling answer, one sentence per model and input path: its efficiency at every GPU count, per way
    ('resnet50 (jax, mixed_bfloat16), uint8 inputs staged on the GPUs: efficiency with one process per GPU 0.97 on
    2 GPUs, 0.95 on 4; with one process driving them 0.90 on 2, 0.85 on 4.'), the table's strings."""
    out = []
    for (wl, be, prec), g in table.groupby(["workload", "backend", "precision"], sort=True):
        for inp, on in INPUTS:
            h = g[(g["input"] == inp) & (g["data on"] == on) & (g["devices"] > 1) & g["efficiency"].notna()]
            ways = sorted(set(h["kind"]), key=lambda k: (k != PER_GPU, k))
            parts = []
            one = g[(g["input"] == inp) & (g["data on"] == on) & (g["devices"] == 1)]
            base = marks_of(one.iloc[0]) if len(one) else ""
            for k in ways:
                r = h[h["kind"] == k].sort_values("devices")
                # an efficiency derives from the N-GPU figure and the one-GPU figure: the marks of both
                ms = [marks_of(x) for x in r.to_dict("records")]
                figs = [marked(eff_shown(e), union_marks(m, base)) + f" on {int(n)}" + (" GPUs" if i == 0 else "")
                        for i, (e, n, m) in enumerate(zip(r["efficiency"], r["devices"], ms))]
                named = "one process driving them" if k == ONE_PROCESS else k
                parts.append(("" if len(ways) == 1 else f"with {named} ") + ", ".join(figs))
            if parts:
                out.append(f"{wl} ({be}, {prec}), {path_words(inp, on)}: efficiency " + "; ".join(parts)
                           + _no_faster(g[(g["input"] == inp) & (g["data on"] == on)]) + ".")
    return out


def _no_faster(g) -> str:
    """'; 2 GPUs slower than one (383 → 320 samples/s)', '; 2 GPUs no faster than one (...)': said in words where more
    GPUs did not beat one (within 5%), each figure as the table shows it; '' where they all did."""
    one = g[g["devices"] == 1]
    if not len(one):
        return ""
    base = one.iloc[0]
    said = []
    for r in g[g["devices"] > 1].sort_values("devices").to_dict("records"):
        ratio = r["samples/s"] / base["samples/s"]
        if ratio < 1.05:
            words = "slower than" if ratio < 0.95 else "no faster than"
            how = f" ({way_words(r['way'], int(r['devices']))})" if g["way"].nunique() > 1 else ""
            said.append(f"{int(r['devices'])} GPUs{how} {words} one "
                        f"({marked(rounded(base['samples/s'], int(base['digits'])), marks_of(base))} → "
                        f"{marked(rounded(r['samples/s'], int(r['digits'])), marks_of(r))} samples/s)")
    return "".join(f"; {t}" for t in dict.fromkeys(said))


def way_words(w: str, n: int) -> str:
    """A way (``devices.way``) on ``n`` GPUs in words: 'one GPU', 'one process driving 4 GPUs',
    'one process per GPU'."""
    bn = BN_PER_DEVICE if w.endswith(BN_PER_DEVICE) else ""
    w = w[:len(w) - len(bn)]
    if n <= 1:
        return "one GPU"
    if w == ONE_PROCESS:
        return f"one process driving {n} GPUs{bn}"
    return (PER_GPU if w == way(1, n) else w) + bn


def eff_shown(v) -> str:
    """An efficiency as the report shows it everywhere: '0.84'."""
    return "" if isnull(v) else f"{v:.2f}"


def range_shown(r, fmt=num) -> str:
    """A (low, high) over the runs: '0.77-0.92', '4,191-4,451'; '' for none or where both ends read alike."""
    if not r or isnull(r[0]):
        return ""
    lo, hi = fmt(r[0]), fmt(r[1])
    return "" if lo == hi else f"{lo}-{hi}"


def marks_of(r) -> str:
    """The marks of a row of the scaling table: its runs, window, host and whether it learned (``fmt.marks``)."""
    return marks(r.get("runs"), r.get("short_window"), r.get("host_busy"), r.get("learned"))
