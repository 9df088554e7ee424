"""TensorFlow's CUDA build, carried in parts to a GPU machine that reaches no package index.

HERE (a machine with pip and a package index)::

    python3 benchmarks/tf_parts.py build [--part-bytes N] [--compress zstd|none]

downloads ``tensorflow[and-cuda]==2.21.0`` for the device's Python (cp312, manylinux x86-64) into ``.tfwheels/``,
keeps tensorflow, the ``nvidia-*-cu12`` wheels except NCCL (one GPU needs none) and TF's small needs that the
device image lacks (``EXTRAS``), one version of each; rewrites each wheel uncompressed (still a wheel: pip installs
it as it is) so that one compressor sees the libraries whole (zstd takes the CUDA wheels to about 60% of their
deflated size: fewer parts, fewer calls); writes one tar of them (``tf.tar.zst``, or ``tf.tar`` with
``--compress none``), splits it into ``.tfparts/partNN`` of ``--part-bytes`` each and writes
``.tfparts/manifest.json`` (the parts' names, sizes and sha256, the whole's, the wheels inside). The default part
size is what a call of the device tool still takes beside the working tree that travels with it: 64 MiB less the
tree (``git ls-files``, tracked and untracked-not-ignored) less ``MARGIN``; it is computed and printed.

THERE (the GPU machine; stdlib only, called by ``benchmarks/tf_gpu.sh``)::

    python3 benchmarks/tf_parts.py intake .tfparts /tmp/parts     # move carried parts out of the tree, check them
    python3 benchmarks/tf_parts.py missing /tmp/parts             # the parts still to carry (exit 3 if any)
    python3 benchmarks/tf_parts.py assemble /tmp/parts /tmp/tfwheels   # checksums, join, decompress, untar

Decompression uses the ``zstd`` command where there is one, else the Python package ``zstandard`` (its wheel is
saved beside the parts, ``.tfparts/zstandard-*.whl``, to carry where neither exists).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = "tensorflow[and-cuda]==2.21.0"
PYTHON_VERSION = "3.12"  # the device image's (KINDS.md)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
# TF's needs that the device image lacks or holds at a version TF refuses (the suite's own wheels, .whl/, bring
# keras, optree, namex and the rest; the image has numpy, ml_dtypes, grpcio, wrapt, six, absl-py ...)
EXTRAS = ("astunparse", "gast", "google_pasta", "libclang", "termcolor", "flatbuffers", "h5py", "protobuf")
DROPPED = ("nvidia_nccl_cu12",)  # collectives: one GPU needs none (351 MB)
ZSTANDARD = "zstandard==0.25.0"  # the decompressor's Python package, for a machine without the zstd command
CALL_BYTES = 64 * 2**20  # what one call of the device tool carries, the tree included
MARGIN = 3 * 2**20  # for the manifest and what the tree gains between now and the calls
MANIFEST = "manifest.json"
CHUNK = 1 << 20


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


def default_part_bytes(tree_bytes: int, call_bytes: int = CALL_BYTES, margin: int = MARGIN) -> int:
    """What one call still carries beside the tree: ``call_bytes - tree_bytes - margin`` (refused if < 1 MiB)."""
    n = call_bytes - tree_bytes - margin
    if n < 2**20:
        raise ValueError(f"the tree ({tree_bytes:,} bytes) leaves less than 1 MiB a call for the parts")
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


def missing_parts(manifest: dict, parts_dir: Path) -> list[str]:
    """The manifest's parts not in ``parts_dir`` at their size (checksums: ``check_part``, at intake)."""
    return [p["name"] for p in manifest["parts"]
            if not (parts_dir / p["name"]).is_file() or (parts_dir / p["name"]).stat().st_size != p["bytes"]]


def check_part(manifest: dict, path: Path) -> None:
    """Raise ValueError unless ``path`` is one of the manifest's parts, byte for byte."""
    entry = next((p for p in manifest["parts"] if p["name"] == path.name), None)
    if entry is None:
        raise ValueError(f"{path.name} is no part of this manifest ({manifest['whole']['name']})")
    size, digest = path.stat().st_size, sha256_file(path)
    if size != entry["bytes"] or digest != entry["sha256"]:
        raise ValueError(f"{path.name}: {size:,} bytes sha256 {digest[:12]}, the manifest says "
                         f"{entry['bytes']:,} bytes sha256 {entry['sha256'][:12]}")


def join_parts(manifest: dict, parts_dir: Path, out) -> int:
    """Write the parts, in order, to the binary file object ``out``; check every part's and the whole's sha256
    (ValueError naming the first that differs; a missing part: FileNotFoundError). Returns the bytes written."""
    whole, total = hashlib.sha256(), 0
    for p in manifest["parts"]:
        h = hashlib.sha256()
        with open(parts_dir / p["name"], "rb") as f:
            for block in iter(lambda: f.read(CHUNK), b""):
                h.update(block)
                whole.update(block)
                out.write(block)
                total += len(block)
        if h.hexdigest() != p["sha256"]:
            raise ValueError(f"{p['name']}: sha256 differs from the manifest's")
    if whole.hexdigest() != manifest["whole"]["sha256"] or total != manifest["whole"]["bytes"]:
        raise ValueError(f"the joined parts ({total:,} bytes) differ from {manifest['whole']['name']}")
    return total


# ------------------------------------------------------------------ HERE: build the parts

def tree_bytes(root: Path = ROOT) -> int:
    """Bytes of the working tree that travels with every call: tracked and untracked-not-ignored files."""
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


def build(args) -> int:
    wheels, parts = ROOT / ".tfwheels", ROOT / ".tfparts"
    tree = tree_bytes()
    part_bytes = args.part_bytes or default_part_bytes(tree)
    print(f"tree that travels: {tree:,} bytes; part size: {part_bytes:,} bytes "
          f"({CALL_BYTES:,} a call - tree - margin {MARGIN:,})")
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
    (parts / MANIFEST).write_text(json.dumps(manifest, indent=1))
    if args.compress == "zstd":
        pip_download(parts, [ZSTANDARD], deps=False)
    n = len(manifest["parts"])
    print(f"{len(chosen)} wheels, {raw:,} bytes as stored wheels -> {manifest['whole']['bytes']:,} bytes "
          f"({args.compress}), {n} parts of {part_bytes:,} bytes in {parts}")
    for f in chosen:
        print("  ", f)
    return 0


# ------------------------------------------------------------------ THERE: intake, missing, assemble

def load_manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def intake(args) -> int:
    src, dst = Path(args.src), Path(args.dst)
    dst.mkdir(parents=True, exist_ok=True)
    if (src / MANIFEST).is_file():
        shutil.copy(src / MANIFEST, dst / MANIFEST)
    manifest = load_manifest(dst)
    for p in sorted(src.glob("part*")):
        check_part(manifest, p)  # a broken transfer is refused here, not after the last part
        size = p.stat().st_size
        shutil.move(str(p), dst / p.name)
        print(f"part {p.name}: {size:,} bytes, sha256 ok")
    for extra in src.glob("*.whl"):
        shutil.copy(extra, dst / extra.name)
    return report_missing(manifest, dst)


def report_missing(manifest: dict, folder: Path) -> int:
    gone = missing_parts(manifest, folder)
    n = len(manifest["parts"])
    print(f"parts here: {n - len(gone)} of {n}" + (f"; still to carry: {' '.join(gone)}" if gone else ""))
    return 3 if gone else 0


def missing(args) -> int:
    folder = Path(args.folder)
    return report_missing(load_manifest(folder), folder)


def _decompressor(parts: Path):
    """A writable stream decompressing into a pipe: the zstd command, else the Python package zstandard (its
    wheel carried beside the parts, installed into /tmp/zstd-site)."""
    if shutil.which("zstd"):
        return "cmd", None
    try:
        import zstandard
    except ImportError:
        wheels = sorted(parts.glob("zstandard-*.whl"))
        if not wheels:
            raise SystemExit("no zstd command and no zstandard package: carry .tfparts/zstandard-*.whl") from None
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                        "/tmp/zstd-site", str(wheels[-1])], check=True)
        sys.path.insert(0, "/tmp/zstd-site")
        import zstandard
    return "py", zstandard


def assemble(args) -> int:
    parts, dest = Path(args.parts), Path(args.dest)
    manifest = load_manifest(parts)
    if report_missing(manifest, parts):
        return 3
    dest.mkdir(parents=True, exist_ok=True)
    if manifest.get("compress") == "zstd":
        kind, zstandard = _decompressor(parts)
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
    b.add_argument("--part-bytes", type=int, default=0, help="bytes a part (default: 64 MiB - the tree - margin)")
    b.add_argument("--compress", choices=("zstd", "none"), default="zstd" if shutil.which("zstd") else "none")
    b.add_argument("--level", type=int, default=9, help="zstd's level (9: ~60%% of the deflated wheels)")
    b.add_argument("--no-download", action="store_true", help="use what .tfwheels/ holds")
    b.set_defaults(fn=build)
    i = sub.add_parser("intake", help="THERE: move carried parts (and the manifest) from SRC into DST")
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
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
