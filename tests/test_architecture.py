"""The shape of helpers/ (docs/architecture.md): a few modules at the top beside one subpackage a concern, no module
a newcomer cannot read in one sitting, and a map whose every path exists and that names every module; every
Markdown page's fences close and its links resolve."""

from __future__ import annotations

import re

from helpers.paths import PROJECT_ROOT

HELPERS = PROJECT_ROOT / "helpers"
MAX_TOP_MODULES = 8
MAX_LINES = 300
ARCHITECTURE = PROJECT_ROOT / "docs" / "architecture.md"


def test_helpers_top_holds_few_modules_beside_its_subpackages():
    top = sorted(p.name for p in HELPERS.glob("*.py"))
    packages = sorted(p.name for p in HELPERS.iterdir() if (p / "__init__.py").is_file())
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules at the top of helpers/: {top}"
    assert {"runner", "point", "measure", "data", "record", "report", "workloads"} <= set(packages)
    strays = sorted(p.name for p in HELPERS.iterdir() if p.is_dir() and p.name != "__pycache__"
                    and not (p / "__init__.py").is_file())
    assert not strays, f"folders of helpers/ that are not packages: {strays}"


def test_no_module_of_helpers_is_longer_than_a_sitting():
    long = {str(p.relative_to(PROJECT_ROOT)): n for p in sorted(HELPERS.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by what they do): {long}"


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
    """Each module of each subpackage is named on the page (its file name in its folder's row, or its path); the
    report's sections are one module a section, listed by their registry, and named as a folder."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    unnamed = []
    for mod in sorted(HELPERS.glob("*/*.py")):
        if mod.name == "__init__.py" or mod.parent.name.startswith("_"):
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
