"""The package's layers, enforced from the source tree (docs/architecture.md, "Layers").

Every import of a locimem module — at the top of a file, inside a function, or under
``TYPE_CHECKING`` — must point down: to the importer's own subpackage or to a lower layer.
Two subpackages of one layer do not import each other, so no cycle can form. No private name
(``_x``) is imported from another subpackage.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "locimem"

# lowest first; a name is a top-level module or subpackage of locimem
LAYERS: list[set[str]] = [
    {"errors", "version"},  # one exception hierarchy; the version string
    {"check", "progress", "words", "gcpause", "jsontext", "times", "files"},  # validation,
    # progress bars, label spelling, the garbage collector paused while a state is built,
    # compact JSON, the time contract (reading and showing valid times), opening a file a
    # user named (regular files only, read within a size limit)
    {"model", "index"},  # the record and object state; spatial and vector indexes
    {"config", "geometry", "frames"},  # tracker settings; camera geometry; rigid transforms
    # rooms and relations; keyframes; storage; worlds; fitting one map frame to another;
    # 2D detections and depth lifted to 3D
    {"scene", "evidence", "store", "sim", "align", "perception"},
    {"tracker"},  # decide, apply, commit: the only writer of state
    {"query"},  # reading a state: objects and space, rooms, history, the prior map
    {"agent"},  # language-model tools, prompts and answers over a reader
    {"memory"},  # the facade
    {"__init__"},  # the public names
    {"interchange", "ingest", "eval", "viz"},  # built on the facade
    {"bench"},  # benchmarks
    {"cli"},  # the command line
    {"__main__"},  # python -m locimem
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}

# Upward imports that are allowed, each with its reason.
EXCEPTIONS = {
    # the MCP server is an entry point like the CLI: it opens a memory for the process
    ("agent.mcp_server", "memory"),
}


def _unit(module: str) -> str:
    """The layer unit of a dotted module name below ``locimem``."""
    return module.split(".")[0]


def _imports() -> Iterator[tuple[str, str, str, int]]:
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


def test_every_module_belongs_to_a_layer() -> None:
    units = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    assert units - set(RANK) == set(), "add new modules to LAYERS (and docs/architecture.md)"
    assert set(RANK) - units == set()


def test_imports_point_down() -> None:
    wrong = []
    for module, target, _name, line in _imports():
        a, b = _unit(module), _unit(target)
        if a == b or (module, b) in EXCEPTIONS:
            continue
        if RANK[b] >= RANK[a]:
            wrong.append(f"locimem.{module}:{line} imports locimem.{target} "
                         f"(layer {RANK[b]} from layer {RANK[a]})")
    assert wrong == []


def test_no_private_name_crosses_a_subpackage() -> None:
    wrong = [f"locimem.{module}:{line} imports {name} from locimem.{target}"
             for module, target, name, line in _imports()
             if name.startswith("_") and not name.startswith("__")
             and _unit(module) != _unit(target)]
    assert wrong == []



@pytest.mark.parametrize("importer, imported", [
    ("store", "tracker"), ("store", "scene"), ("store", "query"), ("store", "memory"),
    ("model", "tracker"), ("model", "store"), ("model", "scene"), ("query", "agent"),
    ("scene", "query"), ("scene", "tracker"), ("tracker", "query"), ("tracker", "memory"),
])
def test_the_rules_the_architecture_names(importer: str, imported: str) -> None:
    """The layering forbids these imports (the issue that set the layers named them)."""
    assert RANK[imported] >= RANK[importer]
