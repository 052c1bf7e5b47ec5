"""The package's tiers, enforced from the source tree (docs/architecture.md, "Layers").

Every import of a locimem module — at the top of a file, inside a function, or under
``TYPE_CHECKING`` — points down: to the importer's own tier or a lower one. Inside a tier,
packages may import one another, but neither the packages of a tier nor the files of the
whole tree import in a circle. There is no whitelist. No private name (``_x``) is imported
from another subpackage.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "locimem"

# lowest first: (tier, its top-level modules and subpackages of locimem)
TIERS: list[tuple[str, set[str]]] = [
    # the exception hierarchy, validation, the time contract, settings, rigid transforms...
    ("base", {"errors", "version", "check", "progress", "words", "gcpause", "threads", "jsontext",
              "times", "files", "config", "frames"}),
    # the records and the row types, camera geometry, indexes, rooms and relations, keyframes,
    # fitting map frames, the words about objects, lifting 2D detections with depth: what the
    # tracker keeps and reasons with, and what turns a camera's output into detections
    ("model", {"model", "geometry", "index", "scene", "evidence", "align", "language",
               "perception"}),
    ("tracker", {"tracker"}),  # decide, apply, commit, load: the only writer of state
    ("store", {"store"}),  # the storage contract and its backends
    ("reads", {"query", "agent"}),  # reading a state; tools, prompts and answers over it
    ("memory", {"memory", "__init__"}),  # the facade and the public names
    # built on the facade: files and formats, store integrity, robots in, worlds, scores,
    # pictures out, MCP, benchmarks, the command line
    ("front ends", {"interchange", "integrity", "ingest", "sim", "eval", "viz", "mcp", "bench",
                    "cli", "__main__"}),
]
RANK = {name: i for i, (_, units) in enumerate(TIERS) for name in units}


def _unit(module: str) -> str:
    """The layer unit of a dotted module name below ``locimem``."""
    return module.split(".")[0]


@functools.cache
def _imports() -> tuple[tuple[str, str, str, int], ...]:
    return tuple(_walk())


def _walk() -> Iterator[tuple[str, str, str, int]]:
    """(importing module, imported module, imported name or "", line) for every locimem
    import in the source tree; modules are dotted names below ``locimem``."""
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package and len(parts) > 1 else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = parts[:-1]  # the package the file is in
                    base = base[:len(base) - (node.level - 1)]
                    target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                elif node.module and node.module.split(".")[0] == "locimem":
                    target = node.module[len("locimem."):] if node.module != "locimem" \
                        else "__init__"
                else:
                    continue
                for alias in node.names:
                    yield module, target, alias.name, node.lineno
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("locimem."):
                        yield module, alias.name[len("locimem."):], "", node.lineno


def _module_graph() -> dict[str, set[str]]:
    """File-level imports: importing module -> imported modules (a package is its
    ``__init__``; ``from pkg import sub`` imports the module ``pkg.sub``)."""
    modules = {".".join(p.relative_to(SRC).with_suffix("").parts) for p in SRC.rglob("*.py")}

    def resolve(name: str) -> str | None:
        for candidate in (name, f"{name}.__init__"):
            if candidate in modules:
                return candidate
        return None

    graph: dict[str, set[str]] = defaultdict(set)
    for module, target, name, _line in _imports():
        importer = module if module in modules else f"{module}.__init__"
        imported = (resolve(f"{target}.{name}") if name else None) or resolve(target)
        if imported is not None and imported != importer:
            graph[importer].add(imported)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_belongs_to_a_tier() -> None:
    units = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    assert units - set(RANK) == set(), "add new modules to TIERS (and docs/architecture.md)"
    assert set(RANK) - units == set()


def test_imports_point_down() -> None:
    wrong = []
    for module, target, _name, line in _imports():
        a, b = _unit(module), _unit(target)
        if RANK[b] > RANK[a]:
            wrong.append(f"locimem.{module}:{line} imports locimem.{target} "
                         f"(tier {TIERS[RANK[b]][0]!r} from tier {TIERS[RANK[a]][0]!r})")
    assert wrong == []


def test_no_files_import_in_a_circle() -> None:
    assert _circles(_module_graph()) == []


def test_no_packages_import_in_a_circle() -> None:
    units: dict[str, set[str]] = defaultdict(set)
    for module, target, _name, _line in _imports():
        if _unit(module) != _unit(target):
            units[_unit(module)].add(_unit(target))
    assert _circles(units) == []


def test_the_circle_finder_finds_circles() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_private_name_crosses_a_subpackage() -> None:
    wrong = [f"locimem.{module}:{line} imports {name} from locimem.{target}"
             for module, target, name, line in _imports()
             if name.startswith("_") and not name.startswith("__")
             and _unit(module) != _unit(target)]
    assert wrong == []


@pytest.mark.parametrize("importer, imported", [
    ("tracker", "store"), ("tracker", "query"), ("tracker", "memory"), ("model", "tracker"),
    ("model", "store"), ("scene", "tracker"), ("scene", "query"), ("store", "query"),
    ("store", "memory"), ("query", "agent"), ("query", "memory"), ("agent", "memory"),
    ("memory", "mcp"), ("memory", "interchange"), ("memory", "cli"),
])
def test_the_imports_the_architecture_names_do_not_exist(importer: str, imported: str) -> None:
    """Imports issue 33 named as wrong (or that would bring back a circle it removed): none
    is in the tree, and, across tiers, the tiers forbid it."""
    found = [f"locimem.{module}:{line}" for module, target, _name, line in _imports()
             if _unit(module) == importer and _unit(target) == imported]
    assert found == []
    assert RANK[importer] <= RANK[imported]
