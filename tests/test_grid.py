"""Grid and parameter validation: bad input is answered before anything runs."""

import textwrap

import pytest

from helpers import grid, params


def write(tmp_path, text, name="g.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


GOOD = """
points:
  - workload: cnn_cifar10
    backend: [tensorflow, jax, torch]
    device: [cpu, gpu]
    batch_size: [100, 1000]
    epochs: 3
"""


def test_expand_product_and_defaults(tmp_path):
    pts = grid.expand(write(tmp_path, GOOD))
    assert len(pts) == 12
    p = pts[0]
    assert p["workload"] == "cnn_cifar10" and p["epochs"] == 3
    assert p["precision"] == "float32" and p["n_train"] == 5000  # common and workload defaults
    assert {q["batch_size"] for q in pts} == {100, 1000}
    assert set(params.COMMON) <= set(p)


def test_duplicates_collapse(tmp_path):
    text = GOOD + """
  - workload: cnn_cifar10
    backend: jax
    device: cpu
    batch_size: 100
    epochs: 3
"""
    assert len(grid.expand(write(tmp_path, text))) == 12


@pytest.mark.parametrize("text, needles", [
    ("points: [", ["invalid YAML"]),
    ("- a\n- b\n", ["mapping"]),
    ("pionts: []\n", ["unknown top-level key 'pionts'", "points"]),
    ("points: []\n", ["no points"]),
    ("description: x\n", ["no points"]),
    ("points:\n  - workload: nope\n    backend: jax\n    device: cpu\n", ["'workload'", "'nope'", "cnn_cifar10"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: mxnet\n    device: cpu\n", ["'backend'", "'mxnet'", "tensorflow"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: tpu\n", ["'device'", "'tpu'", "'gpu'"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    batch_size: 0\n", ["'batch_size'", ">= 1"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    batch_size: -5\n", ["'batch_size'"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    batch_size: '64'\n", ["'batch_size'", "str", "int"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    batch_size: 6.5\n", ["'batch_size'", "float"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    epochs: 1\n", ["'epochs'", ">= 2"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    batchsize: 64\n", ["unknown key 'batchsize'", "did you mean 'batch_size'"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    precision: fp8\n", ["'precision'", "mixed_bfloat16"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    jit_compile: yes_please\n", ["'jit_compile'"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    data_source: web\n", ["'data_source'", "synthetic"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: []\n    device: cpu\n", ["'backend'", "empty list"]),
    ("points:\n  - workload: cnn_cifar10\n    device: cpu\n", ["'backend'", "required"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    threads: -1\n", ["'threads'"]),
    ("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    epochs: true\n", ["'epochs'", "bool"]),
    ("timeout_s: 0\npoints:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n", ["'timeout_s'"]),
    ("points:\n  - 42\n", ["mapping"]),
])
def test_bad_grids_name_file_key_and_allowed(tmp_path, text, needles):
    path = write(tmp_path, text)
    with pytest.raises(grid.GridError) as err:
        grid.expand(path)
    msg = str(err.value)
    assert str(path) in msg
    for n in needles:
        assert n in msg, (n, msg)


def test_missing_file(tmp_path):
    with pytest.raises(grid.GridError, match="does not exist"):
        grid.expand(tmp_path / "nope.yaml")


def test_yaml_is_loaded_safely(tmp_path):
    path = write(tmp_path, "points: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(grid.GridError, match="invalid YAML"):
        grid.expand(path)


def test_committed_grids_are_valid():
    from helpers.paths import PARAMS

    for path in sorted(PARAMS.glob("*.yaml")):
        if path.name == "prices.yaml":
            continue
        assert grid.expand(path), path
