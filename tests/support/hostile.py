"""The hostile record set of files that once crashed, stalled or fooled the report, each with the reason
the reader must give for leaving it out.

    expected = write_hostile(folder, template, outside)   # {file name: part of the reason it is skipped with}
    write_hostile_notebook(path)                            # widget state, mermaid, a remote image, scripts

``template`` is a good record (a dict); every hostile record is a copy of it with one thing changed, and an id of
its own (so none is a duplicate of another). ``outside`` is a folder that is *not* given to the report: a record
there is reached only through a symlink. Used by tests/test_hostile.py and benchmarks/studies/report_render.py
(--hostile).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

SECRET_HOST = "SECRET-HOST-OUTSIDE"  # the host of the record reached through a symlink: must never be shown


def _variant(template: dict, k: int, change) -> dict:
    rec = copy.deepcopy(template)
    rec.pop("_path", None)
    rec["point_id"] = f"hostile{k:03d}"
    rec["started_at"] = f"2026-02-01T00:00:{k % 60:02d}+00:00"
    rec["notebook"] = None
    rec["fixture"] = True
    change(rec)
    return rec


def _set(path: str, value):
    def change(rec):
        node, keys = rec, path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return change


def _params_n(n: int):
    return lambda rec: rec["params"].update({f"knob_{i}": i for i in range(n)})


# name: (change, part of the reason)
CASES = {
    "int_1e400.json": (_set("median_epoch_s", 10**400), "beyond ±2**53"),
    "int_nested.json": (_set("utilisation.gpu_pct_mean", -(10**400)), "beyond ±2**53"),
    "int_5000_digits.json": (None, "not valid JSON"),  # written by hand: json.loads refuses it
    "input_bytes_str.json": (_set("input_bytes_per_step", "12"), "'input_bytes_per_step'"),
    "input_bytes_list.json": (_set("input_bytes_per_step", [1, 2]), "'input_bytes_per_step'"),
    "input_bytes_map.json": (_set("input_bytes_per_step", {"a": 1}), "'input_bytes_per_step'"),
    "gpus_float.json": (_set("params.gpus", 1.5), "'params.gpus'"),
    "hosts_str.json": (_set("params.hosts", "2"), "'params.hosts'"),
    "params_nested.json": (_set("params.augment", {"a": 1}), "'params.augment'"),
    "workload_100k.json": (_set("workload", "w" * 100_000), "a string longer than 16,384"),
    "workload_300.json": (_set("workload", "w" * 300), "'workload'"),
    "host_5000.json": (_set("fingerprint.host", "h" * 5000), "'fingerprint.host'"),
    "gpu_name_long.json": (_set("fingerprint.gpu_names", ["g" * 1000]), "'fingerprint.gpu_names'"),
    "params_20000.json": (_params_n(20_000), "more than 512 keys"),
    "params_200.json": (_params_n(200), "'params' has more than 128 keys"),
    "knobs_long.json": (lambda r: r["params"].update({f"k{i}": "v" * 200 for i in range(8)}), "knobs longer than"),
    "history_100_curves.json": (lambda r: r.update(history={f"c{i}": [1.0] for i in range(100)}),
                                "more than 64 curves"),
    "values_120k.json": (_set("utilisation_timeline", [dict.fromkeys("tuvwxyz", 1.0)] * 15_000),
                         "more than 100,000 values"),
    "list_50k.json": (_set("epoch_s", [1.0] * 50_000), "a list of more than 20,000 items"),
    "record_16mb.json": (None, "larger than"),
    "symlink_outside.json": (None, "outside the folders given"),
}


def write_hostile(folder: Path, template: dict, outside: Path) -> dict[str, str]:
    """Write the hostile set into ``folder`` (and the symlink's target into ``outside``); {name: reason part}."""
    folder, outside = Path(folder), Path(outside)
    folder.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    for k, (name, (change, _)) in enumerate(CASES.items()):
        if change is not None:
            (folder / name).write_text(json.dumps(_variant(template, k, change)))
    base = _variant(template, 900, lambda r: None)
    text = json.dumps(base)
    (folder / "int_5000_digits.json").write_text(text[:-1] + ', "big": ' + "9" * 5000 + "}")
    with open(folder / "record_16mb.json", "w") as f:  # the reviewer's 7-16 MB records
        f.write(text[:-1] + ', "padding": [')
        f.write(",".join(["1.5"] * 4_000_000))
        f.write("]}")
    secret = _variant(template, 901, _set("fingerprint.host", SECRET_HOST))
    (outside / "secret.json").write_text(json.dumps(secret))
    (folder / "symlink_outside.json").symlink_to(outside / "secret.json")
    return {name: why for name, (_, why) in CASES.items()}


def write_conflict(real_folder: Path, forged_folder: Path, template: dict) -> tuple[dict, dict]:
    """A run's record in ``real_folder`` and a forged copy of it (the same run, 10x faster) in ``forged_folder``,
    both as ``conflict.json``: (real, forged). Which is true is not the reader's guess: both are kept, apart
    (they are not in the hostile set, whose files are all left out)."""
    real = _variant(template, 902, lambda r: None)
    forged = copy.deepcopy(real)
    for key, f in (("median_epoch_s", 0.1), ("step_s", 0.1), ("samples_per_s", 10.0)):
        if isinstance(forged.get(key), (int, float)):
            forged[key] = forged[key] * f
    for folder, rec in ((real_folder, real), (forged_folder, forged)):
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "conflict.json").write_text(json.dumps(rec))
    return real, forged


def write_hostile_notebook(path: Path, marker: str = "") -> Path:
    """A notebook that made nbconvert's page fetch from CDNs: widget state (the html-manager loader), a mermaid
    block (mermaid and elk), plus a remote image, a script, and a JavaScript output."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# run {marker}\n```mermaid\ngraph TD; A-->B\n```\n"
                                      '<img src="https://example.com/pixel.png"><script>document.title="pwned"</script>'),
        nbformat.v4.new_code_cell("w", outputs=[
            nbformat.v4.new_output("display_data", data={
                "application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2,
                                                             "version_minor": 0},
                "text/plain": "IntSlider()"}),
            nbformat.v4.new_output("display_data", data={"application/javascript": "document.title='pwned-js'"}),
            nbformat.v4.new_output("stream", name="stdout", text=f"marker {marker}\n")])])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {"m1": {"model_name": "IntSliderModel", "model_module": "@jupyter-widgets/controls",
                         "model_module_version": "2.0.0", "state": {"value": 3}}},
        "version_major": 2, "version_minor": 0}}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path
