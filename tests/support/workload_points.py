"""The points ``every_workload.py`` runs on each backend: every workload at a tiny size, each with the data the
tests of that workload check (a Keras cache file, an archive, synthetic), and the longer runs whose accuracy must
rise above chance. ``name`` is how a test finds its record (``workload_runs(backend)[name]``)."""

from pathlib import Path

from . import (
    FAST_COMPILE,
    INSTALLED,
    ONE,
    write_archive,
    write_cifar_cache,
    write_imdb_npz,
    write_mnist_cache,
    write_nietzsche,
)

CPU = {"device": "cpu"}
SMOKE = {"epochs": 2, "n_val": 0}
TINY = {"batch_size": 100, "epochs": 3, "n_train": 400, "data_source": "synthetic"}  # cnn_cifar10's full record
CATSDOGS_VARIANT = {"tensorflow": "improved", "jax": "original", "torch": "highres"}  # one variant each

# the backend whose vgg_cifar10 point shifts with Keras' RandomTranslation, the others with the suite's RandomShift:
# on TensorFlow it costs nothing more (2.0 s first epoch against 2.4 s), on JAX XLA compiles its map_coordinates
# (first epoch 20.9 s against 4.3 s with the suite's shift, measured on the 2-core machine)
KERAS_SHIFT = FAST_COMPILE

ACCURACY = [  # (workload, parameters): a few seconds each on FAST_COMPILE; chance is 0.1
    ("mlp_mnist", {"batch_size": 32, "n_train": 600, "epochs": 2}),  # 0.93 and 0.88 after 2 epochs on TensorFlow
    ("cnn_mnist", {"batch_size": 32, "n_train": 600, "epochs": 2}),
    ("vgg_cifar10", {"batch_size": 16, "n_train": 800, "epochs": 3, "augment": False}),
]


# Each backend's points run in a few processes (chunks), none long: a test's set-up stays short and the chunks
# spread over the test workers. A point not named here is in "small".
CHUNK = {"resnet50": "big", "catsdogs": "big", "catsdogs_archive": "big", "cnn_256": "cnn_256",
         "cnn_cifar10_accuracy": "accuracy", "catsdogs_accuracy": "accuracy",
         **{f"{w}_accuracy": "accuracy" for w, _ in ACCURACY}}


SOURCE_SIZE = "torch" if "torch" in INSTALLED else ONE  # the backend that trains cnn_256 at its source's size
# the backend that builds Keras models fastest on a CPU (JAX compiles every initialiser of a new shape): the
# parameter-count scripts, 2.5 s there against 22.7 s on JAX (measured on the 2-core machine)
BUILDS_FAST = "torch" if "torch" in INSTALLED else ONE


# Scripts a test would otherwise run in a fresh interpreter of its own (one framework import, 4-8 s, each), run
# instead after the points of a chunk of their backend (``every_workload.run_script``): name -> (backend, chunk, code)
SCRIPTS: dict[str, tuple[str, str, str]] = {}
# where a backend's scripts run unless a test names a chunk: JAX's small chunk is already the longest (XLA compiles
# every point), so JAX's scripts get an interpreter of their own (one more JAX start, not one per script)
SCRIPT_CHUNK = {"jax": "scripts"}


def script(name: str, backend: str, code: str, chunk: str | None = None) -> str:
    """Register ``code`` to run in ``backend``'s ``chunk`` (default: its small chunk, JAX's ``scripts``) — a test
    module does this when it is imported; the test reads what it printed with ``workload_runs(backend).script(name)``
    and carries ``xdist_group(script_group(name))``. Returns ``name``."""
    chunk = _scripts_chunk(backend, chunk)
    assert SCRIPTS.get(name, (backend, chunk, code)) == (backend, chunk, code), f"script {name!r} registered twice"
    SCRIPTS[name] = (backend, chunk, code)
    return name


def script_group(name: str) -> str:
    """The xdist group of the tests that read script ``name``: its chunk's."""
    backend, chunk, _ = SCRIPTS[name]
    return scripts_group(backend, chunk)


def scripts_group(backend: str, chunk: str | None = None) -> str:
    """The xdist group of ``backend``'s scripts run in ``chunk`` (default: where ``script`` puts them)."""
    return f"every-{backend}-{_scripts_chunk(backend, chunk)}"


def _scripts_chunk(backend: str, chunk: str | None) -> str:
    return chunk or SCRIPT_CHUNK.get(backend, "small")


def scripts_of(backend: str, chunk: str) -> list[dict]:
    return [{"name": n, "code": c} for n, (b, k, c) in SCRIPTS.items() if (b, k) == (backend, chunk)]


def chunk_of(name: str, backend: str | None = None) -> str:
    if name in SCRIPTS:
        return SCRIPTS[name][1]
    if name == "cnn_256" and backend is not None and backend != SOURCE_SIZE:
        return "small"
    return CHUNK.get(name, "small")


def group(backend: str, name: str) -> str:
    """The xdist group of the tests that read point ``name`` of ``backend``: one worker runs its chunk once."""
    return f"every-{backend}-{chunk_of(name, backend)}"


def by_backend(name: str) -> list:
    """``pytest.param(backend)`` for every installed backend, in the group of point ``name`` on it."""
    import pytest

    from . import INSTALLED

    return [pytest.param(b, marks=pytest.mark.xdist_group(group(b, name))) for b in INSTALLED]


def homes(root: Path) -> dict:
    """Keras cache folders, one per kind of data a point reads (``auto`` finds what is there)."""
    out = {k: root / k for k in ("empty", "mnist", "cifar", "imdb", "nietzsche")}
    for p in out.values():
        p.mkdir(parents=True, exist_ok=True)
    write_mnist_cache(out["mnist"], n_train=400, n_test=50)
    write_cifar_cache(out["cifar"])
    write_imdb_npz(out["imdb"])
    write_nietzsche(out["nietzsche"])
    write_archive(root / "cats-and-dogs")
    return out


def points(backend: str, root: Path, chunk: str | None = None) -> list[dict]:
    """The points of ``backend`` (those of ``chunk`` only, when given), their data written under ``root``."""
    h = homes(root)

    def pt(name, workload, home="empty", **prm):
        return {"name": name, "keras_home": str(h[home]),
                "params": {"workload": workload, "backend": backend, **CPU, **prm}}

    impl = "keras" if backend == KERAS_SHIFT else "matmul"  # Keras' RandomTranslation once, the suite's elsewhere
    out = [
        pt("cnn_cifar10", "cnn_cifar10", **TINY),
        pt("mlp_mnist", "mlp_mnist", "mnist", batch_size=50, n_train=300, data_source="real", **SMOKE),
        # two steps an epoch: what the tests read is the record, not the training (these two cost the most a step)
        pt("cnn_mnist", "cnn_mnist", batch_size=50, n_train=100, data_source="auto", **SMOKE),
        pt("vgg_cifar10", "vgg_cifar10", "cifar", batch_size=32, n_train=64, data_source="auto", augment=True,
           augment_impl=impl, **SMOKE),
        pt("resnet50", "resnet50", batch_size=4, n_train=8, image_size=32, data_source="auto", **SMOKE),
        # on one backend 256x256, the source's 58,091,396-parameter model (one step of 8 images per epoch, its own
        # process: the longest point); on the others the same network at 64x64, among the small points
        pt("cnn_256", "cnn_256", batch_size=8, epochs=2, n_train=8, data_source="synthetic",
           **({} if backend == SOURCE_SIZE else {"image_size": 64})),
        pt("catsdogs", "catsdogs", variant=CATSDOGS_VARIANT[backend], batch_size=16, epochs=2, n_train=48,
           data_source="synthetic", workers=2, augment=backend != "torch"),
        pt("fasttext_imdb", "fasttext_imdb", "imdb", batch_size=32, epochs=2, n_train=96, n_val=16,
           max_features=5000, maxlen=80, data_source="real"),
        pt("bilstm_imdb", "bilstm_imdb", batch_size=32, epochs=2, n_train=64, maxlen=12, data_source="synthetic"),
        pt("lstm_textgen", "lstm_textgen", "nietzsche", batch_size=64, epochs=2, n_train=128, maxlen=12,
           data_source="real", lstm_impl="generic"),
    ]
    if backend == ONE:
        out += [
            pt("cnn_cifar10_accuracy", "cnn_cifar10", batch_size=50, epochs=2, n_train=1000,
               data_source="synthetic"),
            pt("catsdogs_archive", "catsdogs", variant="original", batch_size=8, epochs=2, n_train=None, n_val=6,
               data_dir=str(root / "cats-and-dogs")),
            pt("catsdogs_accuracy", "catsdogs", variant="original", batch_size=32, epochs=2, n_train=320,
               data_source="synthetic"),
            # real data asked for, not cached, not reachable: the point fails in its data cell, its record says why
            pt("real_missing", "cnn_cifar10", batch_size=100, epochs=2, n_train=200, data_source="real"),
        ]
    if backend == FAST_COMPILE:
        out += [pt(f"{w}_accuracy", w, data_source="synthetic", n_val=0, **prm) for w, prm in ACCURACY]
    return [p for p in out if chunk is None or chunk_of(p["name"], backend) == chunk]
