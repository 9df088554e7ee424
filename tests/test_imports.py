"""The import graph of ``helpers`` has no cycle (parsed with ``ast``, nothing imported); its layers hold.


Edges: every ``import`` / ``from ... import`` in a module, at any depth (inside functions too:
a deferred import is still a dependency), relative imports resolved; ``from P import n`` is an edge
to ``P.n`` when that is a module, else to ``P`` (the module that defines ``n``). And the dynamic
imports, ``importlib.import_module(...)``: a constant, or an f-string over ``__name__`` and names
bound to module-level tuples of strings (``for _m in _MODULES``, also in comprehensions);
``f"{__name__}.{name}"`` with ``name`` unknown (a look-up by name) counts as an edge to every
direct submodule of the package: a plugin registry may load any of them. Any other dynamic import
fails the test rather than going unseen.

Python also initialises the parent packages of every module it imports; those implicit child ->
parent edges are not counted, or every package importing its own submodules would be a cycle.

The package-registration pattern, handled explicitly: a package loads its own submodules by name
(``importlib.import_module(f"{__name__}.{m}")``) while they take names from the package itself
(``from . import Section``): P -> P.m -> P. Tolerated only for the packages in
``REGISTRATION_PACKAGES`` (none today), by dropping the loader's edge P -> P.m where P.m imports
P directly; every other cycle still counts. Neither registry has such a cycle: the workload modules
import ``Workload``/``register`` from ``helpers.workloads.registry`` and the report's sections import
``Section`` from ``helpers.report.publish.sections.base``, each re-exported by its package.
"""

from __future__ import annotations

import ast
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.paths import PROJECT_ROOT

# Packages allowed the registration pattern above (the package loads its submodules lazily by name
# and they import names from it). Prefer a small registry module, as helpers.workloads does.
REGISTRATION_PACKAGES: set[str] = set()
STATIC, DYNAMIC = "static", "dynamic"


def _modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) for every module under ``root`` (the package folder)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _literal_strings(node) -> list[str] | None:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


class _Imports(ast.NodeVisitor):
    """What one module imports: {target module: {"static"|"dynamic"}}, and the dynamic imports it could not resolve."""

    def __init__(self, name: str, is_pkg: bool, modules: dict, package: str, tree: ast.Module):
        self.name, self.modules, self.package = name, modules, package
        self.here = name if is_pkg else name.rpartition(".")[0]
        self.edges: dict[str, set[str]] = {}
        self.unresolved: list[str] = []
        self.scope: dict[str, list[str]] = {"__name__": [name]}  # names with known string values
        for stmt in tree.body:  # module-level constants: X = ("a", "b")
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                values = _literal_strings(stmt.value)
                if values is not None:
                    self.scope[stmt.targets[0].id] = values

    def _add(self, target: str, kind: str = STATIC) -> None:
        if target == self.package or target.startswith(self.package + "."):
            while target not in self.modules and "." in target:  # helpers.x.attr -> helpers.x
                target = target.rpartition(".")[0]
            if target in self.modules and target != self.name:
                self.edges.setdefault(target, set()).add(kind)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.here.split(".")
            base = base[:len(base) - (node.level - 1)]
            base = ".".join(base + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.modules else base)

    def _bound(self, pairs, node) -> None:
        """Visit ``node`` with loop variables bound to the values of module-level tuples."""
        saved = dict(self.scope)
        for target, it in pairs:
            if isinstance(target, ast.Name) and isinstance(it, ast.Name) and it.id in self.scope:
                self.scope[target.id] = self.scope[it.id]
            elif isinstance(target, ast.Name):
                self.scope.pop(target.id, None)
        self.generic_visit(node)
        self.scope = saved

    def visit_For(self, node: ast.For) -> None:  # for _m in _MODULES: import_module(f"{__name__}.{_m}")
        self._bound([(node.target, node.iter)], node)

    def _visit_comp(self, node) -> None:  # [import_module(f"{__name__}.{n}") for n in ORDER]
        self._bound([(g.target, g.iter) for g in node.generators], node)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _visit_comp

    def _values(self, node) -> list[str] | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            return self.scope.get(node.id)
        if isinstance(node, ast.FormattedValue) and node.conversion == -1 and node.format_spec is None:
            return self._values(node.value)
        if isinstance(node, ast.JoinedStr):
            parts = [self._values(v) for v in node.values]
            if any(p is None for p in parts):
                return None
            return ["".join(combo) for combo in itertools.product(*parts)]
        return None

    def _any_submodule(self, node) -> list[str] | None:
        """``f"{__name__}.{name}"`` with ``name`` unknown: every direct submodule of this package."""
        if (isinstance(node, ast.JoinedStr) and len(node.values) == 3 and self.name == self.here
                and self._values(node.values[0]) == [self.name] and self._values(node.values[1]) == ["."]):
            return [m for m in self.modules if m.rpartition(".")[0] == self.name]
        return None

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in ("import_module", "__import__"):
            arg = node.args[0] if node.args and not node.keywords else None
            values = (self._values(arg) or self._any_submodule(arg)) if arg is not None else None
            if values is None:
                self.unresolved.append(f"{self.name}:{node.lineno}: {ast.unparse(node)}")
            else:
                for v in values:
                    self._add(v, DYNAMIC)
        self.generic_visit(node)


def import_graph(root: Path, package: str) -> tuple[dict[str, dict[str, set[str]]], list[str]]:
    """(module -> {imported module of the package: kinds of import}, dynamic imports not resolved)."""
    modules = _modules(root, package)
    graph, unresolved = {}, []
    for name, (path, is_pkg) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        v = _Imports(name, is_pkg, modules, package, tree)
        v.visit(tree)
        graph[name], unresolved = v.edges, unresolved + v.unresolved
    return graph, unresolved


def registration_pairs(graph) -> set[tuple[str, str]]:
    """(P, P.m): P loads its submodule P.m only by name (importlib) and P.m imports P directly."""
    return {(p, m) for p, edges in graph.items() for m, kinds in edges.items()
            if kinds == {DYNAMIC} and m.rpartition(".")[0] == p and p in graph.get(m, {})}


def without(graph, pairs) -> dict[str, set[str]]:
    """The plain graph (module -> imported modules), less the edges in ``pairs``."""
    return {a: {b for b in edges if (a, b) not in pairs} for a, edges in graph.items()}


def find_cycle(graph: dict) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (depth-first search, deterministic order)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


# ---------------------------------------------------------------- the helpers package


def _helpers_graph():
    graph, unresolved = import_graph(PROJECT_ROOT / "helpers", "helpers")
    assert not unresolved, ("dynamic imports the test cannot resolve (use a constant, or an f-string over "
                            f"__name__ and a module-level tuple): {unresolved}")
    return graph


def test_helpers_import_graph_has_no_cycle():
    graph = _helpers_graph()
    pairs = registration_pairs(graph)
    odd = sorted({p for p, _ in pairs} - REGISTRATION_PACKAGES)
    assert not odd, (f"{odd}: the package imports its submodules by name and they import the package back; "
                     "move what they import into a small module of the package (as helpers.workloads.registry)")
    cycle = find_cycle(without(graph, pairs))
    assert cycle is None, "import cycle in helpers: " + " -> ".join(cycle)


def test_graph_sees_registration_deferred_and_one_way_image_edges():
    graph = _helpers_graph()
    # the registration loop (importlib over _MODULES) is seen, and no workload module imports the package back
    assert {"helpers.workloads.fasttext_imdb", "helpers.workloads.bilstm_imdb",
            "helpers.workloads.lstm_textgen", "helpers.workloads.catsdogs"} <= set(graph["helpers.workloads"])
    assert not any(p == "helpers.workloads" for p, _ in registration_pairs(graph))
    for name in ("fasttext_imdb", "bilstm_imdb", "lstm_textgen", "catsdogs"):
        assert "helpers.workloads.registry" in graph[f"helpers.workloads.{name}"]
        assert "helpers.workloads" not in graph[f"helpers.workloads.{name}"]
    # the generator uses the pipeline, never the reverse (not even deferred, inside a function)
    for pipeline in ("helpers.data.image_plan", "helpers.data.image_augment", "helpers.data.image_folders"):
        assert pipeline in graph["helpers.data.image_sequence"]
        assert "helpers.data.image_sequence" not in graph[pipeline]
    assert "helpers.data.image_sequence" in graph["helpers.workloads.catsdogs"]  # the deferred import counts
    assert "helpers.workloads.lstm" in graph["helpers.workloads.bilstm_imdb"]


# The layers of helpers/: import-linter's contract in pyproject.toml ([tool.importlinter]), run by ./run_tests.sh.


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter over the helpers package under ``root``, with the project's contract."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(PROJECT_ROOT / 'pyproject.toml')!r}, no_cache=True, "
            "no_logo=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})


def test_the_layers_contract_holds_and_fails_on_a_planted_upward_import(tmp_path):
    """The contracts (helpers' layers, the report's stages) are kept by the code as it is; a copy of helpers/ with
    one upward import planted (the record layer importing the runner, inside a function) breaks it, named; so does
    a report stage importing a later one."""
    ok = _lint_imports(PROJECT_ROOT)
    assert ok.returncode == 0 and "2 kept, 0 broken" in ok.stdout, ok.stdout[-2000:] + ok.stderr[-2000:]
    shutil.copytree(PROJECT_ROOT / "helpers", tmp_path / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    check = tmp_path / "helpers" / "record" / "check.py"
    check.write_text(check.read_text() + "\n\ndef _planted():\n    from helpers.runner import cli  # noqa\n")
    bad = _lint_imports(tmp_path)
    assert bad.returncode != 0 and "BROKEN" in bad.stdout, bad.stdout[-2000:]
    assert "helpers.record.check -> helpers.runner.cli" in bad.stdout, bad.stdout[-3000:]
    aggregate = tmp_path / "helpers" / "report" / "derive" / "aggregate.py"
    planted = "\n\ndef _planted():\n    from helpers.report.publish import csvs  # noqa\n"
    aggregate.write_text(aggregate.read_text() + planted)
    bad = _lint_imports(tmp_path)
    assert "helpers.report.derive.aggregate -> helpers.report.publish.csvs" in bad.stdout, bad.stdout[-3000:]


# ---------------------------------------------------------------- the checker itself


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_checker_finds_deferred_cycles_and_the_registration_pattern(tmp_path):
    pkg = _write(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .a import thing\n",  # deferred: still a dependency
        "reg/__init__.py": ("import importlib\nfrom .registry import register\n_MODULES = ('one',)\n"
                            "for _m in _MODULES:\n    importlib.import_module(f'{__name__}.{_m}')\n"),
        "reg/registry.py": "def register(x):\n    return x\n",
        "reg/one.py": "from .registry import register\nfrom ..a import b\n",
        "lazy/__init__.py": ("import importlib\nORDER = ['x']\nclass Part: ...\n"
                             "def parts():\n    return [importlib.import_module(f'{__name__}.{n}') for n in ORDER]\n"
                             "def get(name):\n    return importlib.import_module(f'{__name__}.{name}')\n"),
        "lazy/x.py": "from . import Part\n",
        "lazy/y.py": "X = 1\n",
    })
    graph, unresolved = import_graph(pkg, "pkg")
    assert not unresolved
    assert set(graph["pkg.reg"]) == {"pkg.reg.registry", "pkg.reg.one"}
    assert set(graph["pkg.reg.one"]) == {"pkg.reg.registry", "pkg.a"}
    assert graph["pkg.lazy"] == {"pkg.lazy.x": {DYNAMIC}, "pkg.lazy.y": {DYNAMIC}}  # get(name): any submodule
    assert registration_pairs(graph) == {("pkg.lazy", "pkg.lazy.x")}
    assert find_cycle(without(graph, registration_pairs(graph))) == ["pkg.a", "pkg.b", "pkg.a"]

    (pkg / "b.py").write_text("def f():\n    pass\n")
    graph = import_graph(pkg, "pkg")[0]
    assert find_cycle(graph) == ["pkg.lazy", "pkg.lazy.x", "pkg.lazy"]
    assert find_cycle(without(graph, registration_pairs(graph))) is None
    # a registered module taking `register` from the package itself: the same pattern, at import time
    (pkg / "reg" / "one.py").write_text("from . import register\n")
    graph = import_graph(pkg, "pkg")[0]
    assert ("pkg.reg", "pkg.reg.one") in registration_pairs(graph)
    assert find_cycle(without(graph, {("pkg.lazy", "pkg.lazy.x")})) == ["pkg.reg", "pkg.reg.one", "pkg.reg"]
    (pkg / "reg" / "__init__.py").write_text("import importlib\nimportlib.import_module(name_from_somewhere)\n")
    assert import_graph(pkg, "pkg")[1] == ["pkg.reg:2: importlib.import_module(name_from_somewhere)"]
