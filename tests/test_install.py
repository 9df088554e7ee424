"""An install without ``-e`` works from outside the checkout.

The working tree (what git tracks or would track) is copied to a temporary folder, made into an sdist there (the
PEP 517 hook, as ``python -m build`` does) and installed from that with ``pip install --no-deps --no-build-isolation
--target`` (offline: the venv's setuptools builds the wheel). The sdist's wheel holds no more than one built from the
tree itself, so what it must hold, the tree's wheel holds too; the copy keeps ``build/`` and ``*.egg-info`` out of the
checkout, and a stale ``build/lib`` out of the wheel. Then, from a working directory outside the checkout with only
the target on ``PYTHONPATH``: the installed package is the one imported, its resources are the shipped ones,
``--validate-only`` checks the shipped quick grid, and ``--report-only`` renders a report over three CPU records,
paired with the shipped reference GPU records, through the shipped summary notebook in a real kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.paths import PROJECT_ROOT

WORKLOAD = "mlp_mnist"
PIP = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir",
       "--disable-pip-version-check", "--quiet"]
# what the installed package reads from the suite's folders (pyproject.toml's package-data for helpers._suite)
SHIPPED = ["notebooks/*.ipynb", "params/*.yaml", "data/*.csv", "reference/*/records/*.json",
           "reference/*/records/bare_loops.jsonl"]
PROBE = """
import json, sys
import helpers, helpers.paths as p
import helpers.report.load.reference, helpers.runner.cli  # noqa: F401 - their module-level paths, every import
mods = {n: getattr(m, "__file__", None) for n, m in sys.modules.items() if n == "helpers" or n.startswith("helpers.")}
print(json.dumps({"file": helpers.__file__, "installed": p.INSTALLED, "root": str(p.PROJECT_ROOT),
                  "reference": str(helpers.report.load.reference.REFERENCE_ROOT), "outputs": str(p.outputs_dir()),
                  "path": sys.path, "modules": mods}))
"""


def _source_files(root: Path) -> list[str]:
    """The working tree's files as a commit would hold them (tracked, or untracked and not ignored)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [f for f in out.split("\0") if f and (root / f).is_file()]


def _copy_tree(root: Path, dest: Path) -> None:
    for f in _source_files(root):
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, dest / f)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _env(target: Path, cwd: Path, outputs: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CGB_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONPATH=str(target), PWD=str(cwd))
    if outputs is not None:
        env["CGB_OUTPUTS"] = str(outputs)
    return env


def _python(args: list[str], target: Path, cwd: Path, outputs: Path | None = None, timeout: int = 120):
    res = subprocess.run([sys.executable, *args], cwd=cwd, env=_env(target, cwd, outputs), capture_output=True,
                         text=True, timeout=timeout)
    assert "Traceback" not in res.stdout + res.stderr, res.stdout + res.stderr
    return res


def test_install_without_e_runs_from_outside_the_checkout(tmp_path):
    checkout = PROJECT_ROOT.resolve()
    src, target, work = tmp_path / "src", tmp_path / "site", tmp_path / "work"
    work.mkdir()
    _copy_tree(checkout, src)
    sdist = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; print(build_meta.build_sdist("
                            f"{str(tmp_path / 'dist')!r}))"], cwd=src, capture_output=True, text=True, timeout=300)
    assert sdist.returncode == 0, sdist.stdout + sdist.stderr
    res = subprocess.run([*PIP, "--target", str(target), str(tmp_path / "dist" / sdist.stdout.split()[-1])],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr

    # what was installed: every module of helpers/ and its other files, the suite's resources under helpers/_suite/,
    # nothing else at the top (no notebooks/ or data/ beside the package), no reference report or nested folder
    top = {p.name for p in target.iterdir()}
    assert {n for n in top if not n.endswith(".dist-info")} == {"helpers"}, top
    wanted = {f for f in _files(src / "helpers") if not f.startswith("_suite/")}
    shipped = _files(target / "helpers")
    assert wanted <= shipped, sorted(wanted - shipped)
    suite = {f.removeprefix("_suite/") for f in shipped if f.startswith("_suite/")}
    assert suite == {p.relative_to(src).as_posix() for g in SHIPPED for p in src.glob(g)}
    assert {"params/quick.yaml", "params/prices.yaml", "notebooks/summary.ipynb", "data/published_figures.csv"} <= suite
    assert any(f.startswith("reference/h100/records/") for f in suite)
    assert {"report/publish/templates/inert/index.html.j2", "report/publish/templates/inert/conf.json"} <= shipped
    before = _files(target)

    # the installed copy is the one imported, its resources and its outputs are not the checkout's
    outputs = tmp_path / "outputs"
    probe = _python(["-c", PROBE], target, work, outputs)
    assert probe.returncode == 0, probe.stderr
    got = json.loads(probe.stdout)
    root = target.resolve() / "helpers" / "_suite"
    assert Path(got["file"]).is_relative_to(target.resolve()), got["file"]
    assert got["installed"] and Path(got["root"]) == root and Path(got["reference"]) == root / "reference"
    assert Path(got["outputs"]) == outputs.resolve()
    venv = Path(sys.prefix).resolve()  # the venv may live in the checkout: its site-packages is no source of helpers
    # (entries that are no path, such as an editable install's path-hook marker, name no folder: left out)
    ours = [p for p in got["path"] if p and Path(p).is_absolute() and Path(p).resolve().is_relative_to(checkout)
            and not Path(p).resolve().is_relative_to(venv)]
    assert not ours, got["path"]
    assert all(f is None or Path(f).is_relative_to(target.resolve()) for f in got["modules"].values()), got["modules"]
    # without CGB_OUTPUTS: ./outputs of the working directory; in a kernel (its cwd the shipped notebooks/), the
    # shell's ($PWD)
    for cwd in (work, root / "notebooks"):
        res = subprocess.run([sys.executable, "-c", "from helpers.paths import outputs_dir; print(outputs_dir())"],
                             cwd=cwd, env=_env(target, work, None), capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and Path(res.stdout.strip()) == work.resolve() / "outputs", res.stdout + res.stderr

    res = _python(["-m", "helpers.runner", "--validate-only", str(root / "params" / "quick.yaml")], target, work,
                  outputs)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "points valid" in res.stdout, res.stdout

    # a report over three CPU records: the shipped summary notebook, the shipped reference GPU beside them
    inputs = tmp_path / "records"
    inputs.mkdir()
    records = sorted((checkout / "reference" / "h100" / "records").glob(f"{WORKLOAD}-*-cpu-*.json"))
    records = [next(r for r in records if f"-{b}-cpu-" in r.name) for b in ("jax", "tensorflow", "torch")]
    for r in records:
        shutil.copy(r, inputs / r.name)
    res = _python(["-m", "helpers.runner", "--report-only", "--inputs", str(inputs)], target, work, outputs,
                  timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    html = outputs / "report.html"
    assert html.is_file(), res.stdout + res.stderr
    text = html.read_text(encoding="utf-8")
    assert WORKLOAD in text
    assert "reference H100" in text  # the bundled reference records were found in the installed copy
    assert not (work / "outputs").exists()
    assert _files(target) == before  # nothing written into the installed package
