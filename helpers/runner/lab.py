"""JupyterLab on the suite's notebooks: what ``./run_all.sh lab [jupyter lab options]`` runs
(the runner's verb ``lab``, ``helpers.runner.cli``).

    python -m helpers.runner.lab [--no-browser] [--port 8899] [any other `jupyter lab` option]

Starts JupyterLab in this process (the suite's venv Python, or the current Python after
``--current-python``) with ``notebooks/`` as its root. JupyterLab prints its URL (port and token) as it
always does; the options given are passed on after the suite's own, so they win (``--port``,
``--no-browser``, ``--ServerApp.root_dir=...``, ``--IdentityProvider.token=...``).

A notebook opened there gets a kernel that runs this Python through ``helpers.runner.kernel`` (as
the runner's points do: inherited thread variables cleared, an empty IPython profile) with ``helpers``
importable from this checkout: see ``install_lab_kernel``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from helpers.exits import Exit
from helpers.paths import NOTEBOOKS, outputs_dir
from helpers.runner.engine import KERNEL_NAME, install_kernelspec

# The notebooks' metadata names the kernelspec `python3` (Jupyter's default): the lab's kernel takes
# that name, see install_lab_kernel.
LAB_KERNEL_NAME = "python3"


def install_lab_kernel(root: Path) -> Path:
    """The runner's kernelspec (``install_kernelspec``: this Python, ``helpers`` on ``PYTHONPATH``,
    ``root`` first on ``JUPYTER_PATH``), installed under ``root/kernels`` by the name ``python3``.

    Why ``python3`` rather than the runner's ``cgb-python``: every notebook's metadata asks for
    ``python3``, so a notebook opened in the lab starts the suite's kernel at once, with no kernel
    picker and no notebook edited (saving one would otherwise write ``cgb-python`` into its metadata
    and into the diff). ``JUPYTER_PATH`` comes before every other kernel folder, so this spec also
    shadows a ``python3`` kernelspec of the user's that runs another Python; it does so for this
    server only (the variable is set in this process and the kernels it starts, nowhere else). The
    ``cgb-python`` copy is removed so that the launcher lists the kernel once; ``root`` is the lab's
    own folder, never the runner's (a run going on at the same time keeps its kernelspec)."""
    install_kernelspec(root)
    kernels = root / "kernels"
    spec = json.loads((kernels / KERNEL_NAME / "kernel.json").read_text())
    spec["display_name"] = "Python 3 (cpu-gpu-bench)"
    kdir = kernels / LAB_KERNEL_NAME
    kdir.mkdir(parents=True, exist_ok=True)
    (kdir / "kernel.json").write_text(json.dumps(spec, indent=1))
    try:  # the launcher's Python logos, from ipykernel's own kernelspec
        from ipykernel.kernelspec import RESOURCES

        for logo in Path(RESOURCES).glob("logo-*"):
            shutil.copyfile(logo, kdir / logo.name)
    except (ImportError, OSError):
        pass
    shutil.rmtree(kernels / KERNEL_NAME, ignore_errors=True)
    return kdir


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        from jupyterlab.labapp import LabApp
    except ImportError:
        print(f"error: JupyterLab is not installed in {sys.executable}: ./run_all.sh lab installs it in "
              ".venv; with --current-python, `pip install jupyterlab` as pinned in pyproject.toml", file=sys.stderr)
        return Exit.BAD_GRID  # nothing run, as for a bad command line
    root = outputs_dir() / ".jupyter-lab"
    try:
        install_lab_kernel(root)
    except OSError as exc:  # a read-only outputs folder: the kernelspec goes to a temporary one
        root = Path(tempfile.mkdtemp(prefix="cgb-lab-jupyter-"))
        print(f"note: cannot write the kernelspec under {outputs_dir()} ({exc.strerror}); using {root}",
              file=sys.stderr)
        install_lab_kernel(root)
    ours = [f"--ServerApp.root_dir={NOTEBOOKS}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # containers and CI machines often run as root, which Jupyter refuses unless told: being asked
        # for the lab is that telling (the server still listens on localhost only, with a token)
        ours.append("--allow-root")
    LabApp.launch_instance(argv=[*ours, *argv])
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
