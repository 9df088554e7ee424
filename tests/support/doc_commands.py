"""The launcher commands of docs/multi_gpu.md, as the tests run them: the page cannot drift from them.

Each command the page gives for starting one point's processes is a fenced ``bash`` block right under a marker
``<!-- tested: NAME -->``; the test named for NAME in ``TESTED`` reads it here (``lines(NAME)``) and runs its
lines token for token (``argv``), with two placeholders filled in: ``GRID.yaml`` is the test's grid file and
``python`` the tests' own interpreter (``subs`` may name a few more, e.g. the coordinator's host). Every other
fenced block of the page may not start a launcher (``untested_launcher_blocks``): tests/test_docs.py checks both.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from helpers.paths import PROJECT_ROOT

DOC = PROJECT_ROOT / "docs" / "multi_gpu.md"
TESTS = Path(__file__).resolve().parents[1]
# NAME -> (test module, test function): the test that runs the block, through ``lines(NAME)``
TESTED = {
    "mpirun": ("test_launch.py", "test_two_processes_under_a_real_mpirun"),
    "srun": ("test_launch.py", "test_two_processes_under_a_real_srun"),
    "by-hand": ("test_launch.py", "test_two_processes_with_keras_variables_set_by_hand"),
}
GRID = "GRID.yaml"  # the page's placeholder for the grid file
BY_HAND_COORDINATOR = "host0:61000"  # the by-hand block's coordinator (the test's: 127.0.0.1 at a free port)
MARKED = re.compile(r"<!-- tested: ([\w-]+) -->\n```bash\n(.*?)```", re.S)
FENCED = re.compile(r"```[^\n]*\n(.*?)```", re.S)
# a line that starts a point's processes: a launcher, or a runner given Keras' / JAX's variables
LAUNCHER = re.compile(r"^\s*(?:\S+=\S*\s+)*(?:mpirun|mpiexec|orterun|prterun|srun|salloc|sbatch)\b"
                      r"|^\s*(?:export\s+)?(?:KERAS_DISTRIBUTION_|JAX_COORDINATOR_ADDRESS|JAX_PROCESS_ID)", re.M)


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def blocks() -> dict[str, str]:
    """NAME -> the marked block's text (every marked block of the page)."""
    out: dict[str, str] = {}
    for name, body in MARKED.findall(_text()):
        assert name not in out, f"{DOC.name}: two blocks marked {name!r}"
        out[name] = body
    return out


def lines(name: str) -> list[str]:
    """The command lines of block ``name``: comments and blank lines out, continued lines joined."""
    body = blocks().get(name)
    assert body is not None, f"{DOC.name} has no block marked <!-- tested: {name} -->"
    out = []
    for line in body.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(shlex.join(words))
    assert out, f"{DOC.name}: the block marked {name!r} has no command"
    return out


def argv(line: str, grid: Path, **subs: str) -> tuple[dict, list[str]]:
    """``(variables set before the command, its argv)`` of one line, the placeholders filled in: ``GRID.yaml``
    the grid, ``python`` this interpreter, and each ``subs`` key (a text in a word) replaced by its value."""
    words = shlex.split(line)
    env = {}
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    out = []
    for w in words:
        w = str(grid) if w == GRID else sys.executable if w == "python" else w
        out.append(w)
    for old, new in subs.items():
        env = {k: v.replace(old, new) for k, v in env.items()}
        out = [w.replace(old, new) for w in out]
    return env, out


def untested_launcher_blocks() -> list[str]:
    """Fenced blocks of the page that start a launcher (or set Keras' variables) but no test runs."""
    text = _text()
    marked = {m.start(2) for m in MARKED.finditer(text)}
    return [m.group(1) for m in FENCED.finditer(text) if m.start(1) not in marked and LAUNCHER.search(m.group(1))]


def test_source(name: str) -> str:
    """The source of the test that runs block ``name`` (its function, from ``def`` to the next top-level line)."""
    module, func = TESTED[name]
    src = (TESTS / module).read_text(encoding="utf-8")
    m = re.search(rf"^def {func}\(.*?(?=^\S)", src + "\n#", re.S | re.M)
    assert m is not None, f"tests/{module} has no {func}"
    return m.group(0)
