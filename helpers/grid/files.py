"""Grid files read (``helpers.grid``, 1 of 3): the YAML, the line of each key and list item (the marks of its
nodes, ``yaml.compose``), the block record, and the problems of a file collected, each ``file:line: message``.

    doc, line = read(path)       # line("points", 0, "batch_size", 1): where that item is (1-based)
    problems = Problems()        # problems.check(fn, *args): fn's GridError/ParamError kept, not raised
    raise GridError(problems.sorted())
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from helpers import params as _params

TOP_KEYS = ("description", "timeout_s", "repeats", "defaults", "points")
# A grid is read before anyone trusts it (``run_all.sh validate`` is how one inspects it), so reading it is bounded:
# YAML aliases (``*name``) repeat a node without copying it, and nine levels of nine aliases are 9**10 values
# once constructed (41 s and 3 GB, then MemoryError). The nodes are counted as aliases would expand them before
# anything is constructed; a grid has a few hundred.
MAX_NODES = 100_000  # values (scalars, lists, mappings) once every alias is expanded
MAX_GRID_BYTES = 4 * 2**20  # the largest grid shipped is 8 kB
MAX_MESSAGE = 1_000  # characters of one problem: a value quoted in it is cut, never printed whole


class GridError(ValueError):
    """Every problem found in the grid files, each ``file:line: message`` (``errors``); ``str``: one a line."""

    def __init__(self, errors):
        self.errors = [bounded(e) for e in ([errors] if isinstance(errors, str) else list(errors))]
        super().__init__("\n".join(self.errors))

    def lines(self) -> list[str]:
        """What the runner prints: the problems, counted first when there are several."""
        n = len(self.errors)
        return self.errors if n == 1 else [f"{n} problems in the grid files:", *self.errors]


def bounded(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message`` cut to ``limit`` characters (a problem quotes the value at fault, which may be any size)."""
    message = str(message)
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… ({len(message) - limit:,} more characters not shown)"


def expanded_nodes(node, limit: int = MAX_NODES) -> int:
    """How many nodes ``node`` (``yaml.compose``'s graph, where an alias is the node it names, not a copy) holds
    once every alias is expanded, counted without expanding anything: each distinct node once, its size from its
    children's (memoised). Past ``limit`` (or a node that holds itself, which never ends) it returns
    ``limit + 1``."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(node, False)]
    while stack:
        n, done = stack.pop()
        key = id(n)
        if done:
            on_path.discard(key)
            kids = ([c for kv in n.value for c in kv] if isinstance(n, yaml.MappingNode) else
                    list(n.value) if isinstance(n, yaml.SequenceNode) else [])
            size[key] = min(limit + 1, 1 + sum(size[id(c)] for c in kids))
            continue
        if key in size:
            continue
        if key in on_path:
            return limit + 1  # a recursive alias: a value that holds itself
        on_path.add(key)
        stack.append((n, True))
        if isinstance(n, yaml.MappingNode):
            stack.extend((c, False) for kv in n.value for c in kv if id(c) not in size)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((c, False) for c in n.value if id(c) not in size)
    return size[id(node)]


@dataclass(frozen=True)
class Block:
    """One block of a grid file, counted before it is expanded."""

    file: str
    index: int  # 1-based, as in messages (``points[1]``)
    repeats: int
    lists: dict = field(default_factory=dict)  # key -> length, for the keys whose value is a list
    line: int = 0  # where the block starts in its file (1-based; 0: not known)

    @property
    def points(self) -> int:
        return math.prod(self.lists.values())

    @property
    def runs(self) -> int:
        return self.points * self.repeats

    def describe(self, at_line: bool = False) -> str:
        """``file: points[i]: N runs (key n x ...)``; ``at_line``: ``file:line: ...``, as a problem is written."""
        parts = [f"{k} {n}" for k, n in self.lists.items()] + ([f"repeats {self.repeats}"] if self.repeats > 1 else [])
        at = f"{self.file}:{self.line}" if at_line and self.line else self.file
        return f"{at}: points[{self.index}]: {self.runs:,} runs ({' x '.join(parts) or 'no lists'})"


class Lines:
    """Line numbers (1-based) in a grid file, from the marks of its YAML nodes (``yaml.compose``): of each key
    and each list item, by path (``("points", 0, "batch_size", 1)``); a path not found gives its nearest parent's."""

    def __init__(self, node):
        self.at: dict[tuple, int] = {}
        self._walk(node, ())

    def _walk(self, node, path: tuple) -> None:
        self.at.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = path + (str(k.value),)
                self.at.setdefault(key, k.start_mark.line + 1)
                self._walk(v, key)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, path + (i,))

    def __call__(self, *path) -> int:
        path = tuple(p if isinstance(p, int) else str(p) for p in path)
        while path and path not in self.at:
            path = path[:-1]
        return self.at.get(path, 1)


def _construct(node):
    if node is None:  # an empty file
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read(path: Path) -> tuple[dict, Lines]:
    """The grid file's mapping and its lines; a file that cannot be read as one raises ``GridError`` (one problem:
    nothing further can be checked in it)."""
    if not path.is_file():
        raise GridError(f"{path}: grid file does not exist")
    try:
        if path.stat().st_size > MAX_GRID_BYTES:
            raise GridError(f"{path}: larger than {MAX_GRID_BYTES // 2**20} MB; a grid is a few kB")
        text = path.read_text()
        node = yaml.compose(text, Loader=yaml.SafeLoader)  # the node graph: an alias is not copied here
        if node is not None and expanded_nodes(node) > MAX_NODES:
            raise GridError(f"{path}:1: more than {MAX_NODES:,} values once its aliases (*name) are expanded; "
                            "a grid has a few hundred (an alias repeated within aliases multiplies)")
        doc = _construct(node)  # what yaml.safe_load(text) gives, without parsing the text again
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        raise GridError(f"{path}:{mark.line + 1 if mark else 1}: invalid YAML: {exc}") from None
    except UnicodeDecodeError:
        raise GridError(f"{path}: not a text file") from None
    except RecursionError:
        raise GridError(f"{path}:1: nested too deeply") from None
    except OSError as exc:
        raise GridError(f"{path}: unreadable: {exc.strerror or type(exc).__name__}") from None
    if not isinstance(doc, dict):
        raise GridError(f"{path}:1: a grid is a mapping with the keys {', '.join(TOP_KEYS)}; "
                        f"found {type(doc).__name__}")
    return doc, Lines(node)


def load(path) -> dict:
    """The grid file's mapping, its top-level keys checked (``GridError`` with every unknown one)."""
    path = Path(path)
    doc, line = read(path)
    errors = [f"{path}:{line(key)}: unknown top-level key '{key}'; allowed: {', '.join(TOP_KEYS)}"
              for key in doc if key not in TOP_KEYS]
    if errors:
        raise GridError(errors)
    return doc


MAX_TIMEOUT_S = 7 * 86_400  # a point's limit: a week (NaN and infinity refused)
MAX_REPEATS = 1_000  # separate runs of one point


def check_timeout(value, where: str):
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not 0 < value <= MAX_TIMEOUT_S):
        raise GridError(f"{where}: key 'timeout_s' has value {value!r}; allowed: a number of seconds > 0 and "
                        f"<= {MAX_TIMEOUT_S:,} (or null: the default)")
    return value


def check_repeats(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEATS:
        raise GridError(f"{where}: key 'repeats' has value {value!r}; allowed: an integer >= 1 and <= {MAX_REPEATS:,} "
                        "(separate runs of each point, each in a fresh kernel)")
    return value


class Problems:
    """The problems of one grid file, each once, in the order of their lines; ``count`` counts every one added
    (repeats too: a block whose problem another block already had is not clean)."""

    def __init__(self):
        self.seen: dict[str, int] = {}
        self.count = 0

    def add(self, message: str) -> None:
        self.count += 1
        self.seen.setdefault(bounded(message), len(self.seen))

    def check(self, fn, *args, default=None):
        """``fn(*args)``, or ``default`` with its ``GridError`` or ``ParamError`` added."""
        try:
            return fn(*args)
        except GridError as exc:
            for e in exc.errors:
                self.add(e)
        except _params.ParamError as exc:
            self.add(str(exc))
        return default

    def sorted(self) -> list[str]:
        def line(msg: str) -> int:
            head = msg.split(": ", 1)[0]
            n = head.rsplit(":", 1)[-1]
            return int(n) if n.isdigit() else 0

        return sorted(self.seen, key=lambda m: (line(m), self.seen[m]))


