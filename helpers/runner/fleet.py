"""The runner's side of many runners over one outputs folder: its shard, its locks, its claims.

    fleet = Fleet(out_root, shard, grids)              # shard: shard.resolve(...) or None (the whole grid)
    refused = fleet.enter(order)                       # (exit status, lines) when it must not run; locks held
    order = fleet.select(order, history, write=True)   # this shard's runs (the split fixed in the folder)
    fleet.start(run_dir)                                # holds the run folder, writes its shard.json
    claim, why = fleet.claim(p)                        # per run: None and who holds it when another runner does
    fields = fleet.fields()                             # the record's shard, grid hash, GPUs, busy runners
    fleet.leave(complete)                              # True: the last one out (renders the merged report)

A whole grid (no shard) holds the folder alone (``outputs.acquire_lock``, ``Exit.BUSY`` to a second runner); shards
share it. Either way each run is claimed before it starts and each point records ``concurrent_runners``: how
many other runners on this host were running a point when it started.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers.exits import Exit
from helpers.point import launcher as _launch
from helpers.record.ids import record_name
from helpers.runner import claims as _claims
from helpers.runner import shard as _shard
from helpers.runner import shard_folders as _shard_folders
from helpers.runner.host_runners import HostRunners
from helpers.runner.locks import me
from helpers.runner.notebook import notebook_params


class Fleet:
    def __init__(self, out_root: Path, shard: _shard.Shard | None, grids: list):
        self.out_root, self.shard, self.grids = Path(out_root), shard, [str(g) for g in grids]
        self.gh: str | None = None
        self.plan: _shard.Plan | None = None
        self.held: list = []
        self.folder: _claims.FolderLock | None = None
        self.host: HostRunners | None = None
        self.run_dir: Path | None = None
        self.gpus = os.environ.get("CUDA_VISIBLE_DEVICES")

    # -------------------------------------------------------------- before anything is written
    def select(self, order: list[dict], history: list[dict], write: bool = False) -> list[dict]:
        """This shard's runs of ``order`` (all of them without a shard). The split is the one fixed in the
        outputs folder, else (``write``: fixed now) one computed from ``history``."""
        self.gh = _shard.grid_hash(order)
        if self.shard is None:
            return order
        n = self.shard.count
        if write:
            self.plan = _shard.fixed_plan(self.out_root, order, self.gh, n, history)
        else:
            self.plan = _shard.read_plan(self.out_root, order, self.gh, n) or _shard.compute_plan(
                order, self.gh, n, history)
        return self.plan.runs_of(self.shard.index, order)

    def describe(self, n_mine: int, n_all: int) -> list[str]:
        if self.shard is None or self.plan is None:
            return []
        est = self.plan.estimate_s(self.shard.index)
        per = [self.plan.estimate_s(i) for i in range(self.shard.count)]
        fixed = ("the split fixed in the outputs folder" if self.plan.fixed
                 else "not fixed yet: the first shard to start fixes it")
        return [f"shard {self.shard} ({self.shard.source}): {n_mine} of the grid's {n_all} runs, estimated "
                f"{est / 60:.1f} min (shards: {', '.join(f'{s / 60:.1f}' for s in per)} min; {self.plan.basis}; "
                f"{fixed}); grid hash {self.gh}"]

    # -------------------------------------------------------------- the folder
    def enter(self, order: list[dict]) -> tuple[Exit, list[str]] | None:
        """Take the shared folder lock and this shard's lock, refuse a shard of another grid; None when this
        runner may go on, else (exit status, message lines): nothing was run, only lock files written."""
        self.gh = _shard.grid_hash(order)
        if self.shard is None:
            return None
        self.out_root.mkdir(parents=True, exist_ok=True)
        self.folder = _claims.FolderLock(self.out_root)
        if not self.folder.shared():
            return Exit.BUSY, [f"{self.out_root} is in use by a whole-grid run ({self.folder.holder()}); shards "
                               "share a folder only with shards. Wait for it, or set CGB_OUTPUTS to another folder."]
        held, who = _claims.shard_lock(self.out_root, self.gh, self.shard, {**me(), "shard": str(self.shard)})
        if held is None:
            return Exit.BUSY, [f"shard {self.shard} of this grid (hash {self.gh}) is already being run by {who}; "
                               "two runners of one shard would take the same runs. Start another shard, or wait."]
        self.held.append(held)
        bad = _shard_folders.conflicts(self.out_root / "runs", self.gh, self.shard.count)
        if bad:
            return Exit.BAD_GRID, [f"{self.out_root} holds shards, not all finished, of a different grid than this one "
                              f"(hash {self.gh}: {', '.join(self.grids)} split in {self.shard.count}); their runs "
                              "and this grid's would mix in one folder:", *bad,
                              "Finish them (run each missing shard of that grid), give this grid another "
                              "CGB_OUTPUTS, or, to drop that grid's shards, delete the .shard.json of their run "
                              "folders (their records stay)."]
        return None

    def start(self, run_dir: Path, n_runs: int) -> None:
        """Hold ``run_dir`` for this runner's life (``orphans.set_aside_orphans`` leaves it alone); a shard writes
        its ``shard.json`` there (the grid's hash, the shard, the GPUs it was given)."""
        self.run_dir = Path(run_dir)
        self.held.append(_claims.hold_alive(self.run_dir))
        self.host = HostRunners()
        if self.shard is None:
            return
        _shard_folders.write_shard_info(self.run_dir, {
            "grid_hash": self.gh, "shard": str(self.shard), "index": self.shard.index, "count": self.shard.count,
            "source": self.shard.source, "grids": self.grids, "runs": n_runs, **me(),
            "cuda_visible_devices": self.gpus, "finished": False})

    # -------------------------------------------------------------- each run
    def claim(self, p: dict, statuses: tuple[str, ...] | None):
        """(the claim, '') to run ``p``; (None, why) when another runner holds it or finished it since this runner
        planned (``statuses``: the statuses that count as done; None with --rerun)."""
        info = {**me(), "shard": str(self.shard) if self.shard else None}
        # the processes of one mpirun/srun launch run the same point, each its own part: one claim per process
        held, who = _claims.try_claim(self.out_root, p["point_id"] + _launch.claim_suffix(), info)
        if held is None:
            return None, f"taken by another runner ({who})"
        if statuses:
            name = record_name(notebook_params(p), p["point_id"])
            done = _claims.complete_elsewhere(self.out_root / "runs", name, statuses)
            if done:
                held.release()
                return None, f"done by another runner ({done})"
        return held, ""

    def fields(self) -> dict:
        """The record's fields about the fleet, taken as a point starts."""
        return {"concurrent_runners": self.host.busy_others() if self.host else None,
                "shard": str(self.shard) if self.shard else None, "grid_hash": self.gh,
                "cuda_visible_devices": self.gpus}

    def busy(self, on: bool) -> None:
        if self.host is not None:
            self.host.busy(on)

    # -------------------------------------------------------------- the end
    def leave(self, complete: bool) -> bool:
        """Mark this shard finished when it went through all its runs; True when the merged report is this
        runner's to render: every shard of the grid finished and no other runner in the folder (a whole grid:
        always True)."""
        if self.host is not None:
            self.host.close()
        if self.shard is None:
            return True
        if complete and self.run_dir is not None:
            _shard_folders.mark_finished(self.run_dir)
        done = _shard_folders.finished_shards(self.out_root / "runs", self.gh, self.shard.count)
        if done != set(range(self.shard.count)):
            return False
        return bool(self.folder and self.folder.alone())

    def release(self) -> None:
        for h in self.held:
            h.release()
        self.held = []
