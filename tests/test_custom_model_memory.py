"""custom: a .keras file's config.json is bounded in what parsing it makes, not only in its bytes (defect 10).

Sixteen archives of 65 kB, each holding 16 MB of ``[{}, {}, ...]``, took ``--validate-only`` past 3.8 GB (each
parse ~400 MB of Python objects, all sixteen cached) and out with a MemoryError (exit 1). Now: refused by their
count of JSON values before the parse (exit 2, each file named with the reason), a config within the bound is
read once and only its summary kept, and a real model validates as before."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support import in_fresh_python

from helpers.paths import PROJECT_ROOT

CAP = 2**30  # the runner's address space (as test_hostile_bounds' caps): numpy and the grid code fit in it


def _keras_zip(path: Path, config: bytes, metadata: bytes = b"{}") -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("config.json", config)
        zf.writestr("metadata.json", metadata)
    return path


def _model(layers: bytes, extra: bytes = b"") -> bytes:
    return b'{"class_name": "Functional", "module": "keras", ' + extra + b'"config": {"name": "m", "layers": [' \
        + layers + b"]}}"


def _empties(n: int) -> bytes:
    return b",".join([b"{}"] * n)


def _grid(tmp_path: Path, files: list[Path]) -> Path:
    g = tmp_path / "g.yaml"
    g.write_text("points:\n" + "".join(f"  - {{workload: custom, backend: jax, device: cpu, model_path: {f}}}\n"
                                       for f in files))
    return g


def _validate(grid: Path, tmp_path: Path, timeout: float = 60.0):
    """``python -m helpers.runner GRID --validate-only`` under an address-space cap: (status, output, its own peak
    resident set in MB, seconds). The peak is the child's ``VmHWM`` read while it runs: ``wait4``'s ``ru_maxrss``
    keeps the forked pytest worker's size from before the exec (400 MB in a full run of the suite)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    out = tmp_path / "runner.out"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "CGB_OUTPUTS": str(tmp_path / "outputs")}
    t0 = time.perf_counter()
    with open(out, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "helpers.runner", str(grid), "--validate-only"],
                                cwd=PROJECT_ROOT, stdout=fh, stderr=subprocess.STDOUT, preexec_fn=limit, env=env)
    peak_kb = 0
    while True:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                peak_kb = max(peak_kb, next((int(x.split()[1]) for x in f if x.startswith("VmHWM")), 0))
        except OSError:
            pass
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > timeout:
            os.kill(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            pytest.fail(f"--validate-only ran past {timeout} s: {out.read_text()[-2000:]}")
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    return proc.returncode, out.read_text(), peak_kb // 1024, time.perf_counter() - t0


def test_sixteen_dense_configs_are_refused_with_exit_2_in_bounded_memory(tmp_path):
    from helpers.exits import Exit
    from helpers.workloads.custom_files import MAX_CONFIG_BYTES
    from helpers.workloads.custom_json import MAX_DEPTH, MAX_VALUES

    n = (MAX_CONFIG_BYTES - 200) // 3
    dense = [_keras_zip(tmp_path / f"dense{i}.keras", _model(_empties(n - i))) for i in range(16)]
    assert sum(f.stat().st_size for f in dense) < 2**20  # 16 MB of config each, 1 MB of archives in all
    deep = _keras_zip(tmp_path / "deep.keras", _model(b'{"a":' * 200_000 + b"{}" + b"}" * 200_000))
    deeper = _keras_zip(tmp_path / "deeper.keras", _model(b"[" * 500 + b"]" * 500))  # json.loads takes it
    status, out, peak_mb, took = _validate(_grid(tmp_path, [*dense, deep, deeper]), tmp_path)
    assert status == Exit.BAD_GRID, (status, out[-3000:])
    assert "Traceback" not in out and "MemoryError" not in out, out[-3000:]
    for f in dense:
        assert f"{f} has a config.json of up to " in out and f"more than {MAX_VALUES:,}" in out, out[-3000:]
    assert f"{deep} has a config.json nested too deeply" in out, out[-3000:]
    assert f"{deeper} has a config.json nested more than {MAX_DEPTH} levels deep" in out, out[-3000:]
    assert peak_mb < 300 and took < 60, (peak_mb, took)  # was a MemoryError at 3.8 GB (~400 MB a file)


def test_configs_within_the_bound_are_parsed_one_at_a_time_and_only_summaries_kept(tmp_path):
    """Five configs just within MAX_VALUES: two dense in their layers, three in their compile_config (which the
    summary keeps, 4 MB of JSON each: the three more than the cache holds): each parse is dropped once read, the
    cache stays within CACHE_BYTES; twice through each file."""
    from helpers.workloads.custom_json import MAX_VALUES

    n = (MAX_VALUES - 100) // 2
    files = [_keras_zip(tmp_path / f"layers{i}.keras", _model(_empties(n - i))) for i in range(2)]
    files += [_keras_zip(tmp_path / f"loss{i}.keras", _model(b"", b'"compile_config": {"optimizer": "adam", '
                                                             b'"loss": [' + _empties(n - i) + b"]}, "))
              for i in range(3)]
    code = f"""
import json
from helpers.workloads import custom_files as cf
for _ in range(2):
    for f in {[str(f) for f in files]!r}:
        info = cf.model_file(f)[1]
        assert "config" not in info["config"] and info["config"]["class_name"] == "Functional", info["config"].keys()
kept = sum(size for _, size in cf._CACHE.values())
peak = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM")) // 1024
print(json.dumps({{"kept": kept, "entries": len(cf._CACHE), "peak_mb": peak, "limit": cf.CACHE_BYTES}}))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert 0 < got["kept"] <= got["limit"] and 1 <= got["entries"] < len(files), got  # the oldest dropped first
    assert got["peak_mb"] < 500, got  # one parse (~140 MB at most) and the cache; these took 2.3 GB kept whole


def test_walks_are_flat_and_odd_configs_are_refused_not_crashed(tmp_path):
    from helpers.params import ParamError
    from helpers.workloads import custom_files, custom_json

    dense_lambda = {"class_name": "Dense", "config": {"name": "inner", "activation": {"class_name": "__lambda__"}}}
    cfg = {"class_name": "Functional", "config": {"name": "m", "layers": [
        {"class_name": "Bidirectional", "config": {"name": "wrap", "layer": dense_lambda}},
        {"class_name": "Lambda", "config": {"name": "lam", "function": {"class_name": "__lambda__"}}},
        {"class_name": "Twice", "module": None, "registered_name": "pkg>Twice", "config": {"name": "t"}},
        {"class_name": "B", "module": "mine", "config": {"name": "b", "layers": [
            {"class_name": "A", "module": "mine", "config": {"name": "a"}}]}}]}}
    assert custom_json.scan(cfg) == (["pkg>Twice", "B", "A"], ["inner (Dense)", "lam", "wrap (Bidirectional)"])
    deep = node = {}
    for _ in range(5_000):  # 15,000 levels (parse refuses more than MAX_DEPTH): walked without recursion
        node["layers"] = [{"class_name": "Dense", "config": {}}]
        node = node["layers"][0]["config"]
    assert len(custom_json.walk(deep)) == 10_001
    odd = {  # each crashed the grid's validation with a traceback (exit 1)
        "unhashable": b'{"class_name": "Functional", "module": "keras", "config": {"layers": [{"class_name": {}, '
                      b'"module": "x"}]}}',
        "int_layer": b'{"class_name": "Sequential", "module": "keras", "config": {"layers": [1]}}',
        "int_inputs": b'{"class_name": "Functional", "module": "keras", "config": {"layers": [], '
                      b'"input_layers": [1, 2]}}',
    }
    assert custom_files.model_file(str(_keras_zip(tmp_path / "u.keras", odd["unhashable"])))[1][
        "custom_objects"] == ["{}"]
    for name in ("int_layer", "int_inputs"):
        with pytest.raises(ParamError, match="inputs and outputs cannot be read"):
            custom_files.model_file(str(_keras_zip(tmp_path / f"{name}.keras", odd[name])))
    many = _model(b",".join(b'{"class_name": "Lambda", "config": {"name": "l%d"}}' % i for i in range(500)))
    with pytest.raises(ParamError, match=r"Lambda code in layers \(l0, l1, l10, .* and 480 more\)"):
        custom_files.model_file(str(_keras_zip(tmp_path / "many.keras", many)))


SAVE = """
import json, sys
import keras
from keras import layers
m = keras.Sequential([keras.Input((12,)), layers.Dense(16, activation="relu"), layers.Dense(4, activation="softmax")])
m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
m.save(sys.argv[1] if len(sys.argv) > 1 else {out!r})
r = keras.applications.ResNet50(weights=None)
r.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
b = json.dumps(keras.saving.serialize_keras_object(r)).encode()
print("JSON" + json.dumps({{"bytes": len(b), "values": 1 + sum(b.count(c) for c in b"[{{,:")}}))
"""


def test_a_real_model_validates_and_real_configs_sit_far_below_the_bound(tmp_path):
    from helpers.workloads import custom_checks, custom_files
    from helpers.workloads.custom_json import MAX_VALUES

    path = tmp_path / "clf.keras"
    got = json.loads(in_fresh_python(SAVE.format(out=str(path))).split("JSON", 1)[1])
    # ResNet-50: 18,012 values in 170 kB (9.4 bytes a value): MAX_VALUES is what 16 MB of such a config holds
    assert got["values"] * 50 < MAX_VALUES < custom_files.MAX_CONFIG_BYTES / 8, got
    status, out, peak_mb, _ = _validate(_grid(tmp_path, [path]), tmp_path)
    assert status == 0 and "1 points valid" in out, out[-3000:]
    info = custom_files.model_file(str(path))[1]
    assert info["config"]["class_name"] == "Sequential" and "config" not in info["config"]
    assert info["inputs"][0][1] == [None, 12] and info["n_outputs"] == 1 and info["custom_objects"] == []
    assert info["metadata"]["keras_version"] and info["has_weights"]
    picked = custom_checks.choices({"model_path": str(path)}, info)
    assert picked["loss_from"] == "saved compile config" and picked["label_space"] == "sparse"
