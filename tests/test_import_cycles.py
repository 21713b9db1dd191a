"""No import cycle in the package: no two modules of ``infill`` import each other, directly or through others.

The graph is read from the source with :mod:`ast`: an edge ``A -> B`` for every ``import``/``from ... import`` in
``A`` that names module ``B`` of the package (``from P import name`` names ``P.name`` where that is a module, else
the package ``P`` itself, its ``__init__``). Every import counts: at module level, under ``if TYPE_CHECKING:``,
and inside a function (deferred, e.g. to keep torch out of the CLI's start-up, but a dependency all the same).
Importing a submodule also runs its packages' ``__init__``; that implicit step is no edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx  # torch's dependency

PACKAGE = Path(__file__).resolve().parents[1] / "infill"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, lazily or not."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names}
        graph[name] = {t for t in targets if t in paths and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other: each strongly connected component of more than one, sorted."""
    components = nx.strongly_connected_components(nx.DiGraph([(a, b) for a in graph for b in graph[a]]))
    return sorted(sorted(c) for c in components if len(c) > 1)


def test_no_module_of_the_package_imports_one_that_imports_it_back():
    graph = import_graph(PACKAGE)
    assert "infill.samplers.base" in graph["infill.samplers.adaptive"]  # the graph is read
    assert cycles(graph) == []


def test_a_cycle_is_found_through_a_package_type_checking_and_a_function(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .sub import b\n")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\n\nfrom . import c\n\nif TYPE_CHECKING:\n    from .sub.b import g\n"
    )
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("from .. import a\n\n\ndef g():\n    pass\n")
    (package / "c.py").write_text("import pkg.sub\n\n\ndef f():\n    from pkg import a\n")
    graph = import_graph(package)
    assert graph == {
        "pkg": {"pkg.sub.b"},
        "pkg.a": {"pkg.c", "pkg.sub.b"},
        "pkg.c": {"pkg.sub", "pkg.a"},
        "pkg.sub": set(),
        "pkg.sub.b": {"pkg.a"},
    }
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]  # c's lazy import of a closes a -> c -> a
