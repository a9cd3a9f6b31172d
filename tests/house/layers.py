"""The architecture as data, and the walk that checks a source tree against it (tests/house/test_architecture.py).

Layers, top to bottom: pages / cli -> ui / train -> viz / measure / remote -> engine -> core. A module may import
its own layer's packages and any layer below, never one above; no two modules import each other, directly or round
a longer loop, function-level imports included (only `if TYPE_CHECKING:` imports are left out: they never run).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

LAYERS = {  # package (the first name under specviz/, or a top-level script folder) -> its layer
    "core": 0,
    "methods": 0,
    "errors": 0,
    "__init__": 0,
    "engine": 1,
    "viz": 2,
    "measure": 2,
    "remote": 2,
    "ui": 3,
    "train": 3,
    "cli": 4,
    "__main__": 4,
    "pages": 4,
    "app": 4,
}
ONLY_IN = {  # third-party package -> the only places that may import it
    "streamlit": {"ui", "pages", "app"},
}
NEVER_IN = {  # place -> third-party packages it must not import
    "core": {"transformers", "pandas", "streamlit"},
    "methods": {"torch", "transformers", "pandas", "streamlit"},
    "viz": {"transformers", "torch"},
}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted (specviz.engine.decode, pages.rounds, app)
    target: str  # what it imports, dotted
    line: int


def module_name(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def place(module: str) -> str:
    """The package a module belongs to: specviz.engine.decode -> engine, pages.rounds -> pages, specviz -> __init__."""
    parts = module.split(".")
    if parts[0] == "specviz":
        return parts[1] if len(parts) > 1 else "__init__"
    return parts[0]


def imports(root: Path) -> list[Import]:
    """Every import that runs in specviz/, pages/ and app.py (module and function level, not TYPE_CHECKING)."""
    found = []
    for path in sorted([*root.glob("specviz/**/*.py"), *root.glob("pages/*.py"), *root.glob("app.py")]):
        module = module_name(root, path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = {id(n) for block in _type_checking_blocks(tree) for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                found += [Import(module, alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, package)
                found.append(Import(module, base, node.lineno))
                found += [Import(module, f"{base}.{a.name}", node.lineno) for a in node.names]  # a name or a module
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _type_checking_blocks(tree: ast.AST) -> list[ast.If]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]


def violations(root: Path) -> list[str]:
    """What crosses the layers, imports a package where it must not be, or closes an import cycle."""
    found = imports(root)
    problems = []
    for imp in found:
        here, top = place(imp.module), imp.target.split(".")[0]
        where = f"{imp.module}:{imp.line} imports {imp.target}"
        if top in ("specviz", "pages", "app") and imp.target != "specviz":
            there = place(imp.target)
            if here in LAYERS and there in LAYERS and LAYERS[there] > LAYERS[here]:
                problems.append(
                    f"{where}: {here} (layer {LAYERS[here]}) may not import {there} (layer {LAYERS[there]})"
                )
        if top in ONLY_IN and here not in ONLY_IN[top]:
            problems.append(f"{where}: {top} belongs in {', '.join(sorted(ONLY_IN[top]))} only")
        if top in NEVER_IN.get(here, ()):
            problems.append(f"{where}: {here} must not import {top}")
    problems = list(dict.fromkeys(problems))  # `from a import b, c` reports a crossing once
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(found, root)]
    return problems


def cycles(found: list[Import], root: Path) -> list[list[str]]:
    """Import cycles between modules of the tree (each reported once, from its smallest module)."""
    paths = [*root.glob("specviz/**/*.py"), *root.glob("pages/*.py")]
    packages = {module_name(root, p) for p in paths if p.name == "__init__.py"}  # importing one runs no cycle here
    modules = {module_name(root, p) for p in paths} - packages
    graph: dict[str, set[str]] = {}
    for imp in found:
        target = imp.target if imp.target in modules else imp.target.rpartition(".")[0]
        if target in modules and target != imp.module:
            graph.setdefault(imp.module, set()).add(target)
    loops, seen = [], set()
    for start in sorted(graph):
        for loop in _loops_from(start, graph):
            key = frozenset(loop)
            if key not in seen and min(loop) == start:
                seen.add(key)
                loops.append([*loop, start])
    return loops


def _loops_from(start: str, graph: dict[str, set[str]]) -> list[list[str]]:
    """Simple paths from start back to start (depth-first; the graphs here are small)."""
    loops, stack = [], [(start, [start])]
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                loops.append(path)
            elif nxt not in path and nxt > start:
                stack.append((nxt, [*path, nxt]))
    return loops
