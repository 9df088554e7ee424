"""What else differs between the two sides of a verdict besides the device: library versions, the machine, the
number of steps an epoch. A reader comparing "your CPU → the reference GPU" learns that the sides ran other
versions of Keras and the backends, and epochs of another length, before reading a speedup as the device's alone.

    said = differences(rows, df)       # one sentence, '' when the sides differ in the device only
"""

from __future__ import annotations

from helpers.report.load.values import isnull
from helpers.report.words.style import BACKEND_NAMES


def _versions(df, rows, d: str) -> dict[str, set]:
    """Per library (Keras, each backend used), the versions the runs of side ``d`` ran."""
    out: dict[str, set] = {}
    if not len(df) or "keras" not in df:
        return out
    ok = df[df["status"] == "ok"]
    for r in rows.to_dict("records"):
        g = ok[(ok["workload"] == r["workload"]) & (ok["device"] == d) & (ok["backend"] == r[f"backend_{d}"])
               & (ok["machine"] == r[f"machine_{d}"])]
        for lib, col in (("Keras", "keras"), (r[f"backend_{d}"], "backend_version")):
            vals = {str(v) for v in g[col].dropna() if str(v) not in ("", "None", "nan")}
            out.setdefault(lib, set()).update(vals)
    return out


def _span(values) -> str:
    v = sorted({int(x) for x in values if not isnull(x)})
    return "" if not v else f"{v[0]:,}" if v[0] == v[-1] else f"{v[0]:,}–{v[-1]:,}"


def differences(rows, df) -> str:
    """The verdict's sides compared in what is not the device: '' where they agree (versions, steps an epoch)."""
    if rows is None or not len(rows):
        return ""
    parts = []
    cpu, gpu = _versions(df, rows, "cpu"), _versions(df, rows, "gpu")
    libs = [lib for lib in sorted(set(cpu) & set(gpu)) if cpu[lib] and gpu[lib] and cpu[lib] != gpu[lib]]
    if libs:
        parts.append("library versions (" + "; ".join(
            f"{BACKEND_NAMES.get(lib, lib)} {', '.join(sorted(cpu[lib]))} on the CPU side, "
            f"{', '.join(sorted(gpu[lib]))} on the GPU side" for lib in libs) + ")")
    sc, sg = _span(rows.get("steps_per_epoch_cpu", [])), _span(rows.get("steps_per_epoch_gpu", []))
    if sc and sg and sc != sg:
        parts.append(f"epochs of {sc} steps on the CPU side against {sg} on the GPU side (the figures are per "
                     "sample; an epoch's fixed costs weigh more in an epoch of few steps)")
    machines = {str(m) for m in rows["machine_cpu"]} != {str(m) for m in rows.get("gpu_machine", rows["machine_gpu"])}
    if not parts:
        return ""
    where = "two machines" if machines else "one machine"
    return f"Besides the device, the sides ({where}) differ in " + " and in ".join(parts) + "."
