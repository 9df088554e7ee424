"""TensorFlow's CUDA build where pip put it: the suite finds the ``nvidia/*/lib`` folders beside
tensorflow and loads them, names the library that keeps TF from the GPU, and the parts that carry TF to a GPU
machine without a package index reassemble byte for byte. No framework is imported."""

from __future__ import annotations

import importlib.util
import io
import json
import os
from pathlib import Path

import pytest
import yaml

from helpers import grid
from helpers.paths import PROJECT_ROOT
from helpers.point import nvidia_libs


def _tf_parts():
    spec = importlib.util.spec_from_file_location("tf_parts", PROJECT_ROOT / "scripts" / "offline_host" / "tf_parts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fake_site(root: Path, libs: dict[str, list[str]], tensorflow: bool = True) -> Path:
    """A ``--target`` folder: ``nvidia/<name>/lib/<files>`` and (optionally) a ``tensorflow`` package."""
    for name, files in libs.items():
        d = root / "nvidia" / name / "lib"
        d.mkdir(parents=True)
        for f in files:
            (d / f).write_bytes(b"\x7fELF")
    (root / "nvidia" / "cuda_nvcc" / "bin").mkdir(parents=True)  # a folder without lib/: not a library folder
    if tensorflow:
        (root / "tensorflow").mkdir()
        (root / "tensorflow" / "__init__.py").write_text("")
    return root


CU12 = {"cublas": ["libcublas.so.12", "libcublasLt.so.12", "libnvblas.so.12"],
        "cusolver": ["libcusolver.so.11", "libcusolverMg.so.11"], "nvjitlink": ["libnvJitLink.so.12"],
        "cudnn": ["libcudnn.so.9", "libcudnn_adv.so.9"], "cuda_runtime": ["libcudart.so.12"],
        "cufft": ["libcufft.so.11", "libcufftw.so.11"], "cusparse": ["libcusparse.so.12"]}


# ------------------------------------------------------------------ the library-path finder


def test_finder_lists_every_nvidia_lib_folder_beside_tensorflow(tmp_path):
    site = fake_site(tmp_path / "tfsite", CU12)
    other = fake_site(tmp_path / "torchsite", {"cudnn": ["libcudnn.so.9"]}, tensorflow=False)
    want = [site / "nvidia" / n / "lib" for n in sorted(CU12)]
    assert nvidia_libs.lib_dirs([str(site)]) == want
    assert nvidia_libs.lib_dirs(["", str(tmp_path / "none"), str(site), str(site)]) == want  # once each
    # only the folders beside the tensorflow that would be imported: another site's CUDA libraries stay out
    assert nvidia_libs.tensorflow_site([str(other), str(site)]) == site
    assert nvidia_libs.tensorflow_lib_dirs([str(other), str(site)]) == want
    assert nvidia_libs.tensorflow_lib_dirs([str(other)]) == []


def test_preload_loads_each_library_after_those_it_needs(tmp_path):
    site = fake_site(tmp_path, CU12)
    needs = {"libcusolver.so.11": {"libnvJitLink.so.12", "libcublas.so.12"}, "libcublas.so.12": {"libcublasLt.so.12"},
             "libcusparse.so.12": {"libnvJitLink.so.12"}}
    loaded: list[str] = []

    def loader(path):
        name = Path(path).name
        lacking = needs.get(name, set()) - set(loaded)
        if lacking:
            raise OSError(f"{sorted(lacking)[0]}: cannot open shared object file: No such file or directory")
        loaded.append(name)

    out = nvidia_libs.preload(nvidia_libs.tensorflow_lib_dirs([str(site)]), loader=loader)
    assert out["failed"] == {}
    assert set(out["loaded"]) == {"libcublas.so.12", "libcublasLt.so.12", "libcusolver.so.11", "libcusolverMg.so.11",
                                  "libnvJitLink.so.12", "libcudnn.so.9", "libcudart.so.12", "libcufft.so.11",
                                  "libcusparse.so.12"}  # not cuDNN's sub-libraries, nor NVBLAS or cuFFTW
    assert loaded.index("libnvJitLink.so.12") < loaded.index("libcusolver.so.11")
    assert loaded.index("libcublasLt.so.12") < loaded.index("libcublas.so.12") < loaded.index("libcusolver.so.11")
    assert len(out["dirs"]) == len(CU12)


def test_preload_reports_what_never_loads(tmp_path):
    site = fake_site(tmp_path, {"cusolver": ["libcusolver.so.11"]})

    def loader(path):
        raise OSError("libnvJitLink.so.12: cannot open shared object file: No such file or directory")

    out = nvidia_libs.preload(nvidia_libs.lib_dirs([str(site)]), loader=loader)
    assert out["loaded"] == [] and list(out["failed"]) == ["libcusolver.so.11"]
    assert "libnvJitLink.so.12" in out["failed"]["libcusolver.so.11"]
    assert nvidia_libs.preload([], loader=loader) == {"dirs": [], "loaded": [], "failed": {}}


# ------------------------------------------------------------------ the skip reason names the library

BUILD = {"is_cuda_build": True, "cuda_version": "12.5.1", "cudnn_version": "9"}


# TF 2.21's own log on an H100 lease, tensorflow in a --target folder and no preload (a lease's device log)
TF_LOG = """I0000 00:00:1795699280.333886    2559 dso_loader.cc:133] Successfully opened dynamic library libcufft.so.11
I0000 00:00:1795699280.334127    2559 dso_loader.cc:144] Could not load dynamic library 'libcusolver.so.11'; dlerror: \
libcusolver.so.11: cannot open shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/nvidia/lib64
W0000 00:00:1795699280.342090    2559 gpu_device.cc:2365] Cannot dlopen some GPU libraries. Please make sure the \
missing libraries mentioned above are installed properly if you would like to use GPU."""


def test_skip_reason_names_the_library_tf_could_not_load_and_the_fix(tmp_path):
    site = fake_site(tmp_path, CU12)
    dirs = nvidia_libs.tensorflow_lib_dirs([str(site)])
    why = nvidia_libs.reason_from_tf_log(TF_LOG, dirs)
    folder = next(d for d in dirs if (d / "libcusolver.so.11").is_file())
    assert why.startswith("tensorflow registers no GPU: it could not load libcusolver.so.11 (libcusolver.so.11: "
                          f"cannot open shared object file: No such file or directory), which is in {folder}, a "
                          "folder its own search path does not reach")
    assert "LD_LIBRARY_PATH" in why and "nvidia_libs" in why
    elsewhere = nvidia_libs.reason_from_tf_log(TF_LOG, dirs=[])  # no folder beside tensorflow holds it
    assert "could not load libcusolver.so.11" in elsewhere and "pip install 'tensorflow[and-cuda]'" in elsewhere
    assert nvidia_libs.reason_from_tf_log("I0000 Successfully opened dynamic library libcudart.so.12", dirs) is None


def test_skip_reason_for_a_library_no_folder_holds_and_for_a_cpu_build(tmp_path):
    def loader(name):
        if "cudnn" in name:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    why = nvidia_libs.no_gpu_reason(BUILD, dirs=[], loader=loader)
    assert "libcudnn.so.9 cannot be loaded" in why and "no nvidia/*/lib folder beside tensorflow" in why
    assert "pip install 'tensorflow[and-cuda]'" in why
    assert "CPU-only build" in nvidia_libs.no_gpu_reason({"is_cuda_build": False}, dirs=[], loader=loader)
    assert "its CUDA libraries load" in nvidia_libs.no_gpu_reason(BUILD, dirs=[], loader=lambda name: None)

    def no_driver(name):
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    assert nvidia_libs.no_gpu_reason(BUILD, dirs=[], loader=no_driver).startswith(
        "tensorflow registers no GPU: the NVIDIA driver's libcuda.so.1 cannot be loaded (libcuda.so.1: cannot open")
    assert nvidia_libs.expected_libs(BUILD)[-1] == "libcudnn.so.9"
    assert "libcusolver.so.11" in nvidia_libs.expected_libs(BUILD)


def test_the_probe_runs_in_a_fresh_process_and_names_the_library(tmp_path):
    """After TF gave up, its process holds what it loaded on the way: the probe runs in a fresh Python."""
    site = fake_site(tmp_path, {"cuda_runtime": ["libcudart.so.99"]})  # not a real library: dlopen refuses it
    why = nvidia_libs.probe_in_child({"is_cuda_build": True, "cuda_version": "99.0", "cudnn_version": "98"},
                                     dirs=nvidia_libs.tensorflow_lib_dirs([str(site)]), driver=None)
    assert why.startswith("tensorflow registers no GPU: libcudart.so.99 cannot be loaded ("), why
    assert why.endswith(nvidia_libs.FIX)


# ------------------------------------------------------------------ the parts


@pytest.mark.parametrize("size, part", [(10_000, 3_000), (9_000, 3_000), (5, 64), (0, 7)])
def test_parts_reassemble_byte_for_byte(tmp_path, size, part):
    tp = _tf_parts()
    src = tmp_path / "tf.tar.zst"
    data = os.urandom(size)
    src.write_bytes(data)
    manifest = tp.split_file(src, tmp_path / "parts", part)
    names = [p["name"] for p in manifest["parts"]]
    assert names == sorted(os.listdir(tmp_path / "parts")) and len(names) == max(1, -(-size // part))
    assert all(p["bytes"] <= part for p in manifest["parts"]) and sum(p["bytes"] for p in manifest["parts"]) == size
    assert manifest["whole"]["bytes"] == size
    out = io.BytesIO()
    assert tp.join_parts(json.loads(json.dumps(manifest)), tmp_path / "parts", out) == size
    assert out.getvalue() == data
    assert tp.missing_parts(manifest, tmp_path / "parts") == []


def test_parts_refuse_a_changed_or_missing_part(tmp_path):
    tp = _tf_parts()
    src = tmp_path / "whole"
    src.write_bytes(os.urandom(1000))
    folder = tmp_path / "parts"
    manifest = tp.split_file(src, folder, 300)
    tp.check_part(manifest, folder / "part01")
    bad = bytearray((folder / "part01").read_bytes())
    bad[7] ^= 1
    (folder / "part01").write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="part01"):
        tp.check_part(manifest, folder / "part01")
    with pytest.raises(ValueError, match="part01"):
        tp.join_parts(manifest, folder, io.BytesIO())
    (folder / "part02").unlink()
    assert tp.missing_parts(manifest, folder) == ["part02"]


def test_intake_moves_parts_out_of_the_tree_and_says_what_is_missing(tmp_path, capsys):
    tp = _tf_parts()
    src = tmp_path / "whole"
    src.write_bytes(os.urandom(700))
    carried, there = tmp_path / ".tfparts", tmp_path / "parts"
    manifest = tp.split_file(src, carried, 300)
    (carried / tp.MANIFEST).write_text(json.dumps(manifest))
    (carried / "part02").rename(tmp_path / "later")
    assert tp.main(["intake", str(carried), str(there)]) == 3
    assert not list(carried.glob("part*")) and sorted(p.name for p in there.glob("part*")) == ["part00", "part01"]
    assert "still to carry: part02" in capsys.readouterr().out
    (tmp_path / "later").rename(carried / "part02")
    assert tp.main(["intake", str(carried), str(there)]) == 0
    out = io.BytesIO()
    tp.join_parts(manifest, there, out)
    assert out.getvalue() == src.read_bytes()


def test_wheel_selection_and_the_default_part_size():
    tp = _tf_parts()
    names = ["tensorflow-2.21.0-cp312-cp312-manylinux_2_27_x86_64.whl",
             "nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl",
             "nvidia_nccl_cu12-2.32.3-py3-none-manylinux_2_27_x86_64.whl",
             "nvidia_cudnn_cu12-9.28.0.42-py3-none-manylinux_2_27_x86_64.whl",
             "gast-0.7.0-py3-none-any.whl", "google_pasta-0.2.0-py3-none-any.whl", "numpy-2.5.5-cp312.whl",
             "keras-3.15.1-py3-none-any.whl", "protobuf-7.36.2-cp310-abi3-manylinux2014_x86_64.whl"]
    assert tp.select_wheels(names) == sorted(n for n in names if not n.startswith(("nvidia_nccl", "numpy", "keras")))
    with pytest.raises(ValueError, match="two versions of gast"):
        tp.select_wheels([*names, "gast-0.6.0-py3-none-any.whl"])
    assert tp.default_part_bytes(23_000_000) == 64 * 2**20 - 23_000_000 - tp.MARGIN
    with pytest.raises(ValueError):
        tp.default_part_bytes(64 * 2**20)


def test_reference_tf_grid_has_the_ten_cells_on_the_gpu_and_their_cpu_twins():
    """params/reference_tf.yaml: params/reference.yaml's configurations on tensorflow, the same protocol."""
    ref = [p for p in grid.expand_all([PROJECT_ROOT / "params" / "reference.yaml"]) if p["backend"] == "jax"]
    tf = grid.expand_all([PROJECT_ROOT / "params" / "reference_tf.yaml"])
    assert {p["backend"] for p in tf} == {"tensorflow"}

    def key(p):
        return tuple(sorted((k, str(v)) for k, v in p.items() if k not in ("backend", "_grid")))

    assert sorted({key(p) for p in tf}) == sorted({key(p) for p in ref})
    assert sorted((p["device"], p["repeats"]) for p in tf) == [("cpu", 3)] * 10 + [("gpu", 5)] * 10
    raw = yaml.safe_load((PROJECT_ROOT / "params" / "reference_tf.yaml").read_text())
    assert raw["timeout_s"] == yaml.safe_load((PROJECT_ROOT / "params" / "reference.yaml").read_text())["timeout_s"]
