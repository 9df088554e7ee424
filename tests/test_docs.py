"""The documentation a newcomer reads: the README's shape, its links, the generated knob table, nothing lost.

- README.md is at most 150 lines and gives the two commands (`./run_all.sh`, `./run_tests.sh`) within its first
  40 lines; it links its screenshot, every page of docs/ and every reference's README.
- Every relative link in README.md, docs/*.md and reference/**/README.md resolves to a file (or folder) here.
- docs/knobs.md is exactly what ``python -m helpers.runner.knobs_doc`` prints (helpers/params.py's table).
- docs/running.md's command line reference is exactly what ``python -m helpers.runner.cli_doc`` prints (the parsers).
- docs/csv_columns.md is exactly what ``python -m helpers.report.publish.columns_doc`` prints (the columns'
  declaration, helpers/report/load/columns.py).
- docs/report.md names every registered report section.
- docs/running.md holds the exit status table generated from ``helpers.exits.Exit``; run_all.sh points there.
- Every launcher command of docs/multi_gpu.md is one a test runs: each sits in a block marked for the test that
  reads it (support/doc_commands.py), and no other block of the page starts a launcher.
- Nothing is lost: every number of the old README (before the docs were split out; frozen at
  tests/data/old_readme.md) appears in README.md, docs/**/*.md or reference/**/README.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import chromium, doc_commands

from helpers.paths import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
OLD_README = Path(__file__).parent / "data" / "old_readme.md"
COMMANDS = ("./run_all.sh", "./run_tests.sh")
MAX_LINES = 150
COMMANDS_WITHIN = 40

# A number as the prose writes it: 1,327,443 · 0.0018 · 3.15.1 · 48 (2+ digits, or any with a decimal part).
NUMBER = re.compile(r"(?<![\d.,])\d+(?:,\d{3})*(?:\.\d+)*")
# [text](target) and <img src="target">
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|<img[^>]+src=\"([^\"]+)\"")


def numbers(text: str) -> set[str]:
    return {n for n in NUMBER.findall(text) if "." in n or len(n.replace(",", "")) >= 2}


def pages() -> list[Path]:
    """README.md, docs/**/*.md and reference/**/README.md."""
    return [README, *sorted((PROJECT_ROOT / "docs").rglob("*.md")),
            *sorted((PROJECT_ROOT / "reference").rglob("README.md"))]


def links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)  # not inside code blocks
    text = re.sub(r"`[^`\n]*`", "", text)  # nor inside inline code
    return [a or b for a, b in LINK.findall(text)]


def relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith(("#", "/"))


# ------------------------------------------------------------------ the newcomer's check


def test_readme_is_a_page_with_the_two_commands_first():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES}): move detail to docs/"
    head = "\n".join(lines[:COMMANDS_WITHIN])
    for cmd in COMMANDS:
        assert re.search(re.escape(cmd) + r"(\s|$)", head), f"{cmd} is not within README.md's first " \
                                                            f"{COMMANDS_WITHIN} lines"
    # .ci/run calls the README's test command
    assert "./run_tests.sh" in (PROJECT_ROOT / ".ci" / "run").read_text()


def test_every_relative_link_resolves():
    bad = []
    checked = 0
    for page in pages():
        for target in links(page):
            if not relative(target):
                continue
            path = target.split("#", 1)[0]
            if not path:
                continue
            checked += 1
            if not (page.parent / path).resolve().exists():
                bad.append(f"{page.relative_to(PROJECT_ROOT)}: {target}")
    assert checked > 20
    assert not bad, "links to nothing:\n" + "\n".join(bad)


def test_readme_reaches_every_docs_page_and_reference():
    """One topic a page, each reachable from the README (directly, or through a page the README links)."""
    seen: set[Path] = set()
    todo = [README.resolve()]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for target in links(page):
            if relative(target):
                dest = (page.parent / target.split("#", 1)[0]).resolve()
                if dest.suffix == ".md" and dest.is_file():
                    todo.append(dest)
    wanted = {p.resolve() for p in pages()}
    missing = sorted(str(p.relative_to(PROJECT_ROOT)) for p in wanted - seen)
    assert not missing, f"not reachable from README.md: {missing}"
    direct = {(README.parent / t.split("#", 1)[0]).resolve() for t in links(README) if relative(t)}
    for ref in (PROJECT_ROOT / "reference").rglob("README.md"):
        assert ref.resolve() in direct, f"README.md's published results do not link {ref.relative_to(PROJECT_ROOT)}"
    assert (PROJECT_ROOT / "SECURITY.md").resolve() in direct


def test_readme_shows_the_report_screenshot():
    text = README.read_text(encoding="utf-8")
    shots = [t for t in links(README) if t.endswith(".png")]
    assert shots, "README.md shows no screenshot of the report"
    for shot in shots:
        data = (PROJECT_ROOT / shot).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) < 600_000, f"{shot}: {len(data)} bytes; keep it a few hundred KB"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (1400, 900), (shot, width, height)
    assert "report_screenshot.sh" in text or "report_screenshot.sh" in (PROJECT_ROOT / "docs" / "report.md").read_text()


# ------------------------------------------------------------------ generated from the code


def test_knobs_page_is_generated_from_the_code():
    out = subprocess.run([sys.executable, "-m", "helpers.runner.knobs_doc"], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    committed = (PROJECT_ROOT / "docs" / "knobs.md").read_text(encoding="utf-8")
    assert committed == out.stdout, "docs/knobs.md differs from the code: run " \
                                    "`python -m helpers.runner.knobs_doc > docs/knobs.md`"


def test_the_command_line_reference_is_generated_from_the_parsers(tmp_path):
    """docs/running.md's reference of every verb and option is exactly what ``python -m helpers.runner.cli_doc``
    prints from the verbs' parsers; ``--write`` puts it between the markers of a page that drifted, nothing else
    touched."""
    from helpers.runner import cli_doc

    out = subprocess.run([sys.executable, "-m", "helpers.runner.cli_doc"], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = (PROJECT_ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    assert text.count(cli_doc.BEGIN) == 1 and out.stdout.rstrip("\n") in text, (
        "docs/running.md's command line reference differs from the parsers: run "
        "`python -m helpers.runner.cli_doc --write`")
    page = tmp_path / "running.md"
    page.write_text(text.replace("| `--rerun` |", "| `--rerun-all` |", 1), encoding="utf-8")
    assert cli_doc.write(page) and page.read_text(encoding="utf-8") == text and not cli_doc.write(page)


def test_every_notebooks_parameters_cell_is_generated_from_the_knobs(tmp_path):
    """Each notebook's parameters cell is exactly the one built from helpers/params.py and its workload's entry
    (values, order, notes); a drifted cell is found, named and rewritten by the generator, nothing else touched."""
    import shutil

    from helpers.paths import NOTEBOOKS
    from helpers.workloads import cells, names

    want = cells.expected()
    assert set(want) == {f"{n}.ipynb" for n in names()} | {"summary.ipynb"}
    for name, source in want.items():
        assert cells.committed(NOTEBOOKS / name) == source, (
            f"{name}: the parameters cell differs from the knobs: run `python -m helpers.workloads.cells --write`")
    out = subprocess.run([sys.executable, "-m", "helpers.workloads.cells"], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    # a drifted copy: a value changed by hand
    for f in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(f, tmp_path / f.name)
    nb = json.loads((tmp_path / "mlp_mnist.ipynb").read_text())
    other = [c["source"] for c in nb["cells"] if "parameters" not in c["metadata"].get("tags", [])]
    cell = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])][0]
    cell["source"] = [ln.replace("seed = 0", "seed = 7") for ln in cell["source"]]
    (tmp_path / "mlp_mnist.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    assert cells.differing(tmp_path) == ["mlp_mnist.ipynb"]
    assert cells.write(tmp_path) == ["mlp_mnist.ipynb"] and cells.differing(tmp_path) == []
    fixed = json.loads((tmp_path / "mlp_mnist.ipynb").read_text())
    assert [c["source"] for c in fixed["cells"] if "parameters" not in c["metadata"].get("tags", [])] == other
    assert (tmp_path / "mlp_mnist.ipynb").read_bytes() == (NOTEBOOKS / "mlp_mnist.ipynb").read_bytes()
    # the code cells every workload notebook shares: each tagged, with the one source (custom.ipynb keeps its own
    # begin and finish); a shared cell edited by hand is found and rewritten
    for name in names():
        nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
        tags = {t for c in nb["cells"] for t in c["metadata"].get("tags", [])}
        expect = set(cells.SHARED) - ({"begin", "finish"} if name == "custom" else set())
        assert expect <= tags, (name, expect - tags)
    nb = json.loads((tmp_path / "cnn_mnist.ipynb").read_text())
    fit = next(c for c in nb["cells"] if "fit" in c["metadata"].get("tags", []))
    fit["source"] = ["history = pt.fit(model, data, verbose=0)"]
    (tmp_path / "cnn_mnist.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    assert cells.differing(tmp_path) == ["cnn_mnist.ipynb"]
    assert cells.write(tmp_path) == ["cnn_mnist.ipynb"]
    assert (tmp_path / "cnn_mnist.ipynb").read_bytes() == (NOTEBOOKS / "cnn_mnist.ipynb").read_bytes()


def test_a_note_with_an_equals_sign_is_refused():
    from helpers import params as P

    with pytest.raises(ValueError, match="papermill would read it as code"):
        P.parameters_cell([("seed", 0, "seed = the answer")])
    assert P.literal({"a": [1, None, True, "x"]}) == '{"a": [1, None, True, "x"]}'


def test_knobs_page_has_every_knob_with_its_default():
    from helpers import params as P
    from helpers import workloads
    from helpers.runner import knobs_doc

    text = knobs_doc.render()
    for name in P.COMMON:
        assert re.search(rf"^\| `{name}` \| [^|]+ \|", text, re.M), name
    for key in P.RUNNER_KEYS:
        assert f"| `{key}` |" in text, key
    for wl in workloads.names():
        w = workloads.get(wl)
        for name in w.extra_params:
            assert re.search(rf"^\| `{name}` \| [^|]+ \|", text, re.M), (wl, name)
        assert f"| `{wl}` | `{w.defaults['batch_size']}` |" in text, wl
    assert "| `precision` | `float32` | `float32`, `mixed_float16`, `mixed_bfloat16` |" in text
    assert "| `jit_compile` | `auto` | `auto`, `true`, `false` |" in text


def test_report_page_names_every_section():
    from helpers.report.publish import sections

    text = (PROJECT_ROOT / "docs" / "report.md").read_text(encoding="utf-8")
    missing = [name for name in sections.ORDER if f"`{name}`" not in text]
    assert not missing, (f"docs/report.md does not describe the report sections {missing} "
                         "(helpers/report/publish/sections)")


def test_the_exit_status_table_of_the_docs_is_the_enum():
    """One definition (helpers/exits.py), documented once: docs/running.md holds the table ``python -m helpers.exits``
    prints, between its markers; run_all.sh's header points there instead of listing codes of its own."""
    from helpers import exits

    assert set(exits.DESCRIPTIONS) == set(exits.Exit) and all(exits.DESCRIPTIONS.values())
    text = (PROJECT_ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    assert text.count(exits.BEGIN) == 1 and exits.markdown() in text, "run: python -m helpers.exits"
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \|", exits.markdown(), flags=re.M)
    assert [(int(n), name) for n, name in rows] == [(int(e), e.name) for e in exits.Exit]
    header = [ln.lstrip("# ") for ln in (PROJECT_ROOT / "run_all.sh").read_text().splitlines() if ln.startswith("#")]
    line = next(ln for ln in header if ln.startswith("Exit status:"))
    assert "docs/running.md" in line and not re.search(r"\b\d+ ", line), line


def test_every_launcher_command_of_the_multi_gpu_page_is_run_by_a_test():
    """docs/multi_gpu.md's mpirun, srun and by-hand blocks are the ones tests/test_launch.py reads and runs; the
    page has no launcher block besides them (one added there must get its test and its marker)."""
    marked = doc_commands.blocks()
    assert set(marked) == set(doc_commands.TESTED), (sorted(marked), sorted(doc_commands.TESTED))
    for name in marked:
        assert doc_commands.lines(name), name
        src = doc_commands.test_source(name)
        assert f'doc_commands.lines("{name}")' in src, f"{doc_commands.TESTED[name]} does not run the {name} block"
    extra = doc_commands.untested_launcher_blocks()
    assert not extra, "docs/multi_gpu.md starts a launcher in a block no test runs (mark it <!-- tested: NAME --> " \
                      "and run it in a test, or make it prose):\n" + "\n".join(extra)


# ------------------------------------------------------------------ nothing lost


def test_numbers_extracted_as_written():
    assert numbers("1,327,443 × 50 table, 0.0018, Keras 3.15.1, 48 minutes, 2 GPUs, 3.0–8.5 s") == {
        "1,327,443", "50", "0.0018", "3.15.1", "48", "3.0", "8.5"}


@pytest.mark.skipif(not OLD_README.exists(), reason="the frozen old README is not here")
def test_no_figure_of_the_old_readme_is_lost():
    old = numbers(OLD_README.read_text(encoding="utf-8"))
    assert len(old) > 300  # the old README's figures
    new: set[str] = set()
    for page in pages():
        new |= numbers(page.read_text(encoding="utf-8"))
    from helpers.report.words.fmt import rounded

    def kept(n: str) -> bool:  # as written, or to the digits its runs support now (one string per figure)
        if n in new:
            return True
        try:
            v = float(n.replace(",", ""))
        except ValueError:
            return False
        return any(rounded(v, d) in new for d in (2, 3, 4)) if v >= 100 else False

    lost = sorted((n for n in old if not kept(n)), key=lambda n: float(n.replace(",", "").split(".")[0] or 0))
    assert not lost, f"{len(lost)} figures of the old README are in no README.md, docs/ or reference/ page: {lost}"


# inline code of the old README written another way now: where it went
RESTATED = {"auto|real|synthetic": "docs/knobs.md (data_source)", "auto|true|false": "docs/knobs.md (jit_compile)",
            "float32|mixed_float16|mixed_bfloat16": "docs/knobs.md (precision)",
            # modules moved into helpers/ subpackages (docs/architecture.md)
            "helpers/flops.py": "helpers/measure/flops_analytic.py, flops_xla.py, flops_table.py",
            "helpers/peaks.py": "helpers/measure/peaks.py",
            # one-off studies moved out of the tools (benchmarks/studies/README.md)
            "benchmarks/augment_cost.py": "benchmarks/studies/augment_cost.py",
            "benchmarks/gpu_fidelity.py": "benchmarks/studies/gpu_fidelity.py",
            "benchmarks/skeleton.py": "benchmarks/studies/skeleton.py"}


@pytest.mark.skipif(not OLD_README.exists(), reason="the frozen old README is not here")
def test_no_name_of_the_old_readme_is_lost():
    """Every `code` span of the old README (a knob, a file, a command, a variable) is still written somewhere."""
    spans = re.compile(r"`([^`\n]+)`")
    old = set(spans.findall(OLD_README.read_text(encoding="utf-8")))
    assert len(old) > 150
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages())
    lost = sorted(s for s in old if s not in text and s not in RESTATED)
    assert not lost, f"named in the old README, now nowhere in README.md, docs/ or reference/: {lost}"


# ------------------------------------------------------------------ the screenshot script


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (scripts/ensure_chromium.sh)")
def test_report_screenshot_script_writes_the_first_screen(tmp_path):
    page = tmp_path / "report.html"
    page.write_text("<!doctype html><html><body style='margin:0'><div style='height:3000px;background:#c00'>"
                    "<h1>The verdict</h1></div></body></html>")
    out = tmp_path / "shot" / "top.png"
    run = subprocess.run(["bash", str(PROJECT_ROOT / "scripts" / "report_screenshot.sh"), str(page), str(out)],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (1400, 900)
    from PIL import Image

    with Image.open(out) as img:
        r, g, b = img.convert("RGB").getpixel((700, 850))
    assert r > 150 and g < 60 and b < 60  # the page's red block fills the first screen to its bottom
    missing = subprocess.run(["bash", str(PROJECT_ROOT / "scripts" / "report_screenshot.sh"),
                              str(tmp_path / "none.html"), str(tmp_path / "x.png")], capture_output=True, text=True)
    assert missing.returncode == 1 and "no report at" in missing.stderr


def test_csv_columns_page_is_generated_from_the_columns_declaration():
    """docs/csv_columns.md is exactly what ``python -m helpers.report.publish.columns_doc`` prints, and names every
    header the report writes (the declaration in helpers/report/load/columns.py)."""
    from helpers.report.load import columns

    out = subprocess.run([sys.executable, "-m", "helpers.report.publish.columns_doc"], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, check=True)
    committed = (PROJECT_ROOT / "docs" / "csv_columns.md").read_text(encoding="utf-8")
    assert committed == out.stdout, "docs/csv_columns.md differs from the code: run " \
                                    "`python -m helpers.report.publish.columns_doc > docs/csv_columns.md`"
    headers = ([c.header for c in columns.TIDY.values() if c.csv != ""] + list(columns.CONFIG_COLUMNS.values())
               + columns.VERDICT_COLUMNS)
    assert all(f"| `{h}` |" in committed for h in headers)
