"""benchmarks/ says what each of its files is: the tools the suite relies on (benchmarks/README.md), the one-off
studies with their results (benchmarks/studies/README.md) and, apart from them, the scripts for a GPU machine with no
package index (scripts/offline_host/README.md). Each folder's README lists every file in it with a one-line purpose,
and no file there speaks of a machine the user does not have (the words of one particular rented host's tooling)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.paths import PROJECT_ROOT

FOLDERS = ("benchmarks", "benchmarks/studies", "scripts/offline_host")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")  # | `name` | purpose |
# how one particular host's tooling is spoken of, not what a user has: their own machines, uploads and sessions
FORBIDDEN = {
    r"\bdevice tool\b": "the device tool",
    r"\blent\b": "a lent machine",
    r"\blent kinds?\b": "lent kinds",
    r"KINDS\.md": "KINDS.md",
    r"carry \[": "carry [...] (the tool's argument)",
    r"\$\{?OUT\b": "$OUT (the tool's output folder; HOST_OUT or a flag instead)",
    r"\btimeout_s \d": "timeout_s N (the tool's argument)",
    r"\bdevice image\b": "the device image",
    r"\bdevice machine\b": "the device machine",
    r"\bwarm machine\b": "a warm machine",
    r"\bbudget_left": "budget_left (the tool's lease)",
}


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()
                  if p.name != "README.md" and not p.name.startswith(".") and p.name != "__pycache__")


def _rows(readme: Path) -> dict[str, str]:
    """The README's table rows: name -> purpose (the name without a trailing slash)."""
    rows = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        if m := ROW.match(line):
            rows[m.group(1).rstrip("/")] = m.group(2).strip()
    return rows


def _files_under() -> list[Path]:
    out = []
    for name in FOLDERS:
        out += [p for p in (PROJECT_ROOT / name).iterdir() if p.is_file() and "__pycache__" not in p.parts]
    return sorted(out)


def test_every_folder_of_benchmarks_is_one_of_the_described_ones():
    folders = {str(p.relative_to(PROJECT_ROOT)) for p in (PROJECT_ROOT / "benchmarks").rglob("*")
               if p.is_dir() and p.name != "__pycache__" and "__pycache__" not in p.parts}
    assert folders <= set(FOLDERS), f"folders under benchmarks/ with no README of their own: {folders - set(FOLDERS)}"


@pytest.mark.parametrize("name", FOLDERS)
def test_each_file_is_listed_in_its_folders_readme_with_its_purpose(name):
    folder = PROJECT_ROOT / name
    readme = folder / "README.md"
    assert readme.is_file(), f"{name}/ has no README.md"
    rows = _rows(readme)
    entries = _entries(folder)
    missing = [e for e in entries if e not in rows]
    assert not missing, f"{name}/README.md lists no purpose for {missing}"
    blank = [e for e in entries if len(rows[e].split()) < 3]
    assert not blank, f"{name}/README.md gives no one-line purpose for {blank}"
    stale = sorted(set(rows) - set(entries))
    assert not stale, f"{name}/README.md lists files that are not there: {stale}"


def test_the_tools_studies_and_host_scripts_are_apart():
    """The studies' scripts are not among the tools, the host plumbing is outside benchmarks/, and each study's
    section in its README gives a result (figures with a source, or says none were published)."""
    tools, studies = _rows(PROJECT_ROOT / "benchmarks" / "README.md"), _rows(
        PROJECT_ROOT / "benchmarks" / "studies" / "README.md")
    assert not set(tools) & set(studies)
    assert not list((PROJECT_ROOT / "benchmarks").glob("*.sh")), "shell plumbing belongs in scripts/offline_host/"
    text = (PROJECT_ROOT / "benchmarks" / "studies" / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    named = {s.split(":", 1)[0].strip() for s in sections}
    assert named == set(studies), f"studies without a section of their own: {set(studies) ^ named}"
    for s in sections:
        assert "- Question:" in s and "- Run:" in s and "- Result" in s, s.splitlines()[0]
        result = s.split("- Result", 1)[1]
        assert "- Source:" in s or "no figures were published" in result, s.splitlines()[0]


def test_no_file_speaks_of_a_machine_the_user_does_not_have():
    seen = []
    for path in _files_under():
        text = path.read_text(encoding="utf-8", errors="replace")
        for pattern, what in FORBIDDEN.items():
            for m in re.finditer(pattern, text, flags=re.I):
                line = text.count("\n", 0, m.start()) + 1
                seen.append(f"{path.relative_to(PROJECT_ROOT)}:{line}: {what}")
    assert not seen, "say what a user has (their own machine, its upload limit, a folder to bring back):\n" + \
        "\n".join(seen)


def test_the_forbidden_words_are_found_where_they_are():
    """The check above can fail: each pattern finds the phrase it names."""
    samples = ["a call of the device tool", "on a lent H100", "every lent kind", "see KINDS.md", 'carry [".whl"]',
               "under $OUT", "${OUT:-x}", "timeout_s 600", "the device image's", "the device machine",
               "a warm machine", "budget_left_s"]
    for pattern in FORBIDDEN:
        assert any(re.search(pattern, s, flags=re.I) for s in samples), pattern
    for sample in samples:
        assert any(re.search(p, sample, flags=re.I) for p in FORBIDDEN), sample
    assert not any(re.search(p, "HOST_OUT=/x OUTDIR silent $OUTNAME", flags=re.I) for p in FORBIDDEN)


def test_the_architecture_page_names_these_folders_and_only_what_exists():
    """docs/architecture.md's section on them names each folder and no path that is not there; helpers/ imports
    none of them (they are run by hand)."""
    text = (PROJECT_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in FOLDERS:
        assert f"`{name}/`" in text, f"docs/architecture.md does not say what {name}/ holds"
    named = set(re.findall(r"\b(?:benchmarks|scripts/offline_host)/[\w/.*-]*[\w/]", text))
    missing = sorted(p for p in named if "*" not in p and not (PROJECT_ROOT / p).exists())
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
    imports = re.compile(r"^\s*(?:from|import)\s+(?:benchmarks|scripts)\b|sys\.path.*benchmarks", re.M)
    found = [str(p.relative_to(PROJECT_ROOT)) for p in sorted((PROJECT_ROOT / "helpers").rglob("*.py"))
             if imports.search(p.read_text(encoding="utf-8"))]
    assert not found, f"helpers/ imports a script run by hand: {found}"
