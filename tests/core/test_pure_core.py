"""The core must stay importable without textual (the faces are optional layers on top)."""

from __future__ import annotations

import subprocess
import sys

import grimp


def test_core_does_not_import_textual() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import coderag_tui.core as core\n"
        "for m in pkgutil.iter_modules(core.__path__):\n"
        "    importlib.import_module('coderag_tui.core.' + m.name)\n"
        "import coderag_tui.settings\n"
        "bad = sorted(n for n in sys.modules if n == 'textual' or n.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imported textual modules: {out.stdout.strip()}"


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (Tarjan's strongly
    connected components), lazy imports and imports for type checking included."""
    modules = sorted(graph.modules)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in modules:
        if module not in order:
            visit(module)
    return found


def test_no_module_imports_itself_through_others() -> None:
    """No import circles, not even lazy ones: each thing two modules need has one home."""
    graph = grimp.build_graph("coderag_tui", cache_dir=None)
    assert _circles(graph) == []
