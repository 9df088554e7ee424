"""What a figure rests on, in words: its runs, leases, epochs and window, and the marks that warn (``precision_marks``);
which side of a pair was measured on a busy host (``busy_sides``)."""

from __future__ import annotations

from helpers.report.derive.protocol import MIN_STEPS, is_busy
from helpers.report.load.values import isnull
from helpers.report.words import fmt

HOST_BUSY = "host busy"  # the mark of a figure measured while another process used the cores


def busy_sides(r) -> str:
    """'host busy (CPU side)', '... (GPU side)', '... (both sides)' for a row with ``host_busy_cpu``/``_gpu`` (a
    matched pair, a verdict row): a side whose figure rests on host-busy runs only; '' where neither does."""
    sides = [d.upper() for d in ("cpu", "gpu") if is_busy(r.get(f"host_busy_{d}"))]
    if not sides:
        return ""
    return f"{HOST_BUSY} ({'both sides' if len(sides) == 2 else sides[0] + ' side'})"


def precision_marks(r) -> str:
    """What a figure rests on, for tables: runs, leases, epochs, window, and warnings (one run, few steps)."""
    n, lease = int(r["n_runs"]), f", {int(r['n_leases'])} lease(s)" if r.get("n_leases") else ""
    marks = [f"{n} run{'s' if n != 1 else ''}{lease}, {int(r['n_epochs'])} epochs"]
    if not isnull(r.get("steady_s")):
        marks[0] += f", {fmt.num(r['steady_s'], 2)} s timed per run (median)"
    if r.get("short_window"):
        marks.append(f"{fmt.SHORT} window under {r['min_steady_s']:g} s")
    if n == 1:
        marks.append(f"{fmt.ONE_RUN} one run: no between-run spread")
    if r.get("few_steps"):
        marks.append(f"< {MIN_STEPS} steps/epoch")
    if is_busy(r.get("host_busy")):
        marks.append(f"{HOST_BUSY}: every run measured while another process used its cores")
    if not isnull(r.get("n_host_busy")) and r["n_host_busy"] > 0:
        marks.append(f"{int(r['n_host_busy'])} {HOST_BUSY} run(s) left out")
    if not isnull(r.get("shared_host")) and r["shared_host"] > 0:
        marks.append(f"host shared: up to {int(r['shared_host'])} other runner(s) busy when a run started")
    return "; ".join(marks)
