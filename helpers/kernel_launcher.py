"""Start an IPython kernel for a grid point, its process-level stderr sent to ``$CGB_KERNEL_STDERR``.

The runner's kernelspec runs ``python -m helpers.kernel_launcher -f {connection_file}``. Framework
start-up chatter (TensorFlow/XLA C++ logs) and a crash's last words then land in a log file kept
beside the executed notebook instead of the terminal's progress lines.
"""

import os
import sys

if __name__ == "__main__":
    path = os.environ.get("CGB_KERNEL_STDERR")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stderr = os.fdopen(2, "w", buffering=1)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
