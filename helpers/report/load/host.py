"""The machine rendering the report (``this_host``): its host name, CPU model, logical CPUs and outputs folder, read
once when the context is built, so that the verdict can say "this machine" of its own runs only."""

from __future__ import annotations


def this_host() -> tuple:
    """(host name, CPU model, logical CPUs, outputs folder) of the machine this process runs on."""
    import socket

    import psutil

    from helpers.measure.fingerprint import cpu_model
    from helpers.paths import outputs_dir

    return socket.gethostname(), cpu_model(), psutil.cpu_count(logical=True), outputs_dir()
