"""The shape of helpers/ (docs/architecture.md): a few modules at the top beside one subpackage a concern, a map whose
every path exists and that names every module, and the claims the page makes that a test can check: the report's
four stages, the one atomic writer, the one formatter, no file read after the load stage; every Markdown page's
fences close and its links resolve."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers.paths import PROJECT_ROOT

HELPERS = PROJECT_ROOT / "helpers"
REPORT = HELPERS / "report"
STAGES = ("load", "derive", "words", "publish")  # the report's stages, in their order
MAX_TOP_MODULES = 8
ARCHITECTURE = PROJECT_ROOT / "docs" / "architecture.md"


def test_helpers_top_holds_few_modules_beside_its_subpackages():
    top = sorted(p.name for p in HELPERS.glob("*.py"))
    packages = sorted(p.name for p in HELPERS.iterdir() if (p / "__init__.py").is_file())
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules at the top of helpers/: {top}"
    assert {"runner", "point", "measure", "data", "record", "report", "workloads"} <= set(packages)
    strays = sorted(p.name for p in HELPERS.iterdir() if p.is_dir() and p.name != "__pycache__"
                    and not (p / "__init__.py").is_file())
    assert not strays, f"folders of helpers/ that are not packages: {strays}"


def _named_paths(text: str) -> set[str]:
    """Every ``helpers/...`` path and ``helpers.x.y`` module the page names (in code spans, tables, prose)."""
    paths = set(re.findall(r"\bhelpers/[\w/]*\w(?:\.py)?/?", text))
    modules = {m.replace(".", "/") for m in re.findall(r"\bhelpers(?:\.[a-z_]\w*)+", text)}
    return paths | modules


def _exists(path: str) -> bool:
    p = PROJECT_ROOT / path.rstrip("/")
    if p.exists() or p.with_suffix(".py").exists():
        return True
    # helpers.x.y.name: a name defined in module helpers/x/y.py, or one that package helpers/x/y offers
    parent, _, name = path.rstrip("/").rpartition("/")
    for mod in (PROJECT_ROOT / f"{parent}.py", PROJECT_ROOT / parent / "__init__.py"):
        if mod.is_file() and re.search(rf"^(?:def|class)\s+{name}\b|^{name}\s*[:=]|^from \S+ import .*\b{name}\b",
                                       mod.read_text(), re.M):
            return True
    return False


def test_architecture_page_names_only_what_exists_and_every_folder():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = _named_paths(text)
    assert len(named) >= 30, "the page should walk through the folders and the flow of one point"
    missing = sorted(p for p in named if not _exists(p))
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
    for pkg in sorted(p for p in HELPERS.iterdir() if (p / "__init__.py").is_file()):
        assert f"helpers/{pkg.name}/" in text, f"docs/architecture.md does not say what helpers/{pkg.name}/ owns"
    for mod in sorted(HELPERS.glob("*.py")):
        if mod.name != "__init__.py":
            assert f"helpers/{mod.name}" in text, f"docs/architecture.md does not say what helpers/{mod.name} is"


def test_the_path_check_fails_on_a_path_that_is_not_there():
    assert _exists("helpers/runner/cli.py") and _exists("helpers/runner/cli") and _exists("helpers/paths/outputs_dir")
    assert _exists("helpers/report/build_context")  # offered by the package helpers/report/
    assert not _exists("helpers/runner/nothing.py") and not _exists("helpers/paths/no_such_name")
    assert _named_paths("see `helpers.point.session.begin` and helpers/report/") == {
        "helpers/point/session/begin", "helpers/report/"}


def test_mfu_has_one_formula():
    """MFU is computed in one place (helpers.measure.peaks.mfu), for the record and the report alike: any other
    module that sets an ``mfu`` from figures calls it (or sets None, or reads the record's)."""
    setters = re.compile(r"""(?:\["mfu"\]\s*=|(?<![=!<>])\bmfu\s*=)(?!=)\s*(?P<rhs>.+)""")
    allowed = re.compile(r"^(?:peaks\.mfu\(|mfu\(|None\b|_known\(|s\.get\(|\"\"|_pct\()")
    found = []
    for path in sorted(HELPERS.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = setters.search(line)
            if m and not allowed.match(m.group("rhs").strip()):
                found.append(f"{path.relative_to(PROJECT_ROOT)}:{n}: {line.strip()}")
    assert not found, "an MFU computed outside helpers.measure.peaks.mfu:\n" + "\n".join(found)
    from helpers.measure import peaks

    assert peaks.mfu(2.0, 10.0, 40.0) == 0.5 and peaks.limit_fields(2e9, 10.0, "gpu", "NVIDIA H100 80GB HBM3")[
        "mfu"] == peaks.mfu(2e9, 10.0, peaks.peak("gpu", "NVIDIA H100 80GB HBM3")[0])


def test_architecture_page_names_every_module_of_helpers():
    """Each module of each subpackage is named on the page (its file name in its folder's row, or its path), the
    report's stages' modules too; the report's sections are one module a section, listed by their registry, and
    named as a folder."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    unnamed = []
    for mod in sorted(HELPERS.rglob("*.py")):
        if mod.name == "__init__.py" or mod.parent == HELPERS or mod.relative_to(HELPERS).parts[0].startswith("_"):
            continue
        if mod.parent.name == "sections" and f"{mod.parent.relative_to(PROJECT_ROOT).as_posix()}/" in text:
            continue
        rel = mod.relative_to(PROJECT_ROOT).as_posix()
        if f"`{mod.name}`" not in text and rel not in text and f"({mod.name}" not in text:
            unnamed.append(rel)
    assert not unnamed, f"docs/architecture.md does not name: {unnamed}"


def _pages():
    return [PROJECT_ROOT / "README.md", PROJECT_ROOT / "SECURITY.md", *sorted((PROJECT_ROOT / "docs").glob("*.md")),
            *sorted((PROJECT_ROOT / "reference").glob("**/README.md"))]


def test_every_markdown_page_closes_its_fences_and_its_links_resolve():
    """A fence left open renders the rest of the page as code; a relative link to a file that is not there is a
    dead end. Links to the web and to anchors alone are not followed."""
    bad = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        fences = [ln for ln in text.splitlines() if ln.lstrip().startswith("```")]
        if len(fences) % 2:
            bad.append(f"{page.relative_to(PROJECT_ROOT)}: a code fence is never closed")
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                bad.append(f"{page.relative_to(PROJECT_ROOT)}: link to {target} resolves to nothing")
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------ the report's stages

def _calls(path: Path):
    """(line, the called name, what it is called on) of every call in a module."""
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute):
                yield n.lineno, f.attr, ast.unparse(f.value)
            elif isinstance(f, ast.Name):
                yield n.lineno, f.id, ""


def _stage_modules(*stages: str) -> list[Path]:
    return sorted(p for s in stages for p in (REPORT / s).rglob("*.py"))


def test_the_report_is_four_stages_and_every_module_lives_in_one():
    """helpers/report/ holds the four stages' folders and its __init__.py (the entry points), nothing else; each
    stage imports nothing of a later stage (import-linter's contract in pyproject.toml says the same: this is the
    check without it)."""
    assert sorted(p.name for p in REPORT.glob("*.py")) == ["__init__.py"]
    folders = sorted(p.name for p in REPORT.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(STAGES), folders
    later = []
    for i, stage in enumerate(STAGES):
        for mod in _stage_modules(stage):
            for n in ast.walk(ast.parse(mod.read_text(encoding="utf-8"))):
                if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("helpers.report."):
                    theirs = n.module.split(".")[2]
                    rel = mod.relative_to(PROJECT_ROOT).as_posix()
                    if theirs in STAGES[i + 1:]:
                        later.append(f"{rel}:{n.lineno} imports {n.module} (a later stage)")
    assert not later, "\n".join(later)


READS = {"open", "read_text", "read_bytes", "safe_load", "read_csv", "glob", "rglob", "iterdir", "scandir",
         "listdir", "read_records", "read_json_file", "gethostname", "cpu_count", "virtual_memory"}
PUBLISHED_FOLDER = {"index.py", "index_folder.py", "failed.py"}  # publish reads the folder it publishes to (docs)


def _file_reads(path: Path) -> list[str]:
    """Every call of a module that reads a file or asks the host, and every import of a module that does."""
    where = path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path.name
    found = [f"{where}:{line}: {on + '.' if on else ''}{name}" for line, name, on in _calls(path)
             if name in READS or (name == "load" and on == "json")]
    return found + [f"{where}: imports {m}" for m in _imported(path)
                    if m.split(".")[0] in ("psutil", "socket", "glob", "yaml")]


def _imported(path: Path) -> list[str]:
    out = []
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.Import):
            out += [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module:
            out.append(n.module)
    return out


def test_no_file_is_read_after_the_load_stage():
    """derive/, words/ and publish/ read no file and ask the host nothing: the load stage reads, the data goes down
    through the context. Publish writes, and reads only the folder it publishes to (``PUBLISHED_FOLDER``)."""
    found = [r for mod in _stage_modules("derive", "words", "publish")
             if mod.name not in PUBLISHED_FOLDER or mod.parent.name != "publish" for r in _file_reads(mod)]
    assert not found, "a file read after the load stage:\n" + "\n".join(found)
    assert any(_file_reads(mod) for mod in _stage_modules("load"))  # the scan sees the reads where they are


def test_the_read_scan_finds_a_read(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text("import yaml\n\ndef f(p):\n    return yaml.safe_load(p.read_text()), open(p).read()\n")
    assert {r.rsplit(": ", 1)[1] for r in _file_reads(mod)} == {"yaml.safe_load", "p.read_text", "open",
                                                               "imports yaml"}


# a format spec that writes no figure: a control character's escape in a CSV cell, a file mode and a default in
# an error message; and fresh.py's basis sentence, still made where its interval is computed (docs)
NOT_FIGURES = {("helpers/report/publish/csvs.py", "02x"), ("helpers/report/publish/index_folder.py", "04o"),
               ("helpers/report/publish/index_folder.py", "g"), ("helpers/report/derive/fresh.py", ".3f")}


def _format_specs(path: Path) -> list[tuple[int, str]]:
    """(line, spec) of every f-string format spec of a module: ``{v:.2f}`` -> '.2f'."""
    out = []
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.FormattedValue) and n.format_spec is not None:
            out.append((n.lineno, "".join(v.value for v in n.format_spec.values if isinstance(v, ast.Constant))))
    return out


def test_one_formatter_figures_become_strings_in_words_only():
    """No f-string of derive/ or publish/ formats a number (``{v:.2f}``, ``{v:,.0f}``, ``{v:.0%}``): a figure
    becomes a string in words/ (fmt.py), the same wherever it is shown. The few specs that write no figure are
    ``NOT_FIGURES``."""
    found = []
    for mod in _stage_modules("derive", "publish"):
        rel = mod.relative_to(PROJECT_ROOT).as_posix()
        found += [f"{rel}:{line}: {{...:{spec}}}" for line, spec in _format_specs(mod)
                  if (rel, spec) not in NOT_FIGURES]
    assert not found, "a figure formatted outside words/ (use helpers/report/words/fmt.py):\n" + "\n".join(found)
    assert any(_format_specs(REPORT / "words" / "fmt.py"))  # the scan sees the specs where they are
    from helpers.report.words import fmt

    assert (fmt.share(0.416), fmt.percent(41.6), fmt.percent(None, "n/a"), fmt.whole(22500.4), fmt.count(50000),
            fmt.plain(2.0), fmt.fixed(0.8412), fmt.stable(1 / 3)) == (
        "42%", "42%", "n/a", "22,500", "50,000", "2", "0.84", "0.333333")


def _defs_calling(names: set[str]) -> dict[str, set[str]]:
    """{module path: the functions of it that call one of ``names``} over helpers/."""
    out: dict[str, set[str]] = {}
    for mod in sorted(HELPERS.rglob("*.py")):
        for f in ast.walk(ast.parse(mod.read_text(encoding="utf-8"))):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                called = {(c.func.attr, ast.unparse(c.func.value)) for c in ast.walk(f)
                          if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)}
                if any(on == "os" and name in names for name, on in called):
                    out.setdefault(mod.relative_to(PROJECT_ROOT).as_posix(), set()).add(f.name)
    return out


def test_one_atomic_writer():
    """One function of helpers/ writes a file and renames it over its name: record.writer.write_text_atomic. The
    other renames move a file a tool or a run wrote whole (docs/architecture.md says which); the one hard link is
    the shard plan's exclusive create, where the first writer must win."""
    renames = _defs_calling({"replace", "rename"})
    assert renames == {"helpers/record/writer.py": {"write_text_atomic"},
                       "helpers/runner/notebook.py": {"set_aside", "run_point"}}, renames
    assert _defs_calling({"link"}) == {"helpers/runner/shard.py": {"fixed_plan"}}
    writers = {f.name for f in ast.walk(ast.parse((HELPERS / "record" / "writer.py").read_text()))
               if isinstance(f, ast.FunctionDef) and "atomic" in f.name}
    assert writers == {"write_text_atomic", "write_atomic"}  # write_atomic: JSON through write_text_atomic
    every = [f"{mod.relative_to(PROJECT_ROOT)}: {f.name}" for mod in sorted(HELPERS.rglob("*.py"))
             for f in ast.walk(ast.parse(mod.read_text(encoding="utf-8")))
             if isinstance(f, ast.FunctionDef) and f.name == "write_text_atomic"]
    assert every == ["helpers/record/writer.py: write_text_atomic"], every
