"""The command line's verbs (``helpers/runner/cli.py``): each owns its options, an option of another verb is refused
with exit 2 naming the verbs that take it, ``--help`` lists every verb, and the old flags keep working for one release
(as their verb, with a note): ``./run_all.sh params/quick.yaml --validate-only`` prints what it printed before.

The refusals are checked in this process through ``cli.parse`` (it never runs anything): every verb is given each
option that the parsers declare for any other verb.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.exits import Exit
from helpers.runner import cli

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _options(ap: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in ap._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def _positionals(ap: argparse.ArgumentParser) -> list[str]:
    """A placeholder for each positional the verb requires (so that only the option can be wrong)."""
    return ["x" for a in ap._actions if not a.option_strings and a.nargs not in ("*", "?")]


def _values(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return []
    return [str(action.choices[0])] if action.choices else ["1"]


def _parse_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.parse(argv)
    assert exc.value.code == 2, argv
    return " ".join(capsys.readouterr().err.split())


def test_every_verb_refuses_each_option_of_every_other_verb_naming_the_verbs_that_take_it(capsys):
    _, own = cli.parsers()
    assert set(own) == set(cli.VERBS) == {"run", "validate", "report", "compare", "predict", "lab"}
    flags_of = {name: {f for a in _options(ap) for f in a.option_strings} for name, ap in own.items()}
    every = {a.option_strings[0]: a for ap in own.values() for a in _options(ap)}  # each option once
    checked = 0
    for verb, ap in own.items():
        for flag, action in every.items():
            if flag in flags_of[verb]:
                continue
            err = _parse_error([verb, *_positionals(ap), flag, *_values(action)], capsys)
            takers = [name for name in own if flag in flags_of[name]]
            assert f"{verb} takes no {flag}: {flag} is an option of: {', '.join(takers)}" in err, (verb, err)
            assert f"run_all.sh {verb}" in err  # the verb's own usage line
            checked += 1
    assert len(every) >= 19 and checked == sum(len(every) - len(flags_of[v]) for v in own) >= 60, checked
    # and through main, as the runner's callers get it: the status, nothing run
    assert cli.main(["compare", "a", "b", "--timeout", "5"]) == Exit.BAD_GRID
    assert "--timeout is an option of: run, validate" in capsys.readouterr().err


def test_every_verb_takes_each_of_its_own_options(capsys):
    _, own = cli.parsers()
    for verb, ap in own.items():
        for action in _options(ap):
            got, args = cli.parse([verb, *_positionals(ap), action.option_strings[0], *_values(action)])
            assert got.name == verb and getattr(args, action.dest) not in (None, False), (verb, action.dest)
    assert capsys.readouterr().err == ""


def test_an_abbreviated_option_of_another_verb_is_named_whole(capsys):
    err = _parse_error(["validate", "params/quick.yaml", "--prec", "float32"], capsys)
    assert "validate takes no --precision: --precision is an option of: predict" in err
    assert "ambiguous option: --price" in _parse_error(["validate", "--price", "x"], capsys)


def test_the_lab_passes_its_options_to_jupyter_but_refuses_the_runners(capsys):
    verb, args = cli.parse(["lab", "--no-browser", "--port", "8899", "--ServerApp.port_retries=0"])
    assert verb.name == "lab" and args.jupyter == ["--no-browser", "--port", "8899", "--ServerApp.port_retries=0"]
    assert "lab takes no --out: --out is an option of: run, report, compare" in _parse_error(["lab", "--out=d"], capsys)


def test_a_first_argument_that_is_not_a_verb_means_run():
    verb, args = cli.parse(["params/quick.yaml", "--rerun"])
    assert verb.name == "run" and args.grids == [Path("params/quick.yaml")] and args.rerun
    verb, args = cli.parse([])
    assert verb.name == "run" and args.grids == [] and not args.validate_only and not args.report_only


@pytest.mark.parametrize(("old", "flag", "new"), [
    (["params/quick.yaml", "--validate-only", "--shard", "0/2"], "--validate-only",
     ["validate", "params/quick.yaml", "--shard", "0/2"]),
    (["--report-only", "--inputs", "a", "b"], "--report-only", ["report", "--inputs", "a", "b"]),
    (["--out", "o", "--compare", "a:b", "c", "--fail-if-slower", "10%"], "--compare",
     ["compare", "a:b", "c", "--out", "o", "--fail-if-slower", "10%"]),
    (["--predict=m.keras", "--batch-size", "8"], "--predict", ["predict", "m.keras", "--batch-size", "8"]),
    (["--lab", "--no-browser", "--port=8899"], "--lab", ["lab", "--no-browser", "--port=8899"]),
    (["params/quick.yaml", "--validate"], "--validate-only", ["validate", "params/quick.yaml"]),  # abbreviated
])
def test_an_old_flag_is_its_verb_with_a_one_line_note(old, flag, new, capsys):
    verb, args = cli.parse(old)
    err = capsys.readouterr().err.splitlines()
    assert err == [f"note: {flag} is deprecated and goes in the next release; write: run_all.sh {' '.join(new)}"]
    want_verb, want_args = cli.parse(new)
    assert capsys.readouterr().err == ""
    assert verb.name == want_verb.name and vars(args) == vars(want_args)


def test_the_old_combinations_the_issue_cites_exit_2_and_list_nothing(capsys):
    # --precision belongs to predict: validate lists the grid's runs with their own precision, so it is refused
    assert cli.main(["--precision", "mixed_bfloat16", "--validate-only", "params/quick.yaml"]) == Exit.BAD_GRID
    out, err = capsys.readouterr()
    assert out == "" and "validate takes no --precision: --precision is an option of: predict" in err
    assert cli.main(["--report-only", "--validate-only", "params/quick.yaml"]) == Exit.BAD_GRID
    out, err = capsys.readouterr()
    assert out == "" and "two verbs given: --report-only (report) and --validate-only (validate); give one" in err
    assert cli.main(["validate", "--compare", "a", "b"]) == Exit.BAD_GRID
    assert "two verbs given: --compare (compare) and validate" in capsys.readouterr().err
    assert cli.main(["--compare", "a"]) == Exit.BAD_GRID and "--compare needs 2 values" in capsys.readouterr().err


def test_the_help_names_every_verb_and_each_verbs_help_its_options(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for verb in cli.VERBS.values():
        assert re.search(rf"\b{verb.name} {re.escape(verb.summary)}", text), verb.name
    _, own = cli.parsers()
    for name, ap in own.items():
        with pytest.raises(SystemExit) as exc:
            cli.main([name, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: run_all.sh {name} ")
        for action in _options(ap):
            assert action.option_strings[0] in out, (name, action.option_strings[0])


def test_run_all_validate_only_prints_what_validate_prints(tmp_path):
    """``./run_all.sh params/quick.yaml --validate-only`` as today: the same stdout as ``validate``, status 0, and on
    stderr only the note; nothing written (CGB_OUTPUTS stays empty). This Python, nothing installed."""
    env = {**os.environ, "CGB_USE_CURRENT_PYTHON": "1", "CGB_OFFLINE": "1", "CGB_OUTPUTS": str(tmp_path / "out"),
           "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}

    def run_all(*argv):
        return subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), *argv], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=300)

    old, new = run_all("params/quick.yaml", "--validate-only"), run_all("validate", "params/quick.yaml")
    assert old.returncode == new.returncode == 0, old.stderr + new.stderr
    assert old.stdout == new.stdout
    lines = old.stdout.splitlines()
    n_points, n_runs = map(int, re.fullmatch(r"(\d+) points valid, (\d+) runs", lines[-1]).groups())
    assert n_runs >= n_points > 0 and sum(bool(re.match(r"\[\d+/\d+\] ", ln)) for ln in lines) == n_runs
    assert [ln for ln in old.stderr.splitlines() if "deprecated" in ln] == [
        "note: --validate-only is deprecated and goes in the next release; write: run_all.sh validate "
        "params/quick.yaml"]
    assert "deprecated" not in new.stderr
    assert not any((tmp_path / "out").rglob("*"))
