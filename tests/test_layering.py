"""The layering the README states is the one the imports follow.

The README's architecture block is the one statement of the order; this test reads it, reads
every ``import`` of the package with :mod:`ast` (imports inside functions too, relative imports
resolved), and fails on an arrow from a unit to a later one and on any cycle between modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fedtheory"


def documented_order() -> list[str]:
    """The units of the README's architecture block, lowest first."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Architecture", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    return [u.strip() for u in block.replace("\n", " ").split("->")]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(name: str) -> bool:
    base = ROOT / name.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports(path: Path) -> set[str]:
    """Every fedtheory module ``path`` imports, anywhere in the file."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:  # `from pkg import module` imports the module
                full = f"{source}.{alias.name}"
                found.add(full if _exists(full) else source)
    return {m for m in found if m == "fedtheory" or m.startswith("fedtheory.")}


def unit(module: str) -> str:
    """The unit of the documented order a module belongs to (its top-level package)."""
    parts = module.split(".")
    return "fedtheory" if len(parts) == 1 else parts[1]


GRAPH = {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_the_documented_order_names_every_unit_once():
    order = documented_order()
    assert len(order) == len(set(order)), order
    units = {unit(m) for m in GRAPH} - {"fedtheory"}
    assert units == set(order), (
        f"units missing from the README's order: {sorted(units - set(order))}; "
        f"named there but not in the package: {sorted(set(order) - units)}"
    )


def test_no_import_runs_back_up_the_documented_order():
    rank = {u: i for i, u in enumerate(documented_order())}
    back = [
        f"{a} imports {b} ({unit(a)} comes before {unit(b)})"
        for a, targets in GRAPH.items()
        for b in sorted(targets)
        if unit(a) != "fedtheory"  # the package's front door may name anything
        and unit(b) != "fedtheory"
        and rank[unit(b)] > rank[unit(a)]
    ]
    assert back == []


def test_no_import_cycle():
    """Tarjan's strongly connected components of the module graph: all of size one."""
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH.get(v, ()):
            if w not in GRAPH:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert cycles == []


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from fedtheory.cli import main\n", {"fedtheory.cli"}),
        ("def f():\n    import fedtheory.sweep.store\n", {"fedtheory.sweep.store"}),
        ("from . import registry\n", {"fedtheory.figures.registry"}),
        ("from .registry import FIGURES\n", {"fedtheory.figures.registry"}),
    ],
)
def test_the_scan_sees_every_kind_of_import(tmp_path, monkeypatch, source, expected):
    """The scanner finds top-level, in-function and relative imports (else the test is blind)."""
    path = PACKAGE / "figures" / "_layering_probe.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    assert imports(path) == expected
