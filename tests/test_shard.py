"""Shards of a grid and many runners over one outputs folder, fast: papermill faked, no kernel.

The split (a partition, balanced, deterministic), the shard read from ``--shard``, Slurm's array variables and
Kubernetes' ``JOB_COMPLETION_INDEX``, bad input refused with nothing run, the locks and claims, the record's
fields and the report's mark. Real kernels, two runners at once, SIGKILL and a real Slurm: test_cluster.py.
"""

import json
import os
import random
from pathlib import Path

import nbformat
import pytest

from helpers import grid as _grid
from helpers.measure.machine import machine_key
from helpers.record.ids import point_id, record_name
from helpers.record.reader import read_records
from helpers.record.schema import empty_record
from helpers.record.writer import write_atomic
from helpers.runner import claims, shard_folders
from helpers.runner import cli as runner
from helpers.runner import shard as _shard
from helpers.runner.fleet import Fleet
from helpers.runner.host_runners import HostRunners
from helpers.runner.locks import me
from helpers.runner.notebook import notebook_params
from helpers.runner.orphans import set_aside_orphans
from helpers.runner.outputs import acquire_lock

GRID = """timeout_s: 600
points:
  - workload: mlp_mnist
    backend: jax
    device: cpu
    batch_size: 50
    epochs: 2
    n_train: {n_train}
    min_steady_s: 0.000001
    data_source: synthetic
    seed: {seeds}
"""


def grid_file(tmp_path: Path, seeds=(1, 2, 3, 4), n_train=200, name="g.yaml") -> Path:
    path = tmp_path / name
    path.write_text(GRID.format(seeds=list(seeds), n_train=n_train))
    return path


def runs_of(path: Path) -> list[dict]:
    order = _grid.runs(_grid.expand_all([path]))
    for r in order:
        r["point_id"] = point_id(notebook_params(r), machine_key())
    return order


def complete(outputs: Path) -> list[dict]:
    recs, skipped = read_records([outputs / "runs"])
    assert not skipped
    return [r for r in recs if r.get("wall_s") is not None]


# ------------------------------------------------------------------ the shard: flag and environment

def test_shard_spec_parsed_and_bad_ones_named():
    assert _shard.parse("1/4") == _shard.Shard(1, 4, "--shard 1/4")
    for spec, words in [("4/4", "out of range for 4 shard(s): 0 to 3"), ("-1/2", "out of range"),
                        ("0/0", "at least 1, not 0"), ("1/-3", "at least 1"), ("x", "expected I/N"),
                        ("1", "expected I/N")]:
        with pytest.raises(_shard.ShardError, match=words.replace("(", r"\(").replace(")", r"\)")):
            _shard.parse(spec)


def test_shard_from_slurm_array_variables():
    env = {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "4", "SLURM_ARRAY_TASK_MAX": "6",
           "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_STEP": "1"}
    sh = _shard.resolve(None, None, env)
    assert (sh.index, sh.count) == (1, 3) and "Slurm array" in sh.source
    # --array=0-6:2: ids 0, 2, 4, 6
    sh = _shard.resolve(None, None, {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "0",
                                     "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "4"})
    assert (sh.index, sh.count) == (2, 4)
    # without COUNT (older Slurm): from MAX
    sh = _shard.resolve(None, None, {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MAX": "3"})
    assert (sh.index, sh.count) == (2, 4)
    assert _shard.resolve("0/2", None, env) == _shard.Shard(0, 2, "--shard 0/2")  # the flag wins
    with pytest.raises(_shard.ShardError, match="disagrees with the array's 3 tasks"):
        _shard.resolve(None, 2, env)
    with pytest.raises(_shard.ShardError, match="not a range"):  # --array=1,4,5
        _shard.resolve(None, None, {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1",
                                    "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "3"})
    with pytest.raises(_shard.ShardError, match="out of range"):  # --array=0,1,7 (COUNT 3)
        _shard.resolve(None, None, {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3"})
    assert _shard.resolve(None, None, {}) is None


def test_shard_from_kubernetes_indexed_job():
    sh = _shard.resolve(None, None, {"JOB_COMPLETION_INDEX": "2", _shard.COUNT_ENV: "3"})
    assert (sh.index, sh.count) == (2, 3) and "Kubernetes" in sh.source
    assert _shard.resolve(None, 4, {"JOB_COMPLETION_INDEX": "3"}).count == 4  # --shard-count
    with pytest.raises(_shard.ShardError, match="number of shards is not given"):
        _shard.resolve(None, None, {"JOB_COMPLETION_INDEX": "0"})
    with pytest.raises(_shard.ShardError, match="out of range"):
        _shard.resolve(None, None, {"JOB_COMPLETION_INDEX": "3", _shard.COUNT_ENV: "3"})
    with pytest.raises(_shard.ShardError, match="no shard index"):
        _shard.resolve(None, 3, {})
    with pytest.raises(_shard.ShardError, match="not both"):
        _shard.resolve("0/2", 2, {})


# ------------------------------------------------------------------ the split

def test_split_is_a_balanced_deterministic_partition():
    rng = random.Random(37)
    keys = [f"k{i:02d}" for i in range(23)]
    cost = {k: rng.uniform(1, 100) for k in keys}
    for n in (1, 2, 3, 5, 30):
        a = _shard.split(keys, cost, n)
        assert set(a) == set(keys) and set(a.values()) <= set(range(n))  # every run in exactly one shard
        shuffled = keys[:]
        rng.shuffle(shuffled)
        assert _shard.split(shuffled, cost, n) == a  # the order of the grid does not matter
        loads = [sum(cost[k] for k in keys if a[k] == i) for i in range(n)]
        if n <= len(keys):
            assert max(loads) - min(loads) <= max(cost.values())


def test_costs_from_records_of_this_machine_else_the_workloads_flops(tmp_path):
    small, big = runs_of(grid_file(tmp_path, seeds=(1,))), runs_of(grid_file(tmp_path, seeds=(1,), n_train=20000))
    cost, basis = _shard.costs(small + big, [])
    assert cost[_shard.run_key(big[0])] > cost[_shard.run_key(small[0])] > 0 and "0 run(s) from earlier" in basis
    recs = [{"workload": "mlp_mnist", "backend": "jax", "device": "cpu", "wall_s": w} for w in (3.0, 5.0, 40.0)]
    cost, basis = _shard.costs(small, recs)
    assert cost[_shard.run_key(small[0])] == 5.0 and basis.startswith("1 run(s) from earlier records")


def test_grid_hash_is_the_runs_whatever_their_order(tmp_path):
    a = runs_of(grid_file(tmp_path, seeds=(1, 2, 3)))
    assert _shard.grid_hash(a) == _shard.grid_hash(a[::-1])
    assert _shard.grid_hash(a) != _shard.grid_hash(runs_of(grid_file(tmp_path, seeds=(1, 2))))


def test_validate_only_lists_each_shards_runs_and_estimate(shard_runner, tmp_path, capsys):
    _, _, outputs = shard_runner
    g = str(grid_file(tmp_path, seeds=(1, 2, 3, 4, 5)))
    listed = []
    for i in range(3):
        assert runner.main([g, "--validate-only", "--shard", f"{i}/3"]) == 0
        out = capsys.readouterr().out
        assert f"shard {i}/3 (--shard {i}/3): " in out and "of the grid's 5 runs, estimated" in out
        listed += [line.split("] ", 1)[1] for line in out.splitlines() if line.startswith("[")]
    assert runner.main([g, "--validate-only"]) == 0
    whole = [line.split("] ", 1)[1] for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert len(whole) == 5 and len(listed) == 5  # (the labels do not show the seed: counted, not compared)
    assert not outputs.exists()  # writes nothing


# ------------------------------------------------------------------ bad input: nothing run, nothing lost

@pytest.mark.parametrize("args, words", [(["--shard", "2/2"], "out of range"), (["--shard", "0/0"], "at least 1"),
                                         (["--shard", "a/b"], "expected I/N"),
                                         (["--shard-count", "2"], "no shard index")])
def test_bad_shards_are_refused_with_nothing_run(shard_runner, tmp_path, capsys, args, words):
    calls, _, outputs = shard_runner
    assert runner.main([str(grid_file(tmp_path)), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "nothing was run" in err
    assert not calls and not outputs.exists()


def test_two_shards_one_folder_union_is_the_grid_and_the_last_renders_the_report(shard_runner, tmp_path, capsys):
    calls, reports, outputs = shard_runner
    g = grid_file(tmp_path, seeds=(1, 2, 3, 4, 5))
    assert runner.main([str(g), "--shard", "0/2"]) == 0
    assert "rendered by the last shard to finish" in capsys.readouterr().out and not reports
    assert runner.main([str(g), "--shard", "1/2"]) == 0
    assert reports == [[str(outputs)]] and (outputs / "report.html").is_file()  # one report, of the whole folder
    assert not read_records([outputs])[1]  # the report reads the folder: no bookkeeping file read as a record
    recs = complete(outputs)
    assert sorted(r["point_id"] for r in recs) == sorted(r["point_id"] for r in runs_of(g))  # the grid, once each
    assert len(calls) == 5
    gh = _shard.grid_hash(runs_of(g))
    assert {r["shard"] for r in recs} == {"0/2", "1/2"} and {r["grid_hash"] for r in recs} == {gh}
    assert all(r["concurrent_runners"] == 0 and r["cuda_visible_devices"] is None for r in recs)
    infos = shard_folders.shard_infos(outputs / "runs")
    assert sorted((i["shard"], i["finished"]) for i in infos) == [("0/2", True), ("1/2", True)]
    plan = json.loads((outputs / ".shards" / f"{gh}-of-2.json").read_text())
    assert sorted(plan["assign"].values()) == [0, 0, 0, 1, 1] or sorted(plan["assign"].values()) == [0, 0, 1, 1, 1]
    # resume of a shard: nothing to do
    assert runner.main([str(g), "--shard", "1/2", "--no-report"]) == 0
    assert "done before" in capsys.readouterr().out and len(calls) == 5


def test_cuda_visible_devices_is_kept_and_recorded(shard_runner, tmp_path, monkeypatch):
    calls, _, outputs = shard_runner
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert runner.main([str(grid_file(tmp_path, seeds=(1,))), "--shard", "0/1", "--no-report"]) == 0
    (rec,) = complete(outputs)
    assert rec["cuda_visible_devices"] == "1" and os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    (info,) = shard_folders.shard_infos(outputs / "runs")
    assert info["cuda_visible_devices"] == "1"


def test_two_runners_of_one_shard(shard_runner, tmp_path, capsys):
    calls, _, outputs = shard_runner
    g = grid_file(tmp_path)
    held, _ = claims.shard_lock(outputs, _shard.grid_hash(runs_of(g)), _shard.Shard(0, 2, "t"),
                                {**me(), "shard": "0/2"})
    assert runner.main([str(g), "--shard", "0/2"]) == 5  # Exit.BUSY
    err = capsys.readouterr().err
    assert "shard 0/2 of this grid" in err and f"pid {os.getpid()}" in err and "nothing was run" in err
    assert not calls and not (outputs / "runs").exists()
    held.release()
    assert runner.main([str(g), "--shard", "0/2", "--no-report"]) == 0 and calls


def test_a_shard_of_another_grid_in_the_same_folder_is_refused(shard_runner, tmp_path, capsys):
    calls, _, outputs = shard_runner
    a, b = grid_file(tmp_path, seeds=(1, 2)), grid_file(tmp_path, seeds=(7, 8), name="b.yaml")
    assert runner.main([str(a), "--shard", "0/2", "--no-report"]) == 0  # shard 1/2 of a: not run yet
    n = len(calls)
    before = sorted(p.name for p in (outputs / "runs").iterdir())
    assert runner.main([str(b), "--shard", "1/2"]) == 2
    err = capsys.readouterr().err
    assert "of a different grid" in err and "another grid (hash" in err and "started 0/2, finished 0/2" in err
    assert "nothing was run" in err
    assert runner.main([str(a), "--shard", "1/3"]) == 2  # the same grid split in another number
    assert "this grid (hash" in capsys.readouterr().err
    assert len(calls) == n and sorted(p.name for p in (outputs / "runs").iterdir()) == before
    assert runner.main([str(a), "--shard", "1/2"]) == 0  # a's shards finished: b may come
    assert runner.main([str(b), "--shard", "0/2", "--no-report"]) == 0


def test_a_whole_grid_and_shards_refuse_each_other(shard_runner, tmp_path, capsys):
    calls, _, outputs = shard_runner
    g = str(grid_file(tmp_path, seeds=(1,)))
    outputs.mkdir(parents=True)
    folder = claims.FolderLock(outputs)
    assert folder.shared()  # a shard is in
    assert runner.main([g]) == 5 and "in use by a run in progress" in capsys.readouterr().err
    folder.close()
    lock = acquire_lock(outputs)  # a whole grid is in
    assert runner.main([g, "--shard", "0/1"]) == 5 and "in use by a whole-grid run" in capsys.readouterr().err
    lock.close()
    assert not calls


def test_a_run_claimed_by_another_runner_is_left_to_it(shard_runner, tmp_path, capsys):
    calls, reports, outputs = shard_runner
    g = grid_file(tmp_path, seeds=(1, 2))
    taken = runs_of(g)[0]["point_id"]
    held, _ = claims.try_claim(outputs, taken, {**me(), "shard": "x"})
    assert runner.main([str(g), "--shard", "0/1"]) == 0
    out = capsys.readouterr().out
    assert "not run here: taken by another runner (pid" in out and "1 taken by other runners" in out
    assert [c["point_id"] for c in calls] == [runs_of(g)[1]["point_id"]]
    assert not reports  # the shard did not go through all its runs: not finished
    held.release()
    assert runner.main([str(g), "--shard", "0/1"]) == 0 and len(calls) == 2 and reports


def test_claims_recheck_records_finished_by_another_runner(shard_runner, tmp_path):
    _, _, outputs = shard_runner
    g = grid_file(tmp_path, seeds=(1,))
    (run,) = runs_of(g)
    fleet = Fleet(outputs, _shard.Shard(0, 1, "t"), [g])
    held, why = fleet.claim(run, ("ok",))
    assert held is not None and why == ""
    held.release()
    params = notebook_params(run)
    rec = {**empty_record(params, run["point_id"]), "status": "ok", "wall_s": 1.0, "notebook": "n.ipynb"}
    rec_dir = outputs / "runs" / "other" / "records"
    write_atomic(rec_dir / record_name(params, run["point_id"]), rec)
    (rec_dir / "n.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    held, why = fleet.claim(run, ("ok",))
    assert held is None and why.startswith("done by another runner")


# ------------------------------------------------------------------ the host's runners, dead runners' records

def test_busy_runners_of_this_host_are_counted(tmp_path):
    a, b = HostRunners(tmp_path), HostRunners(tmp_path)
    assert a.busy_others() == 0 and b.busy_others() == 0
    a.busy(True)
    assert b.busy_others() == 1 and a.busy_others() == 0
    a.busy(False)
    assert b.busy_others() == 0
    a.busy(True)
    a.close()  # a runner gone (its mark removed, its lock with it)
    assert b.busy_others() == 0 and len(list(tmp_path.glob("*.runner"))) == 1


def test_records_of_dead_runners_only_are_set_aside(tmp_path):
    runs = tmp_path / "runs"
    for name in ("live", "dead"):
        rec = {**empty_record({"workload": "w", "backend": "jax", "device": "cpu"}, name), "status": "ok"}
        write_atomic(runs / name / "records" / f"{name}.json", rec)
    alive = claims.hold_alive(runs / "live")
    (aside,) = set_aside_orphans(runs)
    assert aside.parent == runs / "dead" / "records" and (runs / "live" / "records" / "live.json").is_file()
    alive.release()
    assert len(set_aside_orphans(runs)) == 1


# ------------------------------------------------------------------ the report's mark

def test_the_report_marks_configurations_measured_on_a_shared_host():
    from helpers.report.derive import aggregate
    from helpers.report.load.table import tidy
    from helpers.report.words.marks import precision_marks

    base = {"workload": "mlp_mnist", "backend": "jax", "device": "cpu", "status": "ok", "n_train": 200,
            "batch_size": 50, "epochs": 2, "params": {"precision": "float32"}, "fingerprint": {"host": "h"},
            "epoch_s": [0.5, 0.5], "median_epoch_s": 0.5, "samples_per_s": 400.0, "steps_per_epoch": 4}
    df = tidy([{**base, "point_id": "a", "concurrent_runners": 2}, {**base, "point_id": "b"}])
    assert list(df["concurrent_runners"].fillna(-1)) == [2, -1]
    (row,) = aggregate.summarise(df).to_dict("records")
    assert row["shared_host"] == 2
    assert "host shared: up to 2 other runner(s) busy" in precision_marks(row)
    row["shared_host"] = 0
    assert "host shared" not in precision_marks(row)


# ------------------------------------------------------------------ the cluster files

def test_the_indexed_job_gives_its_count_once_and_the_sbatch_script_passes_its_arguments():
    import yaml

    from helpers.paths import PROJECT_ROOT

    job = yaml.safe_load((PROJECT_ROOT / "scripts/cluster/k8s_indexed_job.yaml").read_text())
    spec = job["spec"]
    (c,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert spec["completionMode"] == "Indexed" and int(env[_shard.COUNT_ENV]) == spec["completions"]
    assert c["command"][0] == "./run_all.sh" and env["CGB_OUTPUTS"] in {m["mountPath"] for m in c["volumeMounts"]}
    script = (PROJECT_ROOT / "scripts/cluster/slurm_array.sbatch").read_text()
    assert 'exec ./run_all.sh "$@"' in script and "#SBATCH --job-name" in script
    doc = (PROJECT_ROOT / "docs/cluster.md").read_text()
    assert "sbatch --array=0-3 scripts/cluster/slurm_array.sbatch" in doc
    assert "kubectl apply -f scripts/cluster/k8s_indexed_job.yaml" in doc
