"""TensorFlow's CUDA build, carried in parts to your GPU machine that cannot reach the internet.

The setting (scripts/offline_host/README.md): a GPU machine that reaches no package index and takes uploads of at
most N MiB each (64 by default), the checkout of this project included in each upload. HERE is a machine of yours
with pip and a package index; THERE is that GPU machine.

HERE::

    python3 scripts/offline_host/tf_parts.py build [--upload-mib N] [--part-bytes N] [--compress zstd|none]

downloads ``tensorflow[and-cuda]==2.21.0`` for the GPU machine's Python (``PYTHON_VERSION``: cp312; manylinux
x86-64) into ``.tfwheels/``, keeps tensorflow, the ``nvidia-*-cu12`` wheels except NCCL (one GPU needs none) and
TF's small needs that a Python with jax and torch but no TensorFlow lacks (``EXTRAS``), one version of each;
rewrites each wheel uncompressed (still a wheel: pip installs it as it is) so that one compressor sees the
libraries whole (zstd takes the CUDA wheels to about 60% of their deflated size: fewer parts, fewer uploads);
writes one tar of them (``tf.tar.zst``, or ``tf.tar`` with ``--compress none``), splits it into
``.tfparts/partNN`` of ``--part-bytes`` each and writes ``.tfparts/manifest.json`` (the parts' names, sizes and
sha256, the whole's, the wheels inside). The default part size is what one upload still takes beside the checkout
that goes with it: ``--upload-mib`` less the checkout (``git ls-files``, tracked and untracked-not-ignored) less
``MARGIN``; it is computed and printed.

THERE (stdlib only, called by ``scripts/offline_host/tf_gpu.sh``)::

    python3 scripts/offline_host/tf_parts.py intake .tfparts /tmp/parts   # move uploaded parts out, check them
    python3 scripts/offline_host/tf_parts.py missing /tmp/parts           # the parts still to upload (exit 3 if any)
    python3 scripts/offline_host/tf_parts.py assemble /tmp/parts /tmp/tfwheels   # checksums, join, untar

Decompression uses the ``zstd`` command where there is one, else the Python package ``zstandard`` (its wheel is
saved beside the parts, ``.tfparts/zstandard-*.whl``, and listed in the manifest with its size and sha256, to
upload where neither exists).

THERE trusts nothing it is carried (``Refused``: the message, exit 2): a manifest's part is a plain name
(``partNN``: no absolute path, no ``..``, no separator), its other names plain file names; a file is read only if it
is a regular file (``lstat``, then ``O_NOFOLLOW|O_NONBLOCK`` and ``fstat``: a symlink, a FIFO or a device is refused,
nothing blocks) of the manifest's size and sha256; a folder is opened ``O_NOFOLLOW`` (a symlink is refused) and the
parts' folder must be ours, written by no one else (``intake`` makes it 0700); what intake writes goes through a
fresh exclusive name renamed over the old (a symlink already there is replaced, never followed); the zstandard wheel
is installed only if the manifest lists it, checked while it is copied into a fresh ``tempfile.mkdtemp`` folder.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tensorflow[and-cuda]==2.21.0"
PYTHON_VERSION = "3.12"  # the GPU machine's Python (change it to yours)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
# TF's needs that a GPU machine with jax and torch installed lacks or holds at a version TF refuses (the suite's own
# wheels, .whl/, bring keras, optree, namex and the rest; such a machine has numpy, ml_dtypes, grpcio, wrapt, six,
# absl-py ...)
EXTRAS = ("astunparse", "gast", "google_pasta", "libclang", "termcolor", "flatbuffers", "h5py", "protobuf")
DROPPED = ("nvidia_nccl_cu12",)  # collectives: one GPU needs none (351 MB)
ZSTANDARD = "zstandard==0.25.0"  # the decompressor's Python package, for a machine without the zstd command
UPLOAD_BYTES = 64 * 2**20  # what one upload to the GPU machine takes by default, the checkout included
MARGIN = 3 * 2**20  # for the manifest and what the checkout gains between now and the uploads
MANIFEST = "manifest.json"
MANIFEST_MAX = 16 * 2**20  # a manifest is a few kB: a larger one is refused unread
CHUNK = 1 << 20
PART = re.compile(r"part\d{1,9}")  # a part's name: nothing else is read as a part
ZSTD_WHEEL = re.compile(r"zstandard-[A-Za-z0-9_.+-]+\.whl")
PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,254}")  # a file name: no separator, no leading dot (no "..")
SHA256 = re.compile(r"[0-9a-f]{64}")


class Refused(ValueError):
    """A manifest, part, wheel or folder the tooling will not touch (``main``: the message, exit 2)."""


# ------------------------------------------------------------------ pure helpers (tested)

def wheel_name(filename: str) -> str:
    """The distribution's normalised name: ``nvidia_cublas_cu12-12.9.3.13-py3-...whl`` -> ``nvidia_cublas_cu12``."""
    return re.sub(r"[-_.]+", "_", filename.split("-", 1)[0]).lower()


def select_wheels(filenames: list[str]) -> list[str]:
    """The wheels to carry: tensorflow, the ``nvidia_*_cu12`` ones but ``DROPPED``, and ``EXTRAS``; one version of
    each (two versions of one name stop pip's whole install: refused here)."""
    keep, seen = [], {}
    extras = {wheel_name(e) for e in EXTRAS}
    for f in sorted(filenames):
        if not f.endswith(".whl"):
            continue
        name = wheel_name(f)
        wanted = (name == "tensorflow" or (name.startswith("nvidia_") and name.endswith("_cu12"))
                  or name in extras) and name not in DROPPED
        if not wanted:
            continue
        if name in seen:
            raise ValueError(f"two versions of {name}: {seen[name]} and {f}; keep one")
        seen[name] = f
        keep.append(f)
    return keep


def default_part_bytes(tree_bytes: int, upload_bytes: int = UPLOAD_BYTES, margin: int = MARGIN) -> int:
    """What one upload still takes beside the checkout: ``upload_bytes - tree_bytes - margin`` (refused if < 1 MiB)."""
    n = upload_bytes - tree_bytes - margin
    if n < 2**20:
        raise ValueError(f"the checkout ({tree_bytes:,} bytes) leaves less than 1 MiB an upload for the parts")
    return n


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def split_file(src: Path, out_dir: Path, part_bytes: int, prefix: str = "part") -> dict:
    """Cut ``src`` into ``out_dir/<prefix>NN`` of ``part_bytes`` each (the last shorter); return the manifest:
    ``{"whole": {name, bytes, sha256}, "part_bytes", "parts": [{name, bytes, sha256}, ...]}``."""
    if part_bytes < 1:
        raise ValueError("part_bytes must be >= 1")
    out_dir.mkdir(parents=True, exist_ok=True)
    total = src.stat().st_size
    width = max(2, len(str(max(0, (total - 1) // part_bytes))))
    whole, parts = hashlib.sha256(), []
    with open(src, "rb") as f:
        i = 0
        while True:
            h, n = hashlib.sha256(), 0
            name = f"{prefix}{i:0{width}d}"
            with open(out_dir / name, "wb") as out:
                while n < part_bytes:
                    block = f.read(min(CHUNK, part_bytes - n))
                    if not block:
                        break
                    out.write(block)
                    h.update(block)
                    whole.update(block)
                    n += len(block)
            if n == 0 and parts:  # the file ended exactly at a part's end
                (out_dir / name).unlink()
                break
            parts.append({"name": name, "bytes": n, "sha256": h.hexdigest()})
            i += 1
            if n < part_bytes:
                break
    return {"whole": {"name": src.name, "bytes": total, "sha256": whole.hexdigest()}, "part_bytes": part_bytes,
            "parts": parts}


def plain_name(name, pattern: re.Pattern = PLAIN, what: str = "name") -> str:
    """``name`` if it is a plain file name matching ``pattern``; else Refused, naming it."""
    if isinstance(name, str) and pattern.fullmatch(name):
        return name
    raise Refused(f"{what} {name!r}: not a plain file name ({pattern.pattern}: no absolute path, no '..', no "
                  "separator): refused")


def _entry(e, pattern: re.Pattern, what: str) -> dict:
    if not isinstance(e, dict):
        raise Refused(f"{what} {e!r}: not an entry {{name, bytes, sha256}} of the manifest: refused")
    name = plain_name(e.get("name"), pattern, what)
    if not (type(e.get("bytes")) is int and e["bytes"] >= 0 and isinstance(e.get("sha256"), str)
            and SHA256.fullmatch(e["sha256"])):
        raise Refused(f"{what} {name}: the manifest gives no size or no sha256: refused")
    return e


def validate_manifest(manifest) -> dict:
    """The manifest if every name in it is a plain file name (parts: ``partNN``; the zstandard wheel:
    ``zstandard-*.whl``) with a size and a sha256; else Refused, naming the first bad entry."""
    if not isinstance(manifest, dict) or not isinstance(manifest.get("parts"), list) or not manifest["parts"]:
        raise Refused("the manifest lists no parts: refused")
    names = [_entry(p, PART, "part")["name"] for p in manifest["parts"]]
    if len(set(names)) != len(names):
        raise Refused("the manifest names a part twice: refused")
    whole = _entry(manifest.get("whole"), PLAIN, "whole")
    if sum(p["bytes"] for p in manifest["parts"]) != whole["bytes"]:
        raise Refused(f"the parts' sizes do not add up to {whole['name']}'s: refused")
    if "zstandard" in manifest:
        _entry(manifest["zstandard"], ZSTD_WHEEL, "zstandard wheel")
    wheels = manifest.get("wheels", [])
    for w in wheels if isinstance(wheels, list) else [wheels]:
        plain_name(w, PLAIN, "wheel")
    if manifest.get("compress", "none") not in ("zstd", "none"):
        raise Refused(f"compress {manifest['compress']!r}: neither zstd nor none: refused")
    return manifest


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a folder"
            if stat.S_ISDIR(mode) else "a regular file")


def open_regular(name, dir_fd: int | None, label: str) -> int:
    """A read-only descriptor of the regular file ``name`` (in the folder ``dir_fd``): ``lstat`` first, then opened
    ``O_NOFOLLOW|O_NONBLOCK`` (no symlink followed; a FIFO swapped in meanwhile does not block) and ``fstat`` again.
    A symlink, a FIFO, a device, a socket or a folder: Refused (a missing file: FileNotFoundError)."""
    mode = os.lstat(name, dir_fd=dir_fd).st_mode
    if stat.S_ISREG(mode):
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            mode = stat.S_IFLNK
        else:
            mode = os.fstat(fd).st_mode
            if stat.S_ISREG(mode):
                return fd
            os.close(fd)
    raise Refused(f"{label}: {_kind(mode)}, not a regular file: refused")


def open_dir(path, what: str) -> int:
    """A descriptor of the folder ``path``, opened ``O_NOFOLLOW`` (a symlink, or anything else, is Refused)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise Refused(f"{what} {path}: {_kind(os.lstat(path).st_mode)}, not a folder: refused") from None


def private_dir(path, what: str, create: bool = False) -> int:
    """A descriptor of the folder ``path`` (made 0700 if ``create`` and absent) if it is a real folder, owned by
    us, that no one else may write to; else Refused (a symlink there is never followed)."""
    if create:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    fd = open_dir(path, what)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise Refused(f"{what} {path}: owned by uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}: not a folder of "
                      f"ours (uid {os.geteuid()}) that no one else may write to: refused")
    return fd


def _stream(fd: int, entry: dict, label: str, write=None) -> int:
    """Read the file ``fd`` (at most the manifest's size + 1 bytes), handing each block to ``write``; Refused unless
    its size and sha256 are the manifest's. Returns the bytes read."""
    size = os.fstat(fd).st_size
    h, n = hashlib.sha256(), 0
    if size == entry["bytes"]:
        while block := os.read(fd, min(CHUNK, entry["bytes"] + 1 - n)):
            h.update(block)
            n += len(block)
            if write:
                write(block)
    if size != entry["bytes"] or n != entry["bytes"] or h.hexdigest() != entry["sha256"]:
        raise Refused(f"{label}: {max(size, n):,} bytes sha256 {h.hexdigest()[:12] if n else '-'}, the manifest says "
                      f"{entry['bytes']:,} bytes sha256 {entry['sha256'][:12]}: refused")
    return n


def _replace_in(dir_fd: int, name: str, fill) -> None:
    """Write ``name`` in the folder ``dir_fd`` through a fresh name (``O_CREAT|O_EXCL|O_NOFOLLOW``, 0600) renamed
    over it: what was there, a symlink included, is replaced, never written through. ``fill(write)`` writes."""
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with open(fd, "wb") as f:
            fill(f.write)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _copy_checked(src_fd: int, name: str, entry: dict, dst_fd: int, label: str) -> None:
    """Copy ``name`` from the folder ``src_fd`` into ``dst_fd``, checked against ``entry`` as it is copied."""
    fd = open_regular(name, src_fd, label)
    try:
        _replace_in(dst_fd, name, lambda write: _stream(fd, entry, label, write))
    finally:
        os.close(fd)


def missing_parts(manifest: dict, parts_dir: Path) -> list[str]:
    """The manifest's parts not in ``parts_dir`` as regular files of their size (checksums: at intake)."""
    gone = []
    for p in validate_manifest(manifest)["parts"]:
        try:
            st = os.lstat(parts_dir / p["name"])
        except FileNotFoundError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_size != p["bytes"]:
            gone.append(p["name"])
    return gone


def check_part(manifest: dict, path: Path) -> None:
    """Refused (a ValueError) unless ``path`` is a regular file and one of the manifest's parts, byte for byte."""
    entry = next((p for p in validate_manifest(manifest)["parts"] if p["name"] == path.name), None)
    if entry is None:
        raise Refused(f"{path.name} is no part of this manifest ({manifest['whole']['name']})")
    fd = open_regular(path, None, str(path))
    try:
        _stream(fd, entry, path.name)
    finally:
        os.close(fd)


def join_parts(manifest: dict, parts_dir: Path, out) -> int:
    """Write the parts, in order, to the binary file object ``out``; check every part's and the whole's sha256
    (Refused, a ValueError, naming the first that differs; a missing part: FileNotFoundError). Returns the bytes
    written. Only regular files named in a valid manifest, inside ``parts_dir``, are read."""
    whole, total = hashlib.sha256(), 0

    def write(block):
        whole.update(block)
        out.write(block)

    dir_fd = open_dir(parts_dir, "parts folder")
    try:
        for p in validate_manifest(manifest)["parts"]:
            fd = open_regular(p["name"], dir_fd, f"{parts_dir}/{p['name']}")
            try:
                total += _stream(fd, p, p["name"], write)
            finally:
                os.close(fd)
    finally:
        os.close(dir_fd)
    if whole.hexdigest() != manifest["whole"]["sha256"] or total != manifest["whole"]["bytes"]:
        raise Refused(f"the joined parts ({total:,} bytes) differ from {manifest['whole']['name']}")
    return total


# ------------------------------------------------------------------ HERE: build the parts

def tree_bytes(root: Path = ROOT) -> int:
    """Bytes of the checkout that goes with every upload: tracked and untracked-not-ignored files."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         check=True, capture_output=True).stdout
    total = 0
    for name in set(filter(None, out.decode().split("\0"))):
        p = root / name
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def pip_download(dest: Path, specs: list[str], deps: bool = True) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", PYTHON_VERSION,
           "--implementation", "cp", *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(dest), *specs]
    if not deps:
        cmd.insert(4, "--no-deps")
    subprocess.run(cmd, check=True)


def store_wheel(src: Path, dst: Path) -> None:
    """Rewrite a wheel with its members stored, not deflated (the same files, the same RECORD)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            new = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            new.external_attr, new.compress_type = info.external_attr, zipfile.ZIP_STORED
            new.file_size = info.file_size
            with zin.open(info) as r, zout.open(new, "w", force_zip64=info.file_size > 2**31) as w:
                shutil.copyfileobj(r, w, CHUNK)


def write_manifest(parts: Path, manifest: dict) -> dict:
    """List the zstandard wheel beside the parts (its name, size and sha256: THERE installs no other) and write
    ``parts/manifest.json``, checked as THERE checks it."""
    wheels = sorted(parts.glob("zstandard-*.whl"))
    if len(wheels) > 1:
        raise ValueError(f"two zstandard wheels in {parts}: {[w.name for w in wheels]}; keep one")
    for w in wheels:
        manifest["zstandard"] = {"name": w.name, "bytes": w.stat().st_size, "sha256": sha256_file(w)}
    (parts / MANIFEST).write_text(json.dumps(validate_manifest(manifest), indent=1))
    return manifest


def build(args) -> int:
    wheels, parts = ROOT / ".tfwheels", ROOT / ".tfparts"
    tree = tree_bytes()
    upload = args.upload_mib * 2**20
    part_bytes = args.part_bytes or default_part_bytes(tree, upload)
    print(f"checkout that goes with each upload: {tree:,} bytes; part size: {part_bytes:,} bytes "
          f"({upload:,} an upload - checkout - margin {MARGIN:,})")
    wheels.mkdir(exist_ok=True)
    if not args.no_download:
        pip_download(wheels, [SPEC])
    chosen = select_wheels(os.listdir(wheels))
    if parts.exists():
        shutil.rmtree(parts)
    stage = parts / "stage"
    stage.mkdir(parents=True)
    for f in chosen:
        if args.compress == "zstd":
            store_wheel(wheels / f, stage / f)
        else:
            os.link(wheels / f, stage / f)
    raw = sum((stage / f).stat().st_size for f in chosen)
    whole = parts / ("tf.tar.zst" if args.compress == "zstd" else "tf.tar")
    tar = subprocess.Popen(["tar", "-cf", "-", "-C", str(stage), *chosen], stdout=subprocess.PIPE)
    if args.compress == "zstd":
        subprocess.run(["zstd", "-q", f"-{args.level}", "--long=27", "-T1", "-o", str(whole)], stdin=tar.stdout,
                       check=True)
    else:
        with open(whole, "wb") as out:
            shutil.copyfileobj(tar.stdout, out, CHUNK)
    tar.stdout.close()
    if tar.wait():
        raise SystemExit("tar failed")
    shutil.rmtree(stage)
    manifest = split_file(whole, parts, part_bytes)
    manifest.update(spec=SPEC, compress=args.compress, wheels=chosen, wheels_bytes=raw, tree_bytes=tree)
    whole.unlink()
    if args.compress == "zstd":
        pip_download(parts, [ZSTANDARD], deps=False)
    write_manifest(parts, manifest)
    n = len(manifest["parts"])
    print(f"{len(chosen)} wheels, {raw:,} bytes as stored wheels -> {manifest['whole']['bytes']:,} bytes "
          f"({args.compress}), {n} parts of {part_bytes:,} bytes in {parts}")
    for f in chosen:
        print("  ", f)
    return 0


# ------------------------------------------------------------------ THERE: intake, missing, assemble

def read_manifest(dir_fd: int, folder) -> dict:
    """The manifest in the folder ``dir_fd``: a regular file of at most ``MANIFEST_MAX`` bytes, valid."""
    fd = open_regular(MANIFEST, dir_fd, f"{folder}/{MANIFEST}")
    try:
        if os.fstat(fd).st_size > MANIFEST_MAX:
            raise Refused(f"{folder}/{MANIFEST}: over {MANIFEST_MAX:,} bytes: refused")
        with open(fd, "rb", closefd=False) as f:
            text = f.read(MANIFEST_MAX + 1)
    finally:
        os.close(fd)
    try:
        return validate_manifest(json.loads(text))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Refused(f"{folder}/{MANIFEST}: not JSON ({e}): refused") from None


def load_manifest(folder: Path, private: bool = False) -> dict:
    dir_fd = private_dir(folder, "parts folder") if private else open_dir(folder, "parts folder")
    try:
        return read_manifest(dir_fd, folder)
    finally:
        os.close(dir_fd)


def intake(args) -> int:
    """Copy the carried manifest, then each carried part (checked as it is copied, then removed from SRC) and the
    zstandard wheel the manifest lists, into DST: a private folder of ours (made 0700 if absent)."""
    src, dst = Path(args.src), Path(args.dst)
    src_fd = open_dir(src, "carried folder")
    try:
        dst_fd = private_dir(dst, "destination", create=True)
        try:
            names = sorted(os.listdir(src_fd))
            if MANIFEST in names:
                manifest = read_manifest(src_fd, src)
                text = json.dumps(manifest, indent=1).encode()  # what was checked, not the carried bytes again
                _replace_in(dst_fd, MANIFEST, lambda write: write(text))
            else:
                manifest = read_manifest(dst_fd, dst)
            wheel = manifest.get("zstandard")
            for name in names:  # a wheel is refused before any part moves
                if name.endswith(".whl") and (wheel is None or name != wheel["name"]):
                    raise Refused(f"{src}/{name}: a wheel in no manifest (build lists the zstandard wheel with its "
                                  "size and sha256): refused")
            parts = {p["name"]: p for p in manifest["parts"]}
            for name in filter(PART.fullmatch, names):
                if name not in parts:
                    raise Refused(f"{src}/{name} is no part of this manifest ({manifest['whole']['name']})")
                _copy_checked(src_fd, name, parts[name], dst_fd, f"{src}/{name}")
                os.unlink(name, dir_fd=src_fd)
                print(f"part {name}: {parts[name]['bytes']:,} bytes, sha256 ok")
            if wheel and wheel["name"] in names:
                _copy_checked(src_fd, wheel["name"], wheel, dst_fd, f"{src}/{wheel['name']}")
                print(f"wheel {wheel['name']}: {wheel['bytes']:,} bytes, sha256 ok")
        finally:
            os.close(dst_fd)
    finally:
        os.close(src_fd)
    return report_missing(manifest, dst)


def report_missing(manifest: dict, folder: Path) -> int:
    gone = missing_parts(manifest, folder)
    n = len(manifest["parts"])
    print(f"parts here: {n - len(gone)} of {n}" + (f"; still to carry: {' '.join(gone)}" if gone else ""))
    return 3 if gone else 0


def missing(args) -> int:
    folder = Path(args.folder)
    return report_missing(load_manifest(folder, private=True), folder)


def install_zstandard(manifest: dict, parts: Path) -> Path:
    """Install the zstandard wheel the manifest lists, and only it: checked (size, sha256) while it is copied into a
    fresh private folder (``tempfile.mkdtemp``, removed at exit), installed there by pip; returns the site folder.
    A wheel in no manifest or that differs from it: Refused, nothing installed."""
    entry, dir_fd = manifest.get("zstandard"), private_dir(parts, "parts folder")
    try:
        names = os.listdir(dir_fd)
        if entry is None:
            found = sorted(filter(ZSTD_WHEEL.fullmatch, names))
            if found:
                raise Refused(f"{parts}/{found[0]}: a wheel in no manifest (build lists the zstandard wheel with its "
                              "size and sha256): refused")
            raise SystemExit("no zstd command and no zstandard package: carry .tfparts/zstandard-*.whl (listed in "
                             "manifest.json by build)")
        if entry["name"] not in names:
            raise SystemExit(f"no zstd command and no zstandard package: carry .tfparts/{entry['name']}")
        home = Path(tempfile.mkdtemp(prefix="tfparts-zstd-"))
        try:
            home_fd = open_dir(home, "private folder")
            try:
                _copy_checked(dir_fd, entry["name"], entry, home_fd, f"{parts}/{entry['name']}")
            finally:
                os.close(home_fd)
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--isolated", "--no-index", "--no-deps",
                            "--target", str(home / "site"), str(home / entry["name"])], check=True)
        except BaseException:
            shutil.rmtree(home, ignore_errors=True)
            raise
    finally:
        os.close(dir_fd)
    atexit.register(shutil.rmtree, home, True)
    return home / "site"


def _decompressor(manifest: dict, parts: Path):
    """The zstd command, else the Python package zstandard (else its wheel, carried beside the parts and listed in
    the manifest, installed by ``install_zstandard``)."""
    if shutil.which("zstd"):
        return "cmd", None
    try:
        import zstandard
    except ImportError:
        sys.path.insert(0, str(install_zstandard(manifest, parts)))
        import zstandard
    return "py", zstandard


def assemble(args) -> int:
    parts, dest = Path(args.parts), Path(args.dest)
    manifest = load_manifest(parts, private=True)
    if report_missing(manifest, parts):
        return 3
    os.close(private_dir(dest, "destination", create=True))
    if manifest.get("compress") == "zstd":
        kind, zstandard = _decompressor(manifest, parts)
        if kind == "cmd":
            unz = subprocess.Popen(["zstd", "-d", "-q", "--long=27", "-c"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
            untar = subprocess.Popen(["tar", "-xf", "-", "-C", str(dest)], stdin=unz.stdout)
            unz.stdout.close()
            try:
                join_parts(manifest, parts, unz.stdin)
            finally:
                unz.stdin.close()
            if unz.wait() or untar.wait():
                raise SystemExit("zstd or tar failed")
        else:
            untar = subprocess.Popen(["tar", "-xf", "-", "-C", str(dest)], stdin=subprocess.PIPE)
            writer = zstandard.ZstdDecompressor(max_window_size=2**27).stream_writer(untar.stdin,
                                                                                     closefd=False)
            join_parts(manifest, parts, writer)
            writer.flush()
            untar.stdin.close()
            if untar.wait():
                raise SystemExit("tar failed")
    else:
        untar = subprocess.Popen(["tar", "-xf", "-", "-C", str(dest)], stdin=subprocess.PIPE)
        join_parts(manifest, parts, untar.stdin)
        untar.stdin.close()
        if untar.wait():
            raise SystemExit("tar failed")
    got = sorted(p.name for p in dest.glob("*.whl"))
    lost = sorted(set(manifest.get("wheels", [])) - set(got))
    print(f"assembled {manifest['whole']['bytes']:,} bytes: {len(got)} wheels in {dest}"
          + (f"; MISSING {lost}" if lost else ""))
    return 1 if lost else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="HERE: download, select, tar, split into .tfparts/")
    b.add_argument("--upload-mib", type=int, default=UPLOAD_BYTES // 2**20,
                   help="MiB the GPU machine takes in one upload, the checkout included (default %(default)s)")
    b.add_argument("--part-bytes", type=int, default=0,
                   help="bytes a part (default: the upload limit - the checkout - margin)")
    b.add_argument("--compress", choices=("zstd", "none"), default="zstd" if shutil.which("zstd") else "none")
    b.add_argument("--level", type=int, default=9, help="zstd's level (9: ~60%% of the deflated wheels)")
    b.add_argument("--no-download", action="store_true", help="use what .tfwheels/ holds")
    b.set_defaults(fn=build)
    i = sub.add_parser("intake", help="THERE: move uploaded parts (and the manifest, the listed zstandard wheel) "
                                      "from SRC into DST, a private folder (made 0700)")
    i.add_argument("src")
    i.add_argument("dst")
    i.set_defaults(fn=intake)
    m = sub.add_parser("missing", help="THERE: list the parts FOLDER lacks (exit 3 if any)")
    m.add_argument("folder")
    m.set_defaults(fn=missing)
    a = sub.add_parser("assemble", help="THERE: join PARTS (checksums), decompress, untar into DEST")
    a.add_argument("parts")
    a.add_argument("dest")
    a.set_defaults(fn=assemble)
    args = ap.parse_args(argv)
    try:
        return args.fn(args)
    except Refused as e:
        print(f"tf_parts {args.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
