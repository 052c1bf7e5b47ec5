"""Cypher export: the scene graph as an idempotent script of ``MERGE`` statements.

``locimem export STORE scene.cypher`` writes it; ``cypher-shell < scene.cypher`` loads it into
Neo4j (5.x; 4.4 too), and ``kuzu.Connection(db).execute(script)`` into an embedded Kuzu
database (``dialect="kuzu"``). The nodes, properties and edges are those of
:mod:`locimem.interchange.scene_graph`; ask, for instance::

    MATCH (i:Item {label: 'remote'})-[:ON]->(f)<-[:CONTAINS]-(r:Room) RETURN i, f, r

The script, in order (one statement a line, each ending in ``;``), after two comment lines —
what it holds, and which frame its positions are in (``// positions in the memory's frame
"map" (map epoch 2026-12-01-boot): pose, box_min, box_max, polygon (metres, z up)``; without
the parenthesis for a scope that never named a map epoch):

1. schema: Neo4j gets a uniqueness constraint on ``uid`` per node label (``IF NOT EXISTS``);
   Kuzu, which needs a schema, gets its node and relationship tables (``IF NOT EXISTS``).
2. what left: nodes of this scope that this export no longer holds (forgotten objects, objects
   no longer published, a room since removed, an object whose level changed, so that it is now
   ``Furniture`` and no longer ``Item``) are deleted with their relationships (``DETACH
   DELETE``): a forgotten object leaves no trace in the graph, as nowhere in locimem. Then
   relationships between this scope's nodes that no longer hold (the cup left the table) are
   deleted.
3. ``MERGE`` of every node on its label and ``uid``, then ``SET`` of every property (a property
   the memory no longer has, such as a cleared orientation, is set to null: removed).
4. ``MERGE`` of every relationship between its two nodes, then ``SET`` of its properties.

So running a script twice changes nothing the second time, and running the script of a later
export brings the graph up to date with the memory. Nodes of other scopes, and relationships
of other types than these seven, are left alone (but for those of a deleted node). For Neo4j the
statements run one by one (Neo4j does not mix schema and data changes in one transaction, and
``cypher-shell``'s ``:begin`` is no Cypher): a run that stops half-way is completed by running
the script again. For Kuzu everything after the schema is one transaction (``BEGIN
TRANSACTION`` ... ``COMMIT``), applied whole or not at all.

Strings are data, never Cypher: every string is written as a single-quoted literal in which
``\\`` becomes ``\\\\`` and ``'`` becomes ``\\'``; control characters, line and paragraph
separators and lone surrogates (which locimem's labels never hold, but a damaged store might)
become U+FFFD. Nothing else is escaped, and nothing else needs to be: inside such a literal every
backslash starts one of the two escapes and every quote is escaped, so the literal ends only at
its closing quote, whatever the text (``x'}) DETACH DELETE n //`` included), and it stays on its
line. Both Neo4j and Kuzu read these two escapes the same way (Kuzu does not read ``\\uXXXX``,
hence no other escape is used). Relationship types are written in backquotes (``ON`` and ``IN``
are reserved words in Kuzu, which then needs them quoted in queries too:
``-[:`ON`]->``). Numbers are written so that they read back bit for bit (``repr``, with no
``+`` in exponents).

Dialects: ``neo4j`` writes points as ``point({x: .., y: .., z: ..})`` (Cartesian 3D; the
polygon a list of 2D points), ``kuzu`` as structs ``{x: .., y: .., z: ..}``; ``n.pose.x`` reads
either. Everything else is the same script.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput, LocimemError
from locimem.interchange.scene_graph import (
    EDGE_PROPERTIES,
    EDGE_TYPES,
    NODE_KINDS,
    NODE_PROPERTIES,
    SceneGraph,
    scene_graph,
)
from locimem.memory import Readable

__all__ = ["DIALECTS", "CypherExportReport", "cypher_script", "cypher_string", "export_cypher"]

DIALECTS = ("neo4j", "kuzu")
CYPHER_SUFFIX = ".cypher"
_UNSAFE = frozenset({"Cc", "Cs", "Zl", "Zp"})  # written as U+FFFD
_KUZU_TYPES = {"string": "STRING", "int": "INT64", "float": "DOUBLE", "floats": "DOUBLE[]",
               "point3": "STRUCT(x DOUBLE, y DOUBLE, z DOUBLE)",
               "points2": "STRUCT(x DOUBLE, y DOUBLE)[]"}
_OBJECT_KINDS = ("Furniture", "Item")
# which node kinds each relationship type joins (Kuzu declares them; the memory never relates
# furniture to an item with on/in/under, but a level set by hand may, so all pairs are allowed)
_OBJECT_PAIRS = tuple((a, b) for a in _OBJECT_KINDS for b in _OBJECT_KINDS)
_ENDPOINTS: dict[str, tuple[tuple[str, str], ...]] = {
    **{t: _OBJECT_PAIRS for t in ("ON", "IN", "UNDER", "NEXT_TO", "NEAR")},
    "CONTAINS": (("Room", "Furniture"), ("Room", "Item"), *_OBJECT_PAIRS),
    "CONNECTS_TO": (("Room", "Room"),),
}


@dataclass(frozen=True, slots=True)
class CypherExportReport:
    """What :func:`export_cypher` wrote: the file, its dialect, how many rooms, objects and
    relationships, and how many statements."""

    path: Path
    dialect: str
    n_rooms: int
    n_objects: int
    n_relationships: int
    n_statements: int


def export_cypher(memory: Readable, path: str | os.PathLike[str], *,
                  dialect: str = "neo4j", include_tentative: bool = False) -> CypherExportReport:
    """Write the memory's scene graph to ``path`` (a ``.cypher`` file) as an idempotent script
    (see the module docstring). ``dialect`` is ``neo4j`` (default; ``cypher-shell <
    scene.cypher``) or ``kuzu``. Objects as in :func:`~locimem.interchange.scene_graph.
    scene_graph`. Bad arguments raise :class:`InvalidInput` and write nothing."""
    out = _check_path(path)
    dialect = _check_dialect(dialect)
    graph = scene_graph(memory, include_tentative=include_tentative)
    statements = _statements(graph, dialect)
    text = "".join(f"{s}\n" for s in statements)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise LocimemError(f"could not write the Cypher file {str(out)!r}: {exc}") from None
    n_rooms = sum(1 for n in graph.nodes if n.kind == "Room")
    return CypherExportReport(out, dialect, n_rooms, len(graph.nodes) - n_rooms,
                              len(graph.edges), sum(1 for s in statements
                                                    if not s.startswith("//")))


def cypher_script(memory: Readable, *, dialect: str = "neo4j",
                  include_tentative: bool = False) -> str:
    """The script :func:`export_cypher` writes, as a string (one statement a line)."""
    dialect = _check_dialect(dialect)
    graph = scene_graph(memory, include_tentative=include_tentative)
    return "".join(f"{s}\n" for s in _statements(graph, dialect))


def cypher_string(text: str) -> str:
    """``text`` as a single-quoted Cypher string literal that reads back as ``text`` (see the
    module docstring for why it is safe), with unsafe characters as U+FFFD.

    >>> print(cypher_string("it's a \\\\ backslash"))
    'it\\'s a \\\\ backslash'
    """
    if not isinstance(text, str):
        raise InvalidInput(f"a Cypher string must be a str, got {type(text).__name__}")
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif unicodedata.category(ch) in _UNSAFE:
            out.append("\ufffd")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


# -- the script -------------------------------------------------------------------------------

def _statements(graph: SceneGraph, dialect: str) -> list[str]:
    scope = cypher_string(graph.scope)
    now = "no scan yet" if graph.now is None else f"{_number(graph.now)} s"
    n_objects = sum(1 for n in graph.nodes if n.kind != "Room")
    out = [f"// locimem scene graph of scope {_comment(graph.scope)}: {n_objects} objects, "
           f"{len(graph.nodes) - n_objects} rooms, {len(graph.edges)} relationships; memory "
           f"time {now}. Dialect: {dialect}. Idempotent: running it again changes nothing.",
           f"// {_one_line(graph.note)}: pose, box_min, box_max, polygon (metres, z up)"]
    out += _schema(dialect)
    if dialect == "kuzu":  # the data in one transaction: applied whole or not at all
        out.append("BEGIN TRANSACTION;")

    out.append("// what left the memory, and relations that no longer hold")
    for kind in NODE_KINDS:
        uids = graph.node_uids(kind)
        keep = f" AND NOT n.uid IN {_list(uids, cypher_string)}" if uids else ""
        out.append(f"MATCH (n:{kind}) WHERE n.scope = {scope}{keep} DETACH DELETE n;")
    for rel in EDGE_TYPES:
        pairs = [f"[{cypher_string(e.source)}, {cypher_string(e.target)}]"
                 for e in graph.edges if e.type == rel]
        keep = f" AND NOT [a.uid, b.uid] IN [{', '.join(pairs)}]" if pairs else ""
        out.append(f"MATCH (a)-[r:`{rel}`]->(b) WHERE a.scope = {scope}{keep} DELETE r;")

    out.append("// nodes")
    for node in graph.nodes:
        props = NODE_PROPERTIES[node.kind]
        sets = ", ".join(f"n.{name} = {_value(node.properties.get(name), kind, dialect)}"
                         for name, kind in props.items() if name != "uid")
        out.append(f"MERGE (n:{node.kind} {{uid: {cypher_string(node.uid)}}}) SET {sets};")

    out.append("// relationships")
    kinds = {n.uid: n.kind for n in graph.nodes}
    for edge in graph.edges:
        head = (f"MATCH (a:{kinds[edge.source]} {{uid: {cypher_string(edge.source)}}}), "
                f"(b:{kinds[edge.target]} {{uid: {cypher_string(edge.target)}}}) "
                f"MERGE (a)-[r:`{edge.type}`]->(b)")
        props = EDGE_PROPERTIES[edge.type]
        if props:
            head += " SET " + ", ".join(
                f"r.{name} = {_value(edge.properties.get(name), kind, dialect)}"
                for name, kind in props.items())
        out.append(f"{head};")
    if dialect == "kuzu":
        out.append("COMMIT;")
    return out


def _schema(dialect: str) -> list[str]:
    if dialect == "neo4j":
        return ["// schema: one node per uid"] + [
            f"CREATE CONSTRAINT locimem_{kind.lower()}_uid IF NOT EXISTS FOR (n:{kind}) "
            f"REQUIRE n.uid IS UNIQUE;" for kind in NODE_KINDS]
    out = ["// schema: Kuzu's node and relationship tables"]
    for kind in NODE_KINDS:
        columns = ", ".join(f"{name} {_KUZU_TYPES[t]}" + (" PRIMARY KEY" if name == "uid" else "")
                            for name, t in NODE_PROPERTIES[kind].items())
        out.append(f"CREATE NODE TABLE IF NOT EXISTS {kind}({columns});")
    for rel in EDGE_TYPES:
        parts = [f"FROM {a} TO {b}" for a, b in _ENDPOINTS[rel]]
        parts += [f"{name} {_KUZU_TYPES[t]}" for name, t in EDGE_PROPERTIES[rel].items()]
        out.append(f"CREATE REL TABLE IF NOT EXISTS `{rel}`({', '.join(parts)});")
    return out


def _value(value: Any, kind: str, dialect: str) -> str:
    if value is None:
        return "null" if dialect == "neo4j" else "NULL"
    if kind == "string":
        return cypher_string(value)
    if kind == "int":
        return str(int(value))
    if kind == "float":
        return _number(value)
    if kind == "floats":
        return _list(value, _number)
    if kind == "point3":
        return _point(value, ("x", "y", "z"), dialect)
    if kind == "points2":
        return _list(value, lambda p: _point(p, ("x", "y"), dialect))
    raise LocimemError(f"no Cypher form for a {kind!r} property")  # pragma: no cover


def _point(xyz: Any, axes: tuple[str, ...], dialect: str) -> str:
    fields = ", ".join(f"{a}: {_number(v)}" for a, v in zip(axes, xyz, strict=True))
    return f"point({{{fields}}})" if dialect == "neo4j" else f"{{{fields}}}"


def _list(values: Any, render: Any) -> str:
    return "[" + ", ".join(render(v) for v in values) + "]"


def _number(x: float) -> str:
    """A float literal that reads back bit for bit (``1e+16`` is not Cypher: ``1e16`` is)."""
    return repr(float(x)).replace("e+", "e")


def _comment(text: str) -> str:
    """Text for a ``//`` comment, quoted: on one line."""
    return repr(_one_line(text))


def _one_line(text: str) -> str:
    """``text`` with the characters that could end a ``//`` comment's line as U+FFFD."""
    return "".join("\ufffd" if unicodedata.category(c) in _UNSAFE else c for c in text)


def _check_dialect(dialect: Any) -> str:
    if dialect not in DIALECTS:
        raise InvalidInput(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")
    return str(dialect)


def _check_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"path must be a file path, got {type(path).__name__}")
    out = Path(path)
    if out.suffix.lower() != CYPHER_SUFFIX:
        raise InvalidInput(f"path must end in {CYPHER_SUFFIX}, got {str(out)!r}")
    if not out.parent.is_dir():
        raise InvalidInput(f"the directory {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise InvalidInput(f"{str(out)!r} is a directory")
    return out
