"""Shards: a grid's runs split over N runners (a Slurm job array, a Kubernetes Indexed Job, one runner per GPU).

    sh = resolve(args.shard, args.shard_count, os.environ)   # Shard(index, count, source) or None; ShardError
    gh = grid_hash(order)                                     # the grid, whatever machine expands it
    plan = fixed_plan(out_root, order, gh, sh.count, costs)   # the split every shard of this grid uses
    mine = plan.runs_of(sh.index, order)

The index is 0-based (``--shard 0/2`` and ``--shard 1/2``), as Slurm's ``--array=0-1`` and Kubernetes'
``JOB_COMPLETION_INDEX`` count. Without ``--shard`` the shard comes from the environment: Slurm's
``SLURM_ARRAY_TASK_ID`` (less ``SLURM_ARRAY_TASK_MIN``, over ``SLURM_ARRAY_TASK_STEP``) of
``SLURM_ARRAY_TASK_COUNT``, else Kubernetes' ``JOB_COMPLETION_INDEX`` of the count given once by
``--shard-count N`` or ``CGB_SHARD_COUNT`` (an Indexed Job does not tell its pods how many completions it has).

The split: each run has an estimated cost in seconds (the median wall time of earlier complete records of the
same workload, backend and device on this machine; else ``prior_s``, from the committed FLOPs count of the
workload at its size), and runs go, the costliest first, to the shard with the least so far (ties: the run
key, the lower shard): a deterministic balance. Estimates change as records come in, so the first shard to
start fixes the split in the outputs folder (``.shards/<grid hash>-of-<N>.json``, created once, atomically);
every later shard of that grid and N, on any host, and every restart reads it: the shards' union is the grid
and no run is in two shards, however late a shard starts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import statistics
from pathlib import Path

from helpers.runner.notebook import notebook_params

COUNT_ENV = "CGB_SHARD_COUNT"
START_S = {"cpu": 15.0, "gpu": 25.0}  # a fresh kernel, the framework's import and the first compile (a guess)
RATE_FLOPS = {"cpu": 2e10, "gpu": 5e12}  # training FLOP/s assumed without a record (a guess, only relative)
UNKNOWN_S = 60.0  # a workload of no committed FLOPs count


class ShardError(ValueError):
    """A bad shard: the message names it and what is allowed; nothing was run."""


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int  # 0-based
    count: int
    source: str  # where it came from: '--shard', 'Slurm array', 'Kubernetes Indexed Job'

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def check(index: int, count: int, source: str) -> Shard:
    if count < 1:
        raise ShardError(f"{source}: the number of shards must be at least 1, not {count}")
    if not 0 <= index < count:
        raise ShardError(f"{source}: shard index {index} is out of range for {count} shard(s): "
                         f"0 to {count - 1} (shards count from 0)")
    return Shard(index, count, source)


def parse(spec: str, source: str = "--shard") -> Shard:
    m = re.fullmatch(r"\s*(-?\d+)\s*/\s*(-?\d+)\s*", spec or "")
    if not m:
        raise ShardError(f"{source}: expected I/N (shard I of N, I from 0 to N-1, e.g. 0/4), not {spec!r}")
    return check(int(m.group(1)), int(m.group(2)), f"{source} {spec.strip()}")


def _int_env(env, name: str) -> int | None:
    v = env.get(name)
    if v in (None, ""):
        return None
    try:
        return int(v)
    except ValueError:
        raise ShardError(f"{name}={v!r} is not an integer") from None


def resolve(flag: str | None, count_flag: int | None, env=None) -> Shard | None:
    """The shard this runner runs: ``--shard I/N``; else Slurm's array variables; else Kubernetes'
    ``JOB_COMPLETION_INDEX`` with the count from ``--shard-count`` or ``CGB_SHARD_COUNT``; else None (the
    whole grid). ``ShardError`` for a bad or incomplete one."""
    env = os.environ if env is None else env
    if flag is not None:
        if count_flag is not None:
            raise ShardError("give --shard I/N or --shard-count N (with an index from the environment), not both")
        return parse(flag)
    task = _int_env(env, "SLURM_ARRAY_TASK_ID")
    if task is not None:
        lo = _int_env(env, "SLURM_ARRAY_TASK_MIN") or 0
        step = _int_env(env, "SLURM_ARRAY_TASK_STEP") or 1
        n = _int_env(env, "SLURM_ARRAY_TASK_COUNT")
        if n is None:
            hi = _int_env(env, "SLURM_ARRAY_TASK_MAX")
            n = None if hi is None else (hi - lo) // step + 1
        src = f"Slurm array (SLURM_ARRAY_TASK_ID={task}, MIN={lo}, STEP={step}, COUNT={n})"
        if n is None:
            raise ShardError(f"{src}: neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is set")
        if count_flag is not None and count_flag != n:
            raise ShardError(f"{src}: --shard-count {count_flag} disagrees with the array's {n} tasks")
        if (task - lo) % step:
            raise ShardError(f"{src}: the array's indices are not a range (submit it as --array=0-{n - 1})")
        return check((task - lo) // step, n, src)
    index = _int_env(env, "JOB_COMPLETION_INDEX")
    count = count_flag if count_flag is not None else _int_env(env, COUNT_ENV)
    if index is not None:
        src = f"Kubernetes Indexed Job (JOB_COMPLETION_INDEX={index})"
        if count is None:
            raise ShardError(f"{src}: the number of shards is not given: set {COUNT_ENV} (the Job's completions) "
                             "or pass --shard-count N")
        return check(index, count, f"{src} of {count}")
    if count is not None:
        raise ShardError(f"a shard count ({count}) is given but no shard index: pass --shard I/N, or run in a Slurm "
                         "array or a Kubernetes Indexed Job")
    return None


# ------------------------------------------------------------------ the grid and its runs

def run_key(run: dict) -> str:
    """A run's id whatever the machine: its notebook parameters and its repeat (the point id has the machine in
    it, and the hosts of one cluster may differ)."""
    params = json.dumps(notebook_params(run), sort_keys=True, default=str)
    return hashlib.sha256(params.encode()).hexdigest()[:16] + f"-r{run.get('_repeat', 0)}"


def grid_hash(order: list[dict]) -> str:
    """The grid's hash: its runs, whatever the order of its files and blocks."""
    keys = sorted(run_key(r) for r in order)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:12]


def prior_s(run: dict) -> float:
    """A run's cost without any record: a kernel's start plus its epochs' training FLOPs at an assumed rate."""
    from helpers.measure import flops_table
    from helpers.workloads import complete

    dev = run.get("device", "cpu")
    try:
        c = flops_table.lookup(run["workload"], notebook_params(run))
    except (KeyError, TypeError, ValueError):
        c = None
    if c is None:
        return START_S.get(dev, 20.0) + UNKNOWN_S
    run = complete(run)  # the workload's defaults where the grid gives none (its batch, epochs)
    work = c.train(run["batch_size"]) * (run.get("n_train") or 0) * max(run["epochs"] or 1, 1)
    return START_S.get(dev, 20.0) + work / RATE_FLOPS.get(dev, RATE_FLOPS["cpu"])


def costs(order: list[dict], records: list[dict]) -> tuple[dict[str, float], str]:
    """Each run's estimated seconds (by ``run_key``) and what the estimate rests on."""
    walls: dict[tuple, list[float]] = {}
    for r in records:
        w = r.get("wall_s")
        if isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0:
            walls.setdefault((r.get("workload"), r.get("backend"), r.get("device")), []).append(float(w))
    out, from_records = {}, 0
    for run in order:
        kind = (run["workload"], run["backend"], run["device"])
        if kind in walls:
            out[run_key(run)] = statistics.median(walls[kind])
            from_records += 1
        else:
            out[run_key(run)] = prior_s(run)
    basis = (f"{from_records} run(s) from earlier records of this machine, {len(order) - from_records} from the "
             "workload's FLOPs at an assumed rate")
    return out, basis


def split(keys: list[str], cost: dict[str, float], n: int) -> dict[str, int]:
    """Each key's shard: the costliest first, to the shard with the least so far (longest processing time first)."""
    load = [0.0] * n
    out = {}
    for k in sorted(set(keys), key=lambda k: (-cost.get(k, 0.0), k)):
        i = min(range(n), key=lambda j: (load[j], j))
        out[k] = i
        load[i] += cost.get(k, 0.0)
    return out


@dataclasses.dataclass
class Plan:
    grid_hash: str
    count: int
    assign: dict  # run key -> shard index
    cost: dict  # run key -> estimated seconds
    basis: str
    fixed: bool  # read from (or written to) the outputs folder

    def runs_of(self, index: int, order: list[dict]) -> list[dict]:
        return [r for r in order if self.assign.get(run_key(r)) == index]

    def estimate_s(self, index: int) -> float:
        return sum(self.cost.get(k, 0.0) for k, i in self.assign.items() if i == index)

    def to_json(self) -> dict:
        return {"grid_hash": self.grid_hash, "count": self.count, "basis": self.basis,
                "assign": self.assign, "cost_s": {k: round(v, 1) for k, v in self.cost.items()}}


def plan_path(out_root: Path, gh: str, n: int) -> Path:
    return Path(out_root) / ".shards" / f"{gh}-of-{n}.json"


def read_plan(out_root: Path, order: list[dict], gh: str, n: int) -> Plan | None:
    """The split fixed in the outputs folder for this grid and N, None if there is none (or it does not fit)."""
    path = plan_path(out_root, gh, n)
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    keys = {run_key(r) for r in order}
    assign = obj.get("assign") if isinstance(obj, dict) else None
    if not isinstance(assign, dict) or set(assign) != keys or obj.get("count") != n:
        return None
    return Plan(gh, n, {k: int(v) for k, v in assign.items()},
                {k: float(v) for k, v in (obj.get("cost_s") or {}).items()}, str(obj.get("basis", "")), True)


def compute_plan(order: list[dict], gh: str, n: int, records: list[dict]) -> Plan:
    cost, basis = costs(order, records)
    return Plan(gh, n, split([run_key(r) for r in order], cost, n), cost, basis, False)


def fixed_plan(out_root: Path, order: list[dict], gh: str, n: int, records: list[dict]) -> Plan:
    """The split of this grid in N, fixed by the first shard to get here: created with a hard link of a
    finished temporary file (atomic, and exclusive on NFS too), read back by everyone."""
    plan = read_plan(out_root, order, gh, n)
    if plan is not None:
        return plan
    path = plan_path(out_root, gh, n)
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = compute_plan(order, gh, n, records)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    tmp.write_text(json.dumps(mine.to_json(), indent=1, sort_keys=True))
    try:
        os.link(tmp, path)  # fails when another shard fixed it first: theirs holds
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    plan = read_plan(out_root, order, gh, n)
    if plan is None:
        raise ShardError(f"{path}: the split of this grid could not be read back (remove the file to make a new one)")
    return plan
