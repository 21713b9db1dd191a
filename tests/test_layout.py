"""The package's layout by stage (docs/internals.md): a handful of modules at the top, imports only from an
earlier stage, and the documented import paths still import."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "infill"
STAGES = (
    "errors",
    "optional",
    "metrics",
    "text",
    "augmentation",
    "lm",
    "energies",
    "samplers",
    "onepass",
    "constraints",
    "spans",
    "pipeline",
    "evaluation",
    "summarize",
    "serve",
    "cli",
    "compat",
)
FACADES = ("__init__", "__main__", "config")  # the entry points, importing from any stage


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> set[str]:
    """The infill modules ``path`` imports, lazily or not."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = (
                ".".join(package[: len(package) - node.level + 1] + [node.module or ""]).strip(".")
                if node.level
                else node.module
            )
            names = [f"{base}.{a.name}" for a in node.names] if not node.module else [base]
            found.update(n for n in names if n.startswith("infill."))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("infill."))
    return found


def test_at_most_six_modules_at_the_top():
    assert len(list(PACKAGE.glob("*.py"))) <= 6


def test_imports_run_only_from_an_earlier_stage():
    back = []
    for path in PACKAGE.rglob("*.py"):
        unit = _unit(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        if unit in FACADES:
            continue
        for module in _imports(path):
            used = _unit(module)
            if used != unit and STAGES.index(used) > STAGES.index(unit):
                back.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    assert not back, "\n".join(back)


def test_the_documented_import_paths_import():
    import infill
    from infill import Infiller, InfillResult, metrics  # noqa: F401
    from infill.config import RunConfig
    from infill.pipeline.config import RunConfig as Config

    assert RunConfig is Config and infill.Infiller is Infiller


def _body_lines(node: ast.AST) -> int:
    """A function's lines after its signature and docstring (the formatter gives a parameter a line)."""
    body = node.body
    if (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return node.end_lineno - body[0].lineno + 1 if body else 0


def test_the_infiller_class_is_at_most_200_lines():
    from infill.pipeline import infiller

    (node,) = [n for n in ast.parse(Path(infiller.__file__).read_text()).body if isinstance(n, ast.ClassDef)]
    assert node.end_lineno - node.lineno + 1 <= 200


def test_no_function_body_is_over_40_lines():
    long = [
        f"{path.relative_to(PACKAGE)}:{node.name} ({_body_lines(node)} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > 40
    ]
    assert not long, long
