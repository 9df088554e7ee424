"""The old spellings of the verbs, kept for one release: ``--validate-only``, ``--report-only``, ``--compare OLD NEW``,
``--predict FILE.keras`` and (first) ``--lab`` are read as the verb they stand for, with a one-line note on stderr
naming the new spelling. Delete this module (and its call in ``cli.parse``) when the release after ends.

    argv = translate(["params/quick.yaml", "--validate-only"], error)   # ["validate", "params/quick.yaml"] + note

Two verbs in one command (two old flags, or an old flag beside a verb) is a usage error (``error(message)``,
argparse's: exit 2), never one of them silently.
"""

from __future__ import annotations

import shlex
import sys

from helpers.runner.cli_options import OPTIONS, resolve

# old flag -> (verb, how many values it takes: they become the verb's positionals)
OLD = {"--validate-only": ("validate", 0), "--report-only": ("report", 0), "--compare": ("compare", 2),
       "--predict": ("predict", 1), "--lab": ("lab", 0)}


def _note(flag: str, new: list[str]) -> None:
    print(f"note: {flag} is deprecated and goes in the next release; write: run_all.sh {shlex.join(new)}",
          file=sys.stderr)


def translate(argv: list[str], verbs, error) -> list[str]:
    """``argv`` with an old verb flag rewritten as its verb (first, its values after it), the note printed; ``argv``
    itself when it holds none. ``verbs``: the verbs' names; ``error(message)`` does not return."""
    if argv and argv[0] == "--lab":  # as before, only first: the rest goes to `jupyter lab` untouched
        _note("--lab", ["lab", *argv[1:]])
        return ["lab", *argv[1:]]
    found, rest, i = [], [], 0
    known = {**OPTIONS, **{k: None for k in OLD if k != "--lab"}}
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            rest += argv[i:]
            break
        flag = resolve(tok, known)
        if flag not in OLD:
            rest.append(tok)
            i += 1
            continue
        verb, n = OLD[flag]
        name, eq, value = tok.partition("=")
        if eq and n == 0:
            error(f"{flag} takes no value")
        values = ([value] if eq else []) + argv[i + 1:i + 1 + n - bool(eq)]
        if len(values) < n or any(v.startswith("--") for v in values):
            error(f"{flag} needs {n} value{'s' if n > 1 else ''}: run_all.sh {verb} --help")
        found.append((flag, verb, values))
        i += 1 + n - bool(eq)
    if not found:
        return argv
    given = [f"{flag} ({verb})" for flag, verb, _ in found] + ([rest[0]] if rest and rest[0] in verbs else [])
    if len(given) > 1:
        error(f"two verbs given: {' and '.join(given)}; give one")
    flag, verb, values = found[0]
    new = [verb, *values, *rest]
    _note(flag, new)
    return new
