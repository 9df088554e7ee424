"""The kernel every point runs in and the papermill engine that drives it.

    kernel = install_kernelspec(out_root / ".jupyter")   # a kernelspec running this Python (helpers.runner.kernel)
    engine = register_engine()                           # papermill's engine "cgb", its running client exposed
    kill_kernel(engine)                                  # the watchdog's (and an interrupt's) way out

Kernels start through ``kernel_launcher`` (thread variables cleared, an empty IPython profile). What a run tells
every kernel it starts (its IPython profile folder, the host calibration, the GPUs' idle power) is kept in
``RUN_FACTS`` and given to each kernel's environment (``kernel_env``), never set in the runner's own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
from pathlib import Path

from helpers.paths import CODE_ROOT

KERNEL_NAME = "cgb-python"
RUN_FACTS: dict[str, str] = {}  # this run's facts for every kernel it starts (name -> text): ``kernel_env`` adds them


def install_kernelspec(root: Path) -> str:
    """A kernelspec running *this* Python (whatever kernels the user has installed)."""
    kdir = root / "kernels" / KERNEL_NAME
    kdir.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "helpers.runner.kernel", "-f", "{connection_file}"],
            "display_name": f"Python ({sys.executable})", "language": "python",
            "metadata": {"debugger": False}}
    (kdir / "kernel.json").write_text(json.dumps(spec, indent=1))
    paths = [str(root)] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    # nbconvert's templates live in <prefix>/share/jupyter; with `pip install --target DIR` (images
    # whose Python is used as it is) that prefix is DIR, which Jupyter does not search by itself
    # (found, not imported: nbconvert's import is a second of CPU the runner needs only to render the report)
    spec = importlib.util.find_spec("nbconvert")
    if spec is not None and spec.origin:
        share = Path(spec.origin).resolve().parents[1] / "share" / "jupyter"
        if share.is_dir():
            paths.append(str(share))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(paths)
    # the kernel imports the same `helpers` as this process: the checkout's, or the installed copy's
    pp = [str(CODE_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(pp))
    return KERNEL_NAME


def kernel_env(facts: dict) -> dict:
    """The environment a point's kernel starts with: this process's, the run's (``RUN_FACTS``), then the point's
    ``facts`` (name -> text)."""
    return {**os.environ, **RUN_FACTS, **facts}


def register_engine():
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines
    from papermill.log import logger
    from papermill.utils import merge_kwargs, remove_args

    class WatchedEngine(NBClientEngine):
        """papermill's nbclient engine, exposing the running client so a watchdog can kill it. ``kernel_env``
        (``pm.execute_notebook(..., kernel_env=...)``): the facts of one point for its kernel (where its notebook
        and stderr go, its deadline), added to this process's environment for that kernel only (see
        ``kernel_env``): the runner's own environment is never changed."""

        current = None

        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                     stderr_file=None, start_timeout=60, execution_timeout=None,
                                     **kwargs):
            env = kwargs.pop("kernel_env", None)
            kwargs = remove_args(["input_path"], **kwargs)
            safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
            # the kernel is killed once the last cell has run (its record is written, its outputs are in):
            # a graceful shutdown waited ~2 s per point for the framework's threads to wind down
            safe_kwargs.setdefault("shutdown_kernel", "immediate")
            final_kwargs = merge_kwargs(safe_kwargs, timeout=execution_timeout, startup_timeout=start_timeout,
                                        kernel_name=kernel_name, log=logger, log_output=log_output,
                                        stdout_file=stdout_file, stderr_file=stderr_file)
            client = PapermillNotebookClient(nb_man, **final_kwargs)
            cls.current = client  # kept after it returns: an interrupt handler may still need it
            return client.execute(**({"env": kernel_env(env)} if env else {}))

    papermill_engines.register("cgb", WatchedEngine)
    return WatchedEngine


def kill_kernel(engine) -> bool:
    """Kill the running point's kernel and its children (its own process group)."""
    client = getattr(engine, "current", None)
    km = getattr(client, "km", None) if client is not None else None
    prov = getattr(km, "provisioner", None) if km is not None else None
    pid = getattr(prov, "pid", None) if prov is not None else None
    if not pid:
        return False
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
    return True
