"""The folder the index is written to (``--out``), untrusted like an input: what the index reads and writes there.

    check_pages_dir(root)                # the runner, before it runs: OutFolderRefused (exit 2)
    found_in(root)                       # what it finds at the names it writes (symlinks, FIFOs), said
    pages_dir(root)                      # root/notebooks_html, a real folder of ours; else ``OutFolderRefused``
    safe_parent(root, page)              # every folder from notebooks_html down to the page real (made if missing)
    stamp_text(path)                     # a stamp's text within the record reader's bounds ('' when not a file)
    seal(digest, page) / sealed(seal, digest, page)   # a page's seal: rendered here from that notebook, unchanged

A folder given to ``--out`` may be an archive of someone else's outputs or one shared by several people: nothing in
it decides what the index publishes. ``notebooks_html`` must be a folder (not a symlink) owned by this user; a page
is written only through folders that are real (no symlink on the way: the page could land outside); every file is
written by ``render.write_page`` (a fresh ``mkstemp`` name, renamed over: a symlink at the page's name is replaced,
its target untouched); stamps are read as records are (a regular file, bounded, never a blocking open: a FIFO is no
stamp). A page rendered earlier is linked again without rendering only when its seal holds: an HMAC-SHA256, over the
notebook's sha256 and the page's, under a key kept outside every outputs folder (``key_file``: the user's cache
folder, mode 0600). A page or a ``.sources.json`` written by anyone without that key, however its stamps read, is
rendered again, sanitised, before it is linked.

The whole index is bounded in time as each page is: ``CGB_INDEX_LIMIT_S`` (``INDEX_LIMIT_ENV``; default
``INDEX_LIMIT_S``) seconds for all its pages; pages not rendered by then are listed as such.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import math
import os
import stat
import sys
from pathlib import Path

PAGES = "notebooks_html"
INDEX_LIMIT_S = 900.0  # every page of one index: a default run's 30 pages take about 10 s
INDEX_LIMIT_ENV = "CGB_INDEX_LIMIT_S"
MAX_STAMP_BYTES = 2**20
MAX_PAGE_BYTES = 64 * 2**20  # a page is about 1.5x its notebook (at most 16 MB)


class OutFolderRefused(ValueError):
    """The folder the index would be written to holds what it must not write through."""


def seconds_from_env(name: str, default: float, what: str, environ=None) -> float:
    """A positive finite number of seconds from the environment variable ``name`` (``default`` where unset or
    empty); ``ValueError`` naming the variable and ``what`` it sets for any other value."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0:
        why = "not a number" if value is None else "not a positive, finite number"
        raise ValueError(f"{name}={raw[:100]!r} is {why} of seconds: it sets {what} (default {default:g}); unset "
                         f"it or give e.g. {name}={2 * default:g}")
    return value


def index_limit_s(environ=None) -> float:
    """The most the whole index's pages may take, in seconds: ``CGB_INDEX_LIMIT_S`` where set, else
    ``INDEX_LIMIT_S``."""
    return seconds_from_env(INDEX_LIMIT_ENV, INDEX_LIMIT_S, "the most all the notebook pages of the index may take "
                            "to render together", environ)


WRITTEN = ("report.html", "report.previous.html", "index.html", "results.csv", "configurations.csv", "verdict.csv",
           f"{PAGES}/.render-version", f"{PAGES}/.sources.json")  # what a report writes into its folder


def found_in(root: Path) -> list[str]:
    """What the folder a report is written to holds at the names it writes that is not a file of its own (a
    symlink, a FIFO), each said with what happens to it: the runner prints these before it writes."""
    out = []
    for name in WRITTEN:
        p = Path(root) / name
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            out.append(f"{p} is a symlink (to {os.readlink(p)[:200]!r}): replaced by a file of its own; what it "
                       "points to is neither read nor written")
        elif not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            out.append(f"{p} is not a regular file (a FIFO, a socket or a device): not read, replaced by a file")
    return out


def _refuse(path: Path, why: str) -> OutFolderRefused:
    return OutFolderRefused(f"{path} is {why}: the index writes its pages there and will not write through it. "
                            f"Remove it (it holds rendered pages only; they are made again) or give --out a folder "
                            "of your own")


def check_pages_dir(root: Path) -> None:
    """``OutFolderRefused`` when ``root/notebooks_html`` is there and is a symlink, not a folder, or a folder of
    another user (the runner asks before it runs anything: exit 2)."""
    pages = Path(root) / PAGES
    if not os.path.lexists(pages):
        return
    st = os.lstat(pages)
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(pages, f"a symlink (to {os.readlink(pages)[:200]!r})")
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(pages, "not a folder")
    if st.st_uid != os.geteuid():
        raise _refuse(pages, f"a folder of another user (uid {st.st_uid})")


def pages_dir(root: Path) -> Path:
    """``root/notebooks_html``, made if missing; ``OutFolderRefused`` when it is a symlink, not a folder, or a
    folder of another user."""
    pages = Path(root) / PAGES
    if not os.path.lexists(pages):
        pages.mkdir(parents=True, exist_ok=True)
    check_pages_dir(root)
    return pages


def safe_parent(root: Path, page: Path) -> bool:
    """Whether every folder from ``root/notebooks_html`` down to ``page``'s is a real folder (made where missing),
    none a symlink: False when one is not (the page is then not written)."""
    base = Path(root) / PAGES
    d = base
    for part in page.parent.relative_to(base).parts:
        d = d / part
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            try:
                d.mkdir()
            except OSError:
                return False
            continue
        if not stat.S_ISDIR(st.st_mode):  # a symlink (lstat), a file, a FIFO
            return False
    return True


def stamp_text(path: Path) -> str:
    """The text of a stamp the index wrote (``.render-version``), read within the record reader's bounds; '' when
    it is missing, not a regular file (a FIFO never blocks this) or too large."""
    from helpers.record.reader import read_bytes

    data, why = read_bytes(path, MAX_STAMP_BYTES)
    return "" if why is not None else data.decode("utf-8", "replace").strip()


def key_file() -> Path:
    """Where the seals' key is kept: ``$XDG_CACHE_HOME`` (else ``~/.cache``) ``/cpu-gpu-bench/index.key``."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "cpu-gpu-bench" / "index.key"


def _key() -> bytes | None:
    """This user's key (32 random bytes, made once, 0600); None when it can be neither read nor made (then no page
    is sealed and every page is rendered each time). Read once a process for each place it is kept."""
    return _key_at(key_file())


@functools.lru_cache(maxsize=4)
def _key_at(path: Path) -> bytes | None:
    """The key kept at ``path``, or None, said once a process on stderr with why and what to do (an unusable key
    only costs time: every page is rendered again, none is kept)."""
    key, why = _read_key(path)
    if key is None:
        print(f"note: the notebook index's seal key {path} is unusable ({why}): no page is sealed, every notebook "
              "page is rendered again each run; remove it and a new one is made (32 random bytes, mode 0600)",
              file=sys.stderr)
    return key


def _read_key(path: Path) -> tuple[bytes | None, str]:
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except FileExistsError:
                continue  # another renderer made it meanwhile: read it
            except OSError as exc:
                return None, f"cannot be made: {exc.strerror or exc}"
            key = os.urandom(32)
            with os.fdopen(fd, "wb") as f:
                f.write(key)
            return key, ""
        except OSError as exc:  # ELOOP: a symlink; EISDIR is not raised for O_RDONLY (a folder is caught below)
            return None, "a symlink" if exc.errno == errno.ELOOP else f"cannot be read: {exc.strerror or exc}"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None, "not a regular file"
            if st.st_uid != os.geteuid():
                return None, "owned by another user"
            if st.st_mode & 0o077:
                return None, f"readable by others: mode {stat.S_IMODE(st.st_mode):04o}, not 0600"
            key = os.read(fd, 64)
        finally:
            os.close(fd)
        return (key, "") if len(key) == 32 else (None, f"{len(key)} bytes, not 32")
    return None, "made and removed by another process meanwhile"


def file_sha256(path: Path, limit: int) -> str | None:
    """The sha256 of a file read within the record reader's bounds (a regular file, at most ``limit`` bytes, never
    a blocking open); None when it cannot be read so."""
    from helpers.record.reader import read_bytes

    data, why = read_bytes(path, limit)
    return None if why is not None else hashlib.sha256(data).hexdigest()


def _page_digest(page: Path) -> str | None:
    return None if os.path.islink(page) else file_sha256(page, MAX_PAGE_BYTES)


def seal(digest: str | None, page: Path) -> str | None:
    """The seal of ``page`` just rendered from a notebook of sha256 ``digest``; None when there is no key."""
    key, page_digest = _key(), _page_digest(page)
    if key is None or digest is None or page_digest is None:
        return None
    return hmac.new(key, f"{digest}:{page_digest}".encode(), hashlib.sha256).hexdigest()


def sealed(value, digest: str | None, page: Path) -> bool:
    """Whether ``page`` is, byte for byte, the page this user's index rendered from a notebook of sha256 ``digest``
    (``value``: the seal stored for it)."""
    if not isinstance(value, str) or digest is None:
        return False
    expected = seal(digest, page)
    return expected is not None and hmac.compare_digest(expected, value)
