"""Progress of a run: runs left and time left, and the epoch lines of a long point as they come.

    progress(left, kernel_left, spent)        # "[5 runs to go, 3 min left]"
    outcome(rec)                              # "  first epoch 2.10s, 0.412 s/epoch, 2427 samples/s (synthetic)"
    sink = LiveEpochs(log, title=...).start() # fed the kernel's stdout; prints epochs after LIVE_AFTER_S
    engine = streaming_engine(base_engine)    # papermill engine feeding ``engine.sink``
"""

from __future__ import annotations

import re
import statistics
import threading
import time

from helpers.record import fields as F

LIVE_AFTER_S = 60.0  # a point running longer than this prints its epoch lines as they come
EPOCH_LINE = re.compile(r"^epoch \d+: ")  # what helpers.measure.timing prints per epoch


def progress(left: int, kernel_left: int, spent: list[float]) -> str:
    """``[5 runs to go, 3 min left]``: runs left, and the time left (not a clock time): the mean wall time of the
    runs that started a kernel in this run so far times the runs left that will start one (none before a run has)."""
    if not spent:
        return f"[{left} {'run' if left == 1 else 'runs'} to go]"
    return f"[{left} {'run' if left == 1 else 'runs'} to go, {time_left(statistics.fmean(spent) * kernel_left)} left]"


def time_left(seconds: float) -> str:
    """'0 min', '<1 min', '8 min', '1 h 05 min': rounded up to the minute, as a reader plans with it."""
    if seconds < 1:
        return "0 min"
    if seconds < 60:
        return "<1 min"
    m = int(-(-seconds // 60))
    return f"{m} min" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def outcome(rec: dict) -> str:
    """What a point's progress line says of its record: its figures (an ok point), else the first line of its reason;
    ``HOST BUSY`` and by how much where another process ate its cores while it was timed. A record's words as the
    page shows them (``visible``): no escape sequence, control character or carriage return reaches the terminal."""
    from helpers.measure.host_load import busy_text
    from helpers.report.load.visible import visible

    tail = ""
    if rec.get("status") == "ok" and rec.get(F.SAMPLES_PER_S):
        tail = (f"  first epoch {rec['first_epoch_s']:.2f}s, {rec['median_epoch_s']:.3f} s/epoch, "
                f"{rec['samples_per_s']:.0f} samples/s ({rec.get('data_source')})")
    elif rec.get("reason"):
        tail = "  " + str(rec["reason"]).splitlines()[0][:200]
    if rec.get("host_busy") is True:
        tail += "  HOST BUSY: " + (busy_text(rec.get("host_load")).removeprefix("host busy: ") or "see its record")
    return visible(tail, line=True)


class LiveEpochs:
    """A file-like sink for a kernel's stdout (papermill's ``stdout_file``). It keeps the epoch lines
    (``EPOCH_LINE``); once the point has run ``after_s`` (default ``LIVE_AFTER_S``) it prints them, and
    every later one as it comes, through ``log``, indented by two spaces, after ``title`` (the point's line
    says it has run that long: it is printed once the point ends). A short point prints nothing."""

    def __init__(self, log, after_s: float | None = None, clock=time.monotonic, title: str | None = None):
        self.log, self.clock, self.title = log, clock, title
        self.after_s = LIVE_AFTER_S if after_s is None else after_s
        self.t0 = clock()
        self.live = False
        self._partial, self._kept = "", []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def start(self) -> LiveEpochs:
        """Go live at ``after_s`` even when the kernel prints nothing more then."""
        self._timer = threading.Timer(max(0.0, self.after_s - (self.clock() - self.t0)), self.go_live)
        self._timer.daemon = True
        self._timer.start()
        return self

    def write(self, text: str) -> int:
        with self._lock:
            *lines, self._partial = (self._partial + text).split("\n")
            self._kept += [line.rstrip() for line in lines if EPOCH_LINE.match(line)]
            if not self.live and self.clock() - self.t0 >= self.after_s:
                self.live = True
            if self.live:
                self._flush()
        return len(text)

    def flush(self) -> None:
        pass

    def go_live(self) -> None:
        with self._lock:
            self.live = True
            self._flush()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._partial and EPOCH_LINE.match(self._partial):
                self._kept.append(self._partial.rstrip())
            self._partial = ""
            if self.live:
                self._flush()

    def _flush(self) -> None:  # the kernel's words through ``visible``, as a page shows them: one line each
        from helpers.report.load.visible import visible

        if self.title is not None:
            self.log(visible(self.title, line=True))
            self.title = None
        for line in self._kept:
            self.log(f"  {visible(line, line=True)}")
        self._kept.clear()


def streaming_engine(base):
    """``base`` (papermill's engine, ``engine.register_engine``) registered again as ``cgb`` with a ``sink``: while
    it is set, the kernel's stdout is fed to it (papermill's ``stdout_file``) as it arrives."""
    from papermill.engines import papermill_engines

    class StreamingEngine(base):
        sink = None

        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            if cls.sink is not None and kwargs.get("stdout_file") is None:
                kwargs["stdout_file"] = cls.sink
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    papermill_engines.register("cgb", StreamingEngine)
    return StreamingEngine
