"""The boundary between the core and the benchmark kinds, read from the code itself.

Every product module (each .py outside tests/, bench/, docs/ and vendor/) is parsed with `ast`; every import counts, those
inside functions and under `if TYPE_CHECKING` too. The tests fail, naming file and line, when a kind package imports
the web app, the pipeline, the storage or another kind's package; when the core imports a kind package; and when
product modules import each other in a circle. The layers are the data below (docs/layout.md says them in words).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_PRODUCT = ("tests", "bench", "docs", "vendor")

# -- the layers --------------------------------------------------------------------------------------------------
# A kind is a package under kinds/ with a kind.py (kinds/<name>/kind.py); the rest of kinds/ is the plug-in API
# (kind.py, host.py), the registry and the modules the kinds share (readers/, stats.py, ...). The core is everything else.
KIND_PARENT = "kinds"
CORE = ("storage", "pipeline", "simulate", "web", "judge", "common", "app", "evaluator", "translations", "client")
# What a kind package never imports (nor another kind's package): the core's insides and the registry (which
# imports the kinds). It may import the plug-in API, the shared modules, `judge`, `common` and `translations`.
KIND_MAY_NOT_IMPORT = ("web", "pipeline", "storage", "kinds.registry")
# What the plug-in API and the shared modules of kinds/ never import; kinds.registry alone imports kinds.
SHARED_MAY_NOT_IMPORT = ("web", "pipeline", "storage")
REGISTRY = "kinds.registry"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _product_files() -> dict[str, Path]:
    files = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] in NOT_PRODUCT or any(part.startswith(".") for part in parts):
            continue
        files[_module_name(path)] = path
    return files


MODULES = _product_files()
KINDS = sorted(path.parent.name for path in (ROOT / KIND_PARENT).glob("*/kind.py"))  # a package with a plug-in


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def kind_of(module: str) -> str | None:
    """The kind whose package holds a module, or None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == KIND_PARENT and parts[1] in KINDS else None


def _resolve(name: str) -> str | None:
    """The product module an imported name is (or lies in), else None (the standard library, a third party)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_in(source: str, module: str, package: str) -> list[tuple[str, int]]:
    """(product module imported, line) of every import statement of a module's source, wherever it stands;
    `package` is the package relative imports start from."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from a import b` imports the module a.b when there is one, else names of a
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in dict.fromkeys(_resolve(name) for name in names):
            if target is not None and target != module:
                found.append((target, node.lineno))
    return found


def imports(module: str) -> list[tuple[str, int]]:
    """(product module imported, line) of every import of a product module."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return imports_in(path.read_text(encoding="utf-8"), module, package)


@functools.cache
def graph() -> dict[str, list[tuple[str, int]]]:
    """Every product module's imports, read when a test first needs them (not when the suite is collected)."""
    return {module: imports(module) for module in MODULES}


def _where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(ROOT)}:{line}"


def layer_breaches() -> list[str]:
    """Every import that crosses a boundary the layers forbid, as 'file:line: importer -> imported (why)'."""
    breaches = []
    for module, found in graph().items():
        own_kind = kind_of(module)
        for target, line in found:
            target_kind = kind_of(target)
            why = None
            if own_kind is not None:
                if any(_within(target, forbidden) for forbidden in KIND_MAY_NOT_IMPORT):
                    why = "a kind imports the core's insides or the registry"
                elif target_kind is not None and target_kind != own_kind:
                    why = "a kind imports another kind's package"
            elif _within(module, KIND_PARENT):
                if any(_within(target, forbidden) for forbidden in SHARED_MAY_NOT_IMPORT):
                    why = "the plug-in API or a shared module imports the core's insides"
                elif target_kind is not None and module != REGISTRY:
                    why = "only the registry imports a kind"
            elif target_kind is not None:
                why = "the core imports a kind package"
            if why:
                breaches.append(f"{_where(module, line)}: {module} -> {target} ({why})")
    return breaches


def cycles() -> list[str]:
    """Each circle of imports among product modules (one per strongly connected group), edge by edge."""
    edges = {module: {} for module in graph()}
    for module, found in graph().items():
        for target, line in found:
            edges[module].setdefault(target, line)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in edges[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(group)

    for module in sorted(edges):
        if module not in index:
            visit(module)
    found = []
    for group in groups:
        members, start = set(group), min(group)
        path, seen = [start], {start}
        while True:  # walk inside the group until a module repeats: that is a circle
            step = next(t for t in sorted(edges[path[-1]]) if t in members)
            if step in seen:
                circle = path[path.index(step):] + [step]
                break
            path.append(step)
            seen.add(step)
        found.append(" -> ".join(f"{a} ({_where(a, edges[a][b])})" for a, b in zip(circle, circle[1:]))
                     + f" -> {circle[-1]}")
    return found


def test_every_product_module_is_in_a_layer():
    assert KINDS, "no kind package found under kinds/"
    loose = [name for name in MODULES if not any(_within(name, top) for top in (*CORE, KIND_PARENT))]
    assert not loose, f"modules in no layer of tests/kinds/test_boundaries.py: {loose}"


def test_kinds_and_core_import_only_across_the_plug_in_api():
    breaches = layer_breaches()
    assert not breaches, "imports across the boundary:\n" + "\n".join(breaches)


def test_no_import_circle_remains():
    found = cycles()
    assert not found, "import circles:\n" + "\n".join(found)


def test_the_checks_see_imports_inside_functions_and_type_checking():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from web import pages\n"
              "def f():\n    from kinds.mobility import kind\n    from . import format\n")
    assert imports_in(source, "kinds.dialogue.probe", "kinds.dialogue") == [
        ("web.pages", 3), ("kinds.mobility.kind", 5), ("kinds.dialogue.format", 6)]
