"""One writer of records (``helpers.record.writer.write_record``), each record written once. Every Python process of
the shared run (the runner of each shard, every kernel, the resume) logs each file it opens for writing or renames
into a records folder (``support/record_audit``: an audit hook, PEP 578, loaded at each interpreter's start), with
whether ``write_record`` made it; the runner-started processes of a 2-process point are followed the same way
(tests/test_launch.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import record_audit

from helpers.paths import PROJECT_ROOT


@pytest.mark.xdist_group("shared_run")
def test_the_shared_run_wrote_each_record_once_through_the_one_writer(shared_run):
    shared_run.records  # noqa: B018 - every shard ran
    assert shared_run.again.returncode == 0  # and the resume (nothing to run again: nothing written)
    seen = record_audit.assert_one_writer_each_record_once(shared_run.audit, [shared_run.outputs])
    kernels = {w["pid"] for w in seen if "ipykernel_launcher" in " ".join(w["argv"])}
    runners = {w["pid"] for w in seen if w["pid"] not in kernels}
    assert runners and not kernels, "the kernels stage their records; the runner writes them"


def test_the_audit_catches_a_record_written_by_other_code(tmp_path):
    """The check above cannot pass by missing writes: a file written into a records folder by hand is caught, and
    a record written twice is counted twice."""
    code = ("import sys; from pathlib import Path; from helpers.record import writer\n"
            "from helpers.record.schema import empty_record\n"
            "d = Path(sys.argv[1]); (d / 'by_hand.json').write_text('{}')\n"
            "r = empty_record({'workload': 'mlp_mnist', 'backend': 'jax', 'device': 'cpu'}, 'abc')\n"
            "r['status'] = 'ok'\n"
            "writer.write_record(r, d); writer.write_record(r, d)\n")
    records = tmp_path / "runs" / "r1" / "records"
    records.mkdir(parents=True)
    log = tmp_path / "audit.jsonl"
    env = {**record_audit.environment(log), "PATH": "/usr/bin:/bin"}
    env["PYTHONPATH"] += f":{PROJECT_ROOT}"
    subprocess.run([sys.executable, "-c", code, str(records)], check=True, env=env, cwd=tmp_path, timeout=60)
    with pytest.raises(AssertionError, match="by other code than write_record"):
        record_audit.assert_one_writer_each_record_once(log, [tmp_path])
    (records / "by_hand.json").unlink()
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines() if "by_hand" not in line))
    with pytest.raises(AssertionError, match="written more than once"):
        record_audit.assert_one_writer_each_record_once(log, [tmp_path])


def test_the_record_type_names_every_key_a_record_must_have():
    from helpers.record.schema import REQUIRED_KEYS, SCHEMA, Record, empty_record
    from helpers.record.writer import write_record

    runner_keys = ["wall_s", "repeat", "config_id"]
    reader_keys = ["protocol", "caveats"]  # helpers.record.upgrade: set on read, never written
    assert list(Record.__annotations__) == [*REQUIRED_KEYS, *runner_keys, *reader_keys]
    rec = empty_record({"workload": "mlp_mnist", "backend": "jax", "device": "cpu"}, "abc")
    assert rec["schema"] == SCHEMA and set(rec) >= set(REQUIRED_KEYS)
    with pytest.raises(ValueError, match="status must be one of"):
        write_record(rec, Path("/nonexistent"))  # status still None: refused before anything is written
    del rec["history"]
    with pytest.raises(KeyError, match="history"):
        write_record({**rec, "status": "ok"}, Path("/nonexistent"))


def test_the_reader_returns_every_record_in_the_current_shape(tmp_path):
    """An older record is upgraded on read, in the reader only: its protocol and caveats said in fields of their
    own, the knobs added after it was written at the value it ran at (a workload's own only where it has it); its
    schema kept as written."""
    import json

    from helpers.record.reader import read_records
    from helpers.record.upgrade import CURRENT, EARLIER, ENERGY_MEDIAN, TIMING
    from helpers.record.writer import write_atomic
    from helpers.report.load.table import workload_knobs

    base = {"point_id": "p", "workload": "cnn_cifar10", "backend": "jax", "device": "cpu", "device_used": "cpu",
            "status": "ok", "reason": None, "data_source": "synthetic", "n_train": 100, "batch_size": 10,
            "epochs": 2, "first_epoch_s": 1.0, "epoch_s": [1.0], "median_epoch_s": 1.0, "step_s": 0.1,
            "samples_per_s": 100.0, "history": {}, "utilisation": {}, "energy_j_per_epoch": None,
            "fingerprint": {}, "started_at": "2026-01-01T00:00:00", "duration_s": 2.0, "notebook": None}
    write_atomic(tmp_path / "v1.json", {**base, "schema": 1, "point_id": "a", "params": {"precision": "float32"}})
    write_atomic(tmp_path / "v2.json", {**base, "schema": 2, "point_id": "b", "params": {},
                                        "energy_method": "nvml_energy_counter", "workload": "bilstm_imdb"})
    write_atomic(tmp_path / "v4.json", {**base, "schema": 4, "point_id": "c", "params": {"gpus": 2}})
    recs = {r["point_id"]: r for r in read_records([tmp_path], workload_knobs)[0]}
    assert (recs["a"]["schema"], recs["a"]["protocol"], recs["a"]["caveats"]) == (1, EARLIER, [TIMING])
    assert (recs["b"]["protocol"], recs["b"]["caveats"]) == (CURRENT, [ENERGY_MEDIAN])
    assert (recs["c"]["protocol"], recs["c"]["caveats"]) == (CURRENT, [])
    assert recs["a"]["params"]["input_dtype"] == "float32" and recs["a"]["params"]["gpus"] == 1  # ran so
    assert "input_dtype" not in recs["b"]["params"]  # bilstm_imdb has no such knob
    assert recs["c"]["params"]["gpus"] == 2  # as written
    # the file on disk is never touched
    assert "protocol" not in json.loads((tmp_path / "v1.json").read_text())
