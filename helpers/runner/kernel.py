"""Start an IPython kernel for a grid point: a clean environment, its process-level stderr to a log file.

The runner's kernelspec runs ``python -m helpers.runner.kernel -f {connection_file}``. Before the
kernel starts:

- the thread and compiler variables a shell may carry (``OMP_NUM_THREADS=1`` from another job,
  ``XLA_FLAGS`` ...) are removed (``INHERITED_CLEARED``): a point's threads are what its parameters say,
  set by the notebook's ``force()``; the runner records what was cleared (``env_cleared``). To keep one
  on purpose (a GPU image's ``XLA_FLAGS``), name it in ``CGB_KEEP_ENV`` (comma-separated): the record
  then lists it under ``env_kept``;
- IPython's profile is an empty folder (``$CGB_KERNEL_IPYTHONDIR``, else a fresh temporary one), so the
  user's ``~/.ipython`` startup files and kernel configuration do not run inside a measurement;
- framework start-up chatter (TensorFlow/XLA C++ logs) and a crash's last words go to
  ``$CGB_KERNEL_STDERR``, a log file kept beside the executed notebook, not the terminal.
"""

import os
import sys

# Variables that change how many threads, or which compiler options, a framework uses.
INHERITED_CLEARED = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS",
    "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS", "GOTO_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_DYNAMIC", "OMP_THREAD_LIMIT", "KMP_AFFINITY",
    "KMP_BLOCKTIME", "KMP_HW_SUBSET", "GOMP_CPU_AFFINITY", "XLA_FLAGS", "TF_XLA_FLAGS", "TORCHINDUCTOR_COMPILE_THREADS",
)


def kept(environ=None) -> dict:
    """The variables of ``INHERITED_CLEARED`` that ``environ`` has and ``CGB_KEEP_ENV`` names."""
    env = os.environ if environ is None else environ
    names = {n.strip() for n in env.get("CGB_KEEP_ENV", "").split(",")}
    return {k: env[k] for k in INHERITED_CLEARED if k in env and k in names}


def inherited(environ=None) -> dict:
    """The variables of ``INHERITED_CLEARED`` that ``environ`` (default: this process's) has and that a
    kernel started from it clears (all but those ``CGB_KEEP_ENV`` names)."""
    env = os.environ if environ is None else environ
    keep = kept(env)
    return {k: env[k] for k in INHERITED_CLEARED if k in env and k not in keep}


def clean_environment(environ=None) -> dict:
    """Remove the inherited variables that would change a measurement; return what was removed."""
    env = os.environ if environ is None else environ
    removed = inherited(env)
    for k in removed:
        del env[k]
    return removed


def isolate_ipython(environ=None) -> str:
    """Point IPython at an empty profile folder (no user startup files, no user kernel config)."""
    import tempfile

    env = os.environ if environ is None else environ
    path = env.get("CGB_KERNEL_IPYTHONDIR") or tempfile.mkdtemp(prefix="cgb-ipython-")
    os.makedirs(path, exist_ok=True)
    env["IPYTHONDIR"] = path
    return path


if __name__ == "__main__":
    clean_environment()
    isolate_ipython()
    path = os.environ.get("CGB_KERNEL_STDERR")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stderr = os.fdopen(2, "w", buffering=1)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
