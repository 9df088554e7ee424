"""The bundled reference GPU, for a report whose own records have no GPU run (a laptop, a CPU VM).

    ref, label = reference_rows(df)      # the reference's GPU configurations your CPU configurations have
    pairs = all_pairs(summary)           # matched pairs, plus your CPU -> reference GPU pairs

The suite ships the records of a published GPU run (``reference/<name>/records``, e.g. one H100). When a
report's own records hold no successful GPU point, ``build_context`` adds the reference's GPU
configurations that match the report's own CPU configurations (same workload, backend, batch size,
precision, compilation and model knobs; the data loader's worker count and the number of samples per
epoch may differ: everything is compared per sample) under a machine name that says where they come
from, ``reference H100 <date>: <hardware>``. Pairs between your CPU and the reference GPU are matched
configurations on two machines: the speedup reads "your CPU → reference H100".

The bundled reference is told by its files alone: rows read from under the suite's own ``reference/`` folder
(``helpers.paths.PROJECT_ROOT``), the names ``reference_rows`` gave them (``is_reference``). A record's name never
makes it: one that reads like the reference's is quoted as a record's name (``labels.hardware_name``).
"""

from __future__ import annotations

from pathlib import Path

from helpers.paths import PROJECT_ROOT
from helpers.report.load import table

REFERENCE_ROOT = PROJECT_ROOT / "reference"
PREFIX = "reference "  # machine names of reference rows start with this
# what must be equal for your CPU configuration and a reference GPU one to pair (workers and n_train may differ)
MATCH = ["workload", "backend", "precision", "jit_compile", "batch_size", "augment", "knobs"]


def reference_folders(root: Path | None = None) -> list[Path]:
    """Every bundled reference's records folder (``reference/<name>/records``)."""
    root = Path(root) if root is not None else REFERENCE_ROOT
    return sorted(p for p in root.glob("*/records") if p.is_dir())


def has_own_gpu(df) -> bool:
    return bool(((df["status"] == "ok") & (df["device"] == "gpu")).any()) if len(df) else False




def bundled(path) -> bool:
    """Whether a record file lies under the suite's own reference folder (``REFERENCE_ROOT``), links resolved."""
    try:
        return Path(str(path)).resolve().is_relative_to(REFERENCE_ROOT.resolve())
    except (OSError, ValueError, RuntimeError):
        return False


def match_key(df):
    """A row's ``MATCH`` values as one string: what a CPU configuration and a reference GPU one must share."""
    return df[MATCH].apply(lambda col: col.map(str)).agg("|".join, axis=1)


_TABLES: dict = {}  # a reference folder's table, read once a process while its files stay as they are


def reference_table(folder):
    """The tidy table of a reference folder (``table.load_table``), kept while none of its files changes: a process
    that builds several reports (a notebook re-run, the tests) reads the bundled records once."""
    folder = Path(folder)
    try:
        files = sorted(folder.rglob("*.json"))
        sig = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    except OSError:  # a folder that moves while read: read it, keep nothing
        return table.load_table([folder])[0]
    name = str(folder.resolve())
    if name not in _TABLES or _TABLES[name][0] != sig:
        _TABLES[name] = (sig, table.load_table([folder])[0])
    return _TABLES[name][1].copy()


def reference_rows(df, folders: list[Path] | None = None):
    """(rows, labels): the reference's successful GPU records whose configuration one of ``df``'s successful
    CPU configurations has (and, for a workload and backend with no such configuration, its float32 one at
    the nearest batch size: shown, never paired), their ``machine`` renamed ``reference <NAME> <date>:
    <hardware>``; ``labels`` lists those names. Empty when ``df`` has no CPU configuration or nothing matches.
    Only records under the suite's reference folder (``bundled``) are taken: a folder given elsewhere adds none."""
    import pandas as pd

    folders = reference_folders() if folders is None else folders
    own_cpu = df[(df["status"] == "ok") & (df["device"] == "cpu")] if len(df) else df
    if not len(own_cpu) or not folders:
        return df.iloc[0:0], []
    wanted = set(match_key(own_cpu))
    parts, labels = [], []
    for folder in folders:
        ref = reference_table(folder)
        if not len(ref):
            continue
        ref = ref[(ref["status"] == "ok") & (ref["device"] == "gpu") & ref["path"].map(bundled)]  # the suite's files
        if not len(ref):
            continue
        matched = ref[match_key(ref).isin(wanted)]
        # a workload and backend your CPU ran at a configuration the reference lacks: the reference's float32
        # configuration at the nearest batch size, shown (never paired: "no matched pair", "not matched")
        done = set(zip(matched["workload"], matched["backend"]))
        near = []
        for (wl, be), c in own_cpu.groupby(["workload", "backend"], sort=True):
            if (wl, be) in done:
                continue
            cand = ref[(ref["workload"] == wl) & (ref["backend"] == be) & (ref["precision"] == "float32")
                       & (ref["jit_compile"].map(str) == "auto")]
            if len(cand):
                gap = (cand["batch_size"] - c["batch_size"].median()).abs()
                near.append(cand[gap == gap.min()])
        ref = pd.concat([matched, *near], ignore_index=True)
        if not len(ref):
            continue
        name = Path(folder).parent.name.upper()
        date = str(ref["started_at"].dropna().max())[:10]
        ref = ref.copy()
        ref["machine"] = f"{PREFIX}{name} {date}: " + ref["machine"].astype(str)
        BUNDLED.update(ref["machine"])
        labels.extend(sorted(set(ref["machine"])))
        parts.append(ref)
    if not parts:
        return df.iloc[0:0], []
    return pd.concat(parts, ignore_index=True), labels


BUNDLED: set = set()  # the machine names reference.reference_rows gave rows it read from the suite's own reference/


def is_reference(machine) -> bool:
    """Whether ``machine`` names rows of the bundled reference: a name ``reference_rows`` gave rows it read from the
    suite's own files (``BUNDLED``), never one a record carries (those read as records' names: ``hardware_name``)."""
    return isinstance(machine, str) and machine in BUNDLED
