"""scripts/offline_host/tf_parts.py THERE trusts nothing it is carried (defect 11): a part named by a path, a
wheel in no manifest or unlike it, a destination that is a symlink or not ours, a FIFO, a symlinked part: each refused
with a message naming it (exit 2), nothing outside the folders read or written, nothing hangs; and the good path still
works.
Hostile runs go in a child Python with an audit hook that lists every event naming a file outside the folders."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from helpers.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "offline_host" / "tf_parts.py"
TOKEN = "OUTSIDE-7f3a"  # in the name of every file outside the folders: an audit event naming it is a touch
WHEEL = "zstandard-0.25.0-py3-none-any.whl"

CHILD = r"""
import importlib.util, os, sys, time
watch, script, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
spec = importlib.util.spec_from_file_location("tf_parts", script)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
touched = []
def hook(event, args):
    for a in args:
        try:
            text = os.fsdecode(a) if isinstance(a, (str, bytes, os.PathLike)) else repr(a)
        except Exception:
            continue
        if watch in text:
            touched.append(f"{event} {text}")
sys.addaudithook(hook)
t = time.perf_counter()
rc = mod.main(argv)
print(f"ELAPSED {time.perf_counter() - t:.4f}")
print("TOUCHED", touched)
sys.exit(rc)
"""


def _tp():
    spec = importlib.util.spec_from_file_location("tf_parts", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_main(*argv) -> tuple[subprocess.CompletedProcess, float, str]:
    """``tf_parts.main(argv)`` in a child Python (20 s at most): its result, the seconds main took, and the audit
    events that named a file outside the folders ("[]": none)."""
    res = subprocess.run([sys.executable, "-c", CHILD, TOKEN, str(SCRIPT), *map(str, argv)], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=20)
    lines = res.stdout.splitlines()
    elapsed = float(next(ln.split()[1] for ln in lines if ln.startswith("ELAPSED ")))
    touched = next(ln for ln in lines if ln.startswith("TOUCHED ")).split(" ", 1)[1]
    return res, elapsed, touched


def fake_wheel(path: Path, mark: str = "carried") -> Path:
    """A small pure-Python wheel of a package ``zstandard`` that pip installs offline."""
    files = {"zstandard/__init__.py": f"MARK = {mark!r}\n",
             "zstandard-0.25.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: zstandard\nVersion: 0.25.0\n",
             "zstandard-0.25.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                 "Tag: py3-none-any\n"}
    record = "zstandard-0.25.0.dist-info/RECORD"
    files[record] = "".join(f"{n},,\n" for n in [*files, record])
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def carried(tmp_path: Path, wheel: bool = False, data: bytes | None = None, compress: str = "none",
            wheels: tuple[str, ...] = ()):
    """A carried ``.tfparts`` as build leaves it: parts of 300 bytes and a manifest by the module's own functions
    (with the zstandard wheel listed if ``wheel``). Returns (module, folder, manifest, the whole's bytes)."""
    tp = _tp()
    data = os.urandom(1000) if data is None else data
    whole, folder = tmp_path / ("tf.tar.zst" if compress == "zstd" else "tf.tar"), tmp_path / ".tfparts"
    whole.write_bytes(data)
    manifest = tp.split_file(whole, folder, 300)
    manifest.update(compress=compress, wheels=sorted(wheels))
    whole.unlink()
    if wheel:
        fake_wheel(folder / WHEEL)
    tp.write_manifest(folder, manifest)
    return tp, folder, manifest, data


def snapshot(folder: Path) -> dict:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


# ------------------------------------------------------------------ a part named by a path


@pytest.mark.parametrize("bad", ["absolute", "dotdot", "separator"])
def test_a_part_named_by_a_path_is_refused_and_nothing_outside_is_read(tmp_path, bad):
    tp, folder, manifest, _ = carried(tmp_path)
    outside = tmp_path / "outside" / f"secret-{TOKEN}"
    outside.parent.mkdir()
    outside.write_bytes((folder / "part01").read_bytes())  # the same bytes: the checksums would let it through
    name = {"absolute": str(outside), "dotdot": f"../outside/secret-{TOKEN}",
            "separator": f"outside/secret-{TOKEN}"}[bad]
    if bad == "separator":
        (folder / "outside").symlink_to(outside.parent)
    manifest["parts"][1]["name"] = name
    with pytest.raises(tp.Refused, match="not a plain file name"):
        tp.write_manifest(folder, manifest)  # build never writes one
    (folder / tp.MANIFEST).write_text(json.dumps(manifest))
    there = tmp_path / "parts"
    shutil.copytree(folder, there, symlinks=True)
    before = snapshot(outside.parent)
    for argv in (["intake", folder, tmp_path / "dst"], ["missing", there], ["assemble", there, tmp_path / "out"]):
        res, _, touched = run_main(*argv)
        assert res.returncode == 2, (argv, res.stdout, res.stderr)
        assert f"part {name!r}: not a plain file name" in res.stderr and "refused" in res.stderr
        assert touched == "[]", touched
    assert snapshot(outside.parent) == before
    assert sorted(p.name for p in folder.glob("part*")) == ["part00", "part01", "part02", "part03"]  # none moved
    assert not (tmp_path / "dst").exists() or os.listdir(tmp_path / "dst") == []
    assert not (tmp_path / "out").exists()
    with pytest.raises(tp.Refused, match="not a plain file name"):
        tp.join_parts(manifest, there, io.BytesIO())


@pytest.mark.parametrize("name", ["/etc/passwd", "../part01", "part01/../../x", "sub/part01", "part01\\x", "", ".",
                                  "..", "part01\n", "part\x0001", "PART01", ".part01", "part", 7, None])
def test_only_plain_part_names_pass(tmp_path, name):
    tp, _, manifest, _ = carried(tmp_path)
    assert tp.validate_manifest(json.loads(json.dumps(manifest))) == manifest
    manifest["parts"][0]["name"] = name
    with pytest.raises(tp.Refused) as e:
        tp.validate_manifest(manifest)
    assert f"part {name!r}: not a plain file name" in str(e.value)


@pytest.mark.parametrize("key, name", [("zstandard", "/tmp/zstandard-0.25.0-py3-none-any.whl"),
                                       ("zstandard", "../zstandard-0.25.0-py3-none-any.whl"),
                                       ("zstandard", "other-1.0-py3-none-any.whl"), ("wheels", "../x.whl"),
                                       ("whole", "/tmp/tf.tar")])
def test_the_manifest_s_other_names_are_plain_too(tmp_path, key, name):
    tp, _, manifest, _ = carried(tmp_path, wheel=True)
    if key == "wheels":
        manifest["wheels"] = [name]
    else:
        manifest[key]["name"] = name
    with pytest.raises(tp.Refused, match="not a plain file name"):
        tp.validate_manifest(manifest)


# ------------------------------------------------------------------ the zstandard wheel


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """tempfile's folder, here: what install_zstandard leaves behind is seen."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(d))
    return d


def no_pip(*a, **k):
    raise AssertionError(f"pip ran: {a}")


def test_a_zstandard_wheel_in_no_manifest_is_refused(tmp_path, private_tmp, monkeypatch):
    tp, folder, manifest, _ = carried(tmp_path)  # the manifest lists no wheel
    assert "zstandard" not in manifest
    fake_wheel(folder / WHEEL)
    res, _, _ = run_main("intake", folder, tmp_path / "dst")
    assert res.returncode == 2 and f"{WHEEL}: a wheel in no manifest" in res.stderr, res.stderr
    assert sorted(os.listdir(tmp_path / "dst")) == ["manifest.json"]  # neither the wheel nor a part went in
    assert len(list(folder.glob("part*"))) == 4
    monkeypatch.setattr(tp.subprocess, "run", no_pip)
    with pytest.raises(tp.Refused, match=f"{WHEEL}: a wheel in no manifest"):
        tp.install_zstandard(manifest, folder)
    assert os.listdir(private_tmp) == []


@pytest.mark.parametrize("change", ["byte", "size"])
def test_a_zstandard_wheel_unlike_the_manifest_s_is_refused(tmp_path, private_tmp, monkeypatch, change):
    tp, folder, manifest, _ = carried(tmp_path, wheel=True)
    assert manifest["zstandard"]["name"] == WHEEL and manifest["zstandard"]["bytes"] == (folder / WHEEL).stat().st_size
    data = bytearray((folder / WHEEL).read_bytes())
    if change == "byte":
        data[40] ^= 1
    else:
        data += b"\0"
    (folder / WHEEL).write_bytes(bytes(data))
    for p in folder.glob("part*"):
        p.unlink()  # the wheel alone, carried with a later call
    dst = tmp_path / "dst"
    res, _, _ = run_main("intake", folder, dst)
    assert res.returncode == 2 and f"{WHEEL}: " in res.stderr and "the manifest says" in res.stderr, res.stderr
    assert sorted(os.listdir(dst)) == ["manifest.json"]  # no wheel, no temporary file left
    monkeypatch.setattr(tp.subprocess, "run", no_pip)
    with pytest.raises(tp.Refused, match="the manifest says"):
        tp.install_zstandard(manifest, folder)
    assert os.listdir(private_tmp) == []  # the private folder it was copied into: removed


def test_the_listed_wheel_is_installed_into_a_fresh_private_folder(tmp_path, private_tmp):
    tp, folder, manifest, _ = carried(tmp_path, wheel=True)
    dst = tmp_path / "dst"
    res, _, _ = run_main("intake", folder, dst)
    assert res.returncode == 0 and f"wheel {WHEEL}" in res.stdout, res.stdout + res.stderr
    assert (dst / WHEEL).read_bytes() == (folder / WHEEL).read_bytes()
    sites = [tp.install_zstandard(manifest, dst) for _ in range(2)]
    assert sites[0] != sites[1] and all(s.parent.parent == private_tmp for s in sites)  # fresh, not /tmp/zstd-site
    for site in sites:
        assert stat.S_IMODE(site.parent.stat().st_mode) == 0o700 and site.parent.stat().st_uid == os.geteuid()
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import zstandard; "
                          "print(zstandard.MARK, zstandard.__file__)", str(sites[0])], capture_output=True, text=True,
                         timeout=20, check=True).stdout
    assert out.startswith(f"carried {sites[0]}")


# ------------------------------------------------------------------ the destination


def test_a_symlinked_destination_is_refused_and_its_target_left_untouched(tmp_path):
    tp, folder, _, _ = carried(tmp_path)
    victim = tmp_path / f"victim-{TOKEN}"
    victim.mkdir()
    (victim / "manifest.json").write_bytes(b"precious manifest\n")
    (victim / "part00").write_bytes(b"precious part\n")
    before = snapshot(victim)
    dst = tmp_path / "parts"
    dst.symlink_to(victim)
    for argv in (["intake", folder, dst], ["missing", dst], ["assemble", dst, tmp_path / "out"]):
        res, _, touched = run_main(*argv)
        assert res.returncode == 2 and f"{dst}: a symbolic link, not a folder: refused" in res.stderr, res.stderr
        assert touched == "[]"
    assert snapshot(victim) == before and os.readlink(dst) == str(victim)
    assert len(list(folder.glob("part*"))) == 4  # nothing moved
    dst.unlink()
    dst.symlink_to(victim / "part00")  # a symlink to a file
    res, _, _ = run_main("intake", folder, dst)
    assert res.returncode == 2 and "a symbolic link, not a folder" in res.stderr
    assert snapshot(victim) == before


def test_symlinks_inside_the_destination_are_replaced_never_written_through(tmp_path):
    tp, folder, manifest, data = carried(tmp_path)
    victim = tmp_path / f"victim-{TOKEN}"
    victim.mkdir()
    (victim / "a").write_bytes(b"precious a\n")
    (victim / "b").write_bytes(b"precious b\n")
    before = snapshot(victim)
    dst = tmp_path / "parts"
    dst.mkdir(mode=0o700)
    (dst / "manifest.json").symlink_to(victim / "a")
    (dst / "part00").symlink_to(victim / "b")
    res, _, touched = run_main("intake", folder, dst)
    assert res.returncode == 0, res.stdout + res.stderr
    assert touched == "[]" and snapshot(victim) == before
    assert not (dst / "manifest.json").is_symlink() and not (dst / "part00").is_symlink()
    assert json.loads((dst / "manifest.json").read_text()) == manifest
    out = io.BytesIO()
    tp.join_parts(manifest, dst, out)
    assert out.getvalue() == data
    assert sorted(os.listdir(dst)) == ["manifest.json", "part00", "part01", "part02", "part03"]  # no temp left


def test_a_destination_not_ours_or_open_to_others_is_refused(tmp_path):
    _, folder, _, _ = carried(tmp_path)
    dst = tmp_path / "parts"
    dst.write_bytes(b"a file\n")
    res, _, _ = run_main("intake", folder, dst)
    assert res.returncode == 2 and f"{dst}: a regular file, not a folder: refused" in res.stderr, res.stderr
    assert dst.read_bytes() == b"a file\n"
    dst.unlink()
    dst.mkdir()
    dst.chmod(0o777)
    res, _, _ = run_main("intake", folder, dst)
    assert res.returncode == 2 and "mode 777: not a folder of ours" in res.stderr and os.listdir(dst) == []
    if os.geteuid() == 0:  # a folder someone else made first under the fixed name
        dst.chmod(0o755)
        os.chown(dst, 65534, 65534)
        res, _, _ = run_main("intake", folder, dst)
        assert res.returncode == 2 and "owned by uid 65534" in res.stderr and os.listdir(dst) == []
    assert len(list(folder.glob("part*"))) == 4


# ------------------------------------------------------------------ files that are not regular files


@pytest.mark.parametrize("which", ["part01", "manifest.json", WHEEL])
def test_a_fifo_is_refused_at_once(tmp_path, which):
    _, folder, _, _ = carried(tmp_path, wheel=True)
    (folder / which).unlink()
    os.mkfifo(folder / which)
    res, elapsed, _ = run_main("intake", folder, tmp_path / "dst")  # timeout=20: a hang fails the test
    assert res.returncode == 2 and f"{folder}/{which}: a FIFO, not a regular file: refused" in res.stderr, res.stderr
    assert elapsed < 1.0, elapsed


def test_a_fifo_in_the_parts_folder_is_missing_not_read(tmp_path):
    tp, folder, manifest, _ = carried(tmp_path)
    there = tmp_path / "parts"
    shutil.copytree(folder, there)
    (there / "part02").unlink()
    os.mkfifo(there / "part02")
    res, elapsed, _ = run_main("assemble", there, tmp_path / "out")
    assert res.returncode == 3 and "still to carry: part02" in res.stdout and elapsed < 1.0
    with pytest.raises(tp.Refused, match="part02: a FIFO, not a regular file"):
        tp.join_parts(manifest, there, io.BytesIO())
    with pytest.raises(tp.Refused, match="a FIFO, not a regular file"):
        tp.check_part(manifest, there / "part02")


def test_a_symlinked_part_is_refused_unread(tmp_path):
    _, folder, _, _ = carried(tmp_path)
    outside = tmp_path / f"copy-{TOKEN}"
    (folder / "part01").rename(outside)  # the right bytes, reached through a link
    (folder / "part01").symlink_to(outside)
    res, _, touched = run_main("intake", folder, tmp_path / "dst")
    assert res.returncode == 2 and f"{folder}/part01: a symbolic link, not a regular file" in res.stderr, res.stderr
    assert touched == "[]" and (folder / "part01").is_symlink()
    assert not (tmp_path / "dst" / "part01").exists()


# ------------------------------------------------------------------ the good path


@pytest.mark.parametrize("compress", ["none", "zstd"])
def test_the_good_path_intake_in_calls_then_assemble(tmp_path, compress):
    if compress == "zstd" and not shutil.which("zstd"):
        pytest.skip("no zstd command")
    wheels = {"a-1.0-py3-none-any.whl": os.urandom(700), "b-2.0-py3-none-any.whl": os.urandom(500)}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, body in wheels.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    data = buf.getvalue()
    if compress == "zstd":
        data = subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout
    tp, folder, manifest, _ = carried(tmp_path, wheel=True, data=data, compress=compress, wheels=tuple(wheels))
    later = tmp_path / "later"
    later.mkdir()
    (folder / "part01").rename(later / "part01")
    dst = tmp_path / "parts"
    res, _, _ = run_main("intake", folder, dst)
    assert res.returncode == 3 and "still to carry: part01" in res.stdout, res.stdout + res.stderr
    assert stat.S_IMODE(dst.stat().st_mode) == 0o700
    (later / "part01").rename(folder / "part01")
    res, _, _ = run_main("intake", folder, dst)
    assert res.returncode == 0 and "parts here: " in res.stdout, res.stdout + res.stderr
    assert not list(folder.glob("part*"))  # moved out of the tree
    assert run_main("missing", dst)[0].returncode == 0
    out = tmp_path / "tfwheels"
    res, _, _ = run_main("assemble", dst, out)
    assert res.returncode == 0, res.stdout + res.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == wheels
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
