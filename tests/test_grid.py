"""Grid and parameter validation: bad input is answered before anything runs."""

import textwrap

import pytest

from helpers import grid, params
from helpers.runner import notebook as execute


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
        if path.name in ("prices.yaml", "peaks.yaml"):  # not grids: prices per machine, GPU peaks
            continue
        assert grid.expand(path), path


# ------------------------------------------------------------------ repeats and sizes (issues 14, 18)

BLOCK = "  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n"


@pytest.mark.parametrize("value", ["0", "-2", "1.5", "'2'", "true", "null", "[1, 2]"])
@pytest.mark.parametrize("place", ["top", "defaults", "block"])
def test_bad_repeats_are_refused_naming_file_block_key_and_allowed(tmp_path, place, value):
    text = {"top": f"repeats: {value}\npoints:\n{BLOCK}",
            "defaults": f"defaults: {{repeats: {value}}}\npoints:\n{BLOCK}",
            "block": f"points:\n{BLOCK}    repeats: {value}\n"}[place]
    path = write(tmp_path, text)
    with pytest.raises(grid.GridError) as err:
        grid.sizes([path])  # refused before anything is counted, expanded or run
    msg = str(err.value)
    assert str(path) in msg and "key 'repeats'" in msg and "allowed: an integer >= 1" in msg, msg
    line = {"top": 1, "defaults": 1, "block": 5}[place]  # file:line of the key
    assert msg.startswith(f"{path}:{line}: " + {"top": "", "defaults": "defaults: ", "block": "points[1]: "}[place]
                          + "key 'repeats'"), msg
    with pytest.raises(grid.GridError, match="'repeats'"):
        grid.expand(path)


def test_repeats_top_defaults_block_and_the_interleaved_order(tmp_path):
    path = write(tmp_path, """
        repeats: 5
        defaults: {repeats: 2}
        points:
          - workload: cnn_cifar10
            backend: jax
            device: cpu
            seed: [1, 2]
          - workload: mlp_mnist
            backend: jax
            device: cpu
            repeats: 3
          - workload: cnn_mnist
            backend: jax
            device: cpu
            repeats: 1
        """)
    pts = grid.expand(path)
    assert [(p["workload"], p["repeats"]) for p in pts] == [("cnn_cifar10", 2), ("cnn_cifar10", 2),
                                                          ("mlp_mnist", 3), ("cnn_mnist", 1)]
    assert all("repeats" not in execute.notebook_params(p) for p in pts)  # a runner key, not a parameter
    order = [(p["workload"], p.get("seed"), p["_repeat"]) for p in grid.runs(pts)]
    # every configuration once, then again: round r holds those with repeats > r
    assert order == [("cnn_cifar10", 1, 0), ("cnn_cifar10", 2, 0), ("mlp_mnist", 0, 0), ("cnn_mnist", 0, 0),
                     ("cnn_cifar10", 1, 1), ("cnn_cifar10", 2, 1), ("mlp_mnist", 0, 1),
                     ("mlp_mnist", 0, 2)]
    assert [b.runs for b in grid.sizes([path])] == [4, 3, 1]
    assert grid.expand(write(tmp_path, "repeats: 4\npoints:\n" + BLOCK, "top.yaml"))[0]["repeats"] == 4
    assert grid.expand(write(tmp_path, "points:\n" + BLOCK, "none.yaml"))[0]["repeats"] == 1


def test_a_point_given_by_two_blocks_runs_the_larger_repeats(tmp_path):
    path = write(tmp_path, f"points:\n{BLOCK}    repeats: 2\n{BLOCK}    repeats: 3\n{BLOCK}")
    (p,) = grid.expand(path)
    assert p["repeats"] == 3 and len(grid.runs([p])) == 3


def test_blocks_are_counted_before_they_are_expanded(tmp_path, monkeypatch):
    twenty = list(range(1, 21))
    path = write(tmp_path, f"points:\n{BLOCK}    batch_size: {twenty}\n    n_train: {twenty}\n"
                           f"    seed: {twenty}\n    n_val: {twenty}\n    repeats: 2\n  - workload: mlp_mnist\n"
                           "    backend: [jax, torch]\n    device: cpu\n")

    def no_product(*a):
        raise AssertionError("expanded")

    monkeypatch.setattr(grid.points.itertools, "product", no_product)
    big, small = grid.sizes([path])
    assert big.runs == 20 ** 4 * 2 and big.lists == {"batch_size": 20, "n_train": 20, "seed": 20, "n_val": 20}
    assert small.runs == 2 and small.lists == {"backend": 2}
    assert "points[1]: 320,000 runs (batch_size 20 x n_train 20 x seed 20 x n_val 20 x repeats 2)" in big.describe()
    with pytest.raises(grid.GridError, match=r"points\[1\]: 320,000 runs .*more than 100,000 runs in one block"):
        grid.expand(path)  # even with --yes: refused, not expanded


def test_estimate_rests_on_the_same_kind_else_every_record_else_none():
    def rec(workload, backend, wall):
        return {"workload": workload, "backend": backend, "device": "cpu", "wall_s": wall}

    runs = [{"workload": "cnn_cifar10", "backend": "jax", "device": "cpu"}] * 2 + \
           [{"workload": "mlp_mnist", "backend": "torch", "device": "cpu"}]
    assert not grid.estimate(runs, []).known and grid.estimate(runs, []).none == 3
    assert "no time estimate" in grid.estimate(runs, []).describe()
    recs = [rec("cnn_cifar10", "jax", 10.0), rec("cnn_cifar10", "jax", 30.0), rec("cnn_cifar10", "jax", 20.0),
            rec("vgg_cifar10", "jax", 100.0)]
    est = grid.estimate(runs, recs)
    # cnn_cifar10/jax: median 20 s each; mlp_mnist/torch: none of its kind, the median of all 4 (25 s)
    assert est.seconds == 2 * 20.0 + 25.0 and (est.same, est.other, est.none) == (2, 1, 0)
    text = est.describe()
    assert "estimated 65 s" in text and "2 run(s) at the median wall time of earlier runs of the same workload" \
        in text and "(3 record(s))" in text and "1 at the median of every earlier run (25.0 s, 4 record(s))" in text
    assert grid.fmt_duration(3 * 3600 + 600) == "3.2 h" and grid.fmt_duration(450) == "7.5 min"


def test_each_knob_added_later_ran_at_its_own_default():
    """LATER_DEFAULTS (the value a record written before a knob existed ran at) takes each common knob's default
    from COMMON; the image workloads' input_dtype is each one's default: one default a knob."""
    from helpers import workloads
    from helpers.params import COMMON_DEFAULTS, LATER_DEFAULTS
    from helpers.report.derive.protocol import MIN_STEADY_S

    assert all(LATER_DEFAULTS[k] == COMMON_DEFAULTS[k] for k in LATER_DEFAULTS if k in COMMON_DEFAULTS)
    image = [n for n in workloads.names() if "input_dtype" in workloads.knobs(n)]
    assert image and {workloads.defaults(n)["input_dtype"] for n in image} == {LATER_DEFAULTS["input_dtype"]}
    assert MIN_STEADY_S == COMMON_DEFAULTS["min_steady_s"]
