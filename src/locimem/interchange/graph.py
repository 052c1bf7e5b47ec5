"""NetworkX export: the scene graph as a ``networkx.MultiDiGraph``, and GraphML through it (the
``graph`` extra, ``networkx``).

:func:`to_networkx` holds exactly the nodes, properties and edges of the Cypher export
(:mod:`locimem.interchange.scene_graph`): a node per room and object, keyed by its ``uid``, with
``kind`` (``Room``, ``Furniture`` or ``Item``: the Cypher label) and the same properties — points
and lists as tuples ((x, y, z), metres, map frame) — and an edge per relationship, keyed by its
type (``ON``, ``CONTAINS``, ...), with ``confidence`` and ``since``. ``graph.graph`` holds the
``scope``, the memory time ``now`` (seconds), and the frame the positions are in: ``frame``
(``"map"``) and ``map_epoch`` (the memory's frame's map epoch; None, and absent from GraphML,
for a scope that never named one)::

    g = to_networkx(mem)
    [g.nodes[u]["label"] for u, _, k in g.in_edges("home:object:1", keys=True) if k == "ON"]

GraphML (:func:`export_graphml`, ``locimem export STORE scene.graphml``) has only scalar
attributes, so there a point ``pose`` becomes ``pose_x``, ``pose_y``, ``pose_z`` and a list
(``size``, ``quat_wxyz``, ``polygon``) its JSON text; the edge type is the edge's ``type``
attribute (and its id).

``networkx`` is imported only when these functions run; the core package never needs it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput, LocimemError
from locimem.interchange.scene_graph import NODE_PROPERTIES, scene_graph
from locimem.memory import Readable

__all__ = ["GraphExportReport", "NetworkxUnavailable", "export_graphml", "to_networkx"]

GRAPHML_SUFFIX = ".graphml"


class NetworkxUnavailable(LocimemError, ImportError):
    """The ``graph`` extra (``networkx``) is not installed."""


@dataclass(frozen=True, slots=True)
class GraphExportReport:
    """What :func:`export_graphml` wrote: the file, and how many nodes and edges."""

    path: Path
    n_nodes: int
    n_edges: int


def to_networkx(memory: Readable, *, include_tentative: bool = False) -> Any:
    """The memory's scene graph as a ``networkx.MultiDiGraph`` (see the module docstring):
    nodes in the order rooms (by name), objects (by id); edges keyed by relationship type.
    Objects as in :func:`~locimem.interchange.scene_graph.scene_graph`. Raises
    :class:`NetworkxUnavailable` without ``networkx``."""
    nx = _import_networkx()
    sg = scene_graph(memory, include_tentative=include_tentative)
    graph = nx.MultiDiGraph(scope=sg.scope, now=sg.now, frame=sg.frame, map_epoch=sg.map_epoch)
    for node in sg.nodes:
        attrs = {k: v for k, v in node.properties.items() if k != "uid"}
        graph.add_node(node.uid, kind=node.kind, **attrs)
    for edge in sg.edges:
        graph.add_edge(edge.source, edge.target, key=edge.type, **edge.properties)
    return graph


def export_graphml(memory: Readable, path: str | os.PathLike[str], *,
                   include_tentative: bool = False) -> GraphExportReport:
    """Write the scene graph to ``path`` (a ``.graphml`` file) with ``networkx.write_graphml``,
    flattened to scalar attributes (see the module docstring)."""
    out = _check_path(path)
    graph = to_networkx(memory, include_tentative=include_tentative)
    flat = _flat(graph)
    try:
        _import_networkx().write_graphml(flat, str(out), encoding="utf-8")
    except OSError as exc:
        raise LocimemError(f"could not write the GraphML file {str(out)!r}: {exc}") from None
    return GraphExportReport(out, flat.number_of_nodes(), flat.number_of_edges())


def _flat(graph: Any) -> Any:
    """A copy with scalar attributes only (GraphML has no points or lists)."""
    flat = type(graph)()
    flat.graph.update({k: v for k, v in graph.graph.items() if v is not None})
    for uid, attrs in graph.nodes(data=True):
        types = NODE_PROPERTIES[attrs["kind"]]
        out: dict[str, Any] = {}
        for name, value in attrs.items():
            kind = types.get(name)
            if kind == "point3":
                out.update({f"{name}_{axis}": v for axis, v in zip("xyz", value, strict=True)})
            elif kind in ("floats", "points2"):
                out[name] = json.dumps(value)
            else:
                out[name] = value
        flat.add_node(uid, **out)
    for a, b, key, attrs in graph.edges(keys=True, data=True):
        flat.add_edge(a, b, key=key, type=key, **attrs)
    return flat


def _import_networkx() -> Any:
    try:
        import networkx
    except ImportError:
        raise NetworkxUnavailable('graph export needs networkx: pip install "locimem[graph]"'
                                  ) from None
    return networkx


def _check_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"path must be a file path, got {type(path).__name__}")
    out = Path(path)
    if out.suffix.lower() != GRAPHML_SUFFIX:
        raise InvalidInput(f"path must end in {GRAPHML_SUFFIX}, got {str(out)!r}")
    if not out.parent.is_dir():
        raise InvalidInput(f"the directory {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise InvalidInput(f"{str(out)!r} is a directory")
    return out
