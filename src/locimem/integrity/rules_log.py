"""The file-level and log rules of :mod:`locimem.interchange.validate`.

The file-wide rules (``sqlite_integrity``, ``schema_version``, ``schema_tables``,
``ids_unique``, ``log_order``, ``record_kinds``) and the per-scope rules about the log itself
(``appeared``, ``observations_accounted``, ``checkpoints_valid``). Each check is a function of
the :class:`~locimem.integrity.checker.Checker` (and, per scope, the
:class:`~locimem.integrity.checker.Scope`) named for its rule; it reports through
``c.add``. The rules are documented in the docstring of :mod:`locimem.interchange.validate`.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from locimem.check import MAX_ABS_TIME_S
from locimem.model import OBJECTLESS_KINDS, EventKind
from locimem.query.base import COMMIT_KINDS
from locimem.store.sqlite.schema import (
    FORMAT,
    MIGRATIONS,
    SCHEMA_VERSION,
    read_schema,
    schema_differences,
)
from locimem.tracker.apply import TOMB_KEY
from locimem.tracker.state import MemoryState

if TYPE_CHECKING:
    from locimem.integrity.checker import Checker, Scope

# events about no object
_OBJECTLESS = tuple(sorted(k.value for k in OBJECTLESS_KINDS))
_EVENT_KINDS = tuple(k.value for k in EventKind)
_IDENTITY_COMMITS = "'scan', 'correction', 'consolidate'"  # commits that merge or split


# -- file-wide --------------------------------------------------------------------------------
def sqlite_integrity(c: Checker) -> None:
    pragma = "quick_check" if c.quick else "integrity_check"
    try:
        rows = [r[0] for r in c.q(f"PRAGMA {pragma}")]
    except sqlite3.DatabaseError as exc:
        c.add("sqlite_integrity", (), f"not a readable SQLite database ({exc})")
        return
    if rows != ["ok"]:
        shown = "; ".join(str(r) for r in rows[:5])
        more = f"; … {len(rows) - 5} more" if len(rows) > 5 else ""
        c.add("sqlite_integrity", (), f"{pragma}: {shown}{more}")


def schema_version(c: Checker) -> None:
    rule = "schema_version"
    try:
        meta = dict(c.q("SELECT key, value FROM meta"))
        migrations = c.q("SELECT name, version FROM migrations ORDER BY version, name")
    except sqlite3.DatabaseError as exc:
        c.add(rule, (), f"not a locimem store ({exc})")
        return
    if meta.get("format") != FORMAT:
        c.add(rule, (), f"meta format is {meta.get('format')!r}, not {FORMAT!r}")
        return
    version = meta.get("schema_version")
    if version != str(SCHEMA_VERSION):
        older = version is not None and version.isdigit() and int(version) < SCHEMA_VERSION
        c.add(rule, (), f"schema version {version!r}; this locimem reads {SCHEMA_VERSION}"
                 + (" (open the store once writable to migrate it; a backup is taken "
                    "first)" if older else ""))
        return
    try:
        created = float(meta.get("created_at", ""))
    except ValueError:
        created = math.nan
    if not math.isfinite(created):
        c.add(rule, (), f"meta created_at is {meta.get('created_at')!r}, not a time")
    expected = [(name, version) for name, version, _ in MIGRATIONS]
    if [tuple(m) for m in migrations] != expected:
        c.add(rule, (), f"the migrations table holds {[tuple(m) for m in migrations]}, "
                           f"expected {expected}")


def schema_tables(c: Checker) -> None:
    want, have = _expected_shape(), _shape(c.conn)
    for table, columns in want["tables"].items():
        if table not in have["tables"]:
            c.add("schema_tables", (), f"table {table} is missing")
        elif have["tables"][table] != columns:
            got = {c[0]: c for c in have["tables"][table]}
            diff = sorted({c[0] for c in columns} ^ set(got)
                          | {c[0] for c in columns if got.get(c[0]) not in (None, c)})
            c.add("schema_tables", (), f"table {table} differs in columns {diff}")
    for index, sql in sorted(want["indexes"].items()):
        if index not in have["indexes"]:
            c.add("schema_tables", (), f"index {index} is missing")
        elif have["indexes"][index] != sql:
            c.add("schema_tables", (), f"index {index} is not the one the migrations "
                                          f"create: {have['indexes'][index]}")
    # what else the schema holds (a trigger, a view, another table or index) and a table
    # whose columns match but whose definition does not (another CHECK, a default)
    same_columns = [t for t, columns in want["tables"].items()
                    if have["tables"].get(t) == columns]
    for difference in schema_differences(read_schema(c.conn), SCHEMA_VERSION):
        if "is not part of" in difference or any(
                difference.startswith(f"table {t!r} is not the one") for t in same_columns):
            c.add("schema_tables", (), difference)


def ids_unique(c: Checker) -> None:
    rule = "ids_unique"
    problems: dict[int, list[str]] = {}
    for oid, n in c.q("SELECT object_id, count(*) FROM events WHERE kind = 'APPEARED' "
                         "GROUP BY object_id HAVING count(*) > 1"):
        problems.setdefault(oid, []).append(f"APPEARED {n} times")
    objectless = ", ".join(f"'{k}'" for k in _OBJECTLESS)
    for oid, scopes in c.q(
            "SELECT id, group_concat(scope, ', ') FROM ("
            "SELECT object_id AS id, scope FROM events WHERE object_id != 0 AND kind NOT IN "
            f"({objectless}) UNION SELECT object_id, scope FROM observations "
            "WHERE object_id IS NOT NULL UNION SELECT id, scope FROM objects "
            "UNION SELECT id, scope FROM tombstones) GROUP BY id HAVING count(*) > 1"):
        problems.setdefault(oid, []).append(f"is named in scopes {scopes}")
    for oid, a, b in c.q("SELECT o.id, o.scope, t.scope FROM objects o "
                            "JOIN tombstones t ON t.id = o.id"):
        problems.setdefault(oid, []).append(
            f"is both a live object (scope {a!r}) and a tombstone (scope {b!r})")
    for oid in sorted(problems):
        c.add(rule, (oid,), f"object #{oid} " + "; ".join(problems[oid]))
    for (seq,) in c.q("SELECT seq FROM observations WHERE seq IN "
                         "(SELECT seq FROM events) ORDER BY seq"):
        c.add(rule, (seq,), f"seq {seq} is both an observation's and an event's")


def log_order(c: Checker) -> None:
    rule = "log_order"
    for seq, cid, scope, t, c_scope, c_t in c.q(
            "SELECT r.seq, r.commit_id, r.scope, r.t, c.scope, c.t FROM ("
            "SELECT seq, commit_id, scope, t FROM observations UNION ALL "
            "SELECT seq, commit_id, scope, t FROM events) r "
            "LEFT JOIN commits c ON c.id = r.commit_id "
            "WHERE c.id IS NULL OR c.scope != r.scope OR c.t != r.t ORDER BY r.seq"):
        if c_scope is None:
            c.add(rule, (seq,), f"record seq {seq} names commit {cid}, which does "
                                   "not exist")
        elif c_scope != scope:
            c.add(rule, (seq,), f"record seq {seq} is in scope {scope!r}, its commit "
                                   f"{cid} in scope {c_scope!r}")
        else:
            c.add(rule, (seq,), f"record seq {seq} has t={t}, its commit {cid} "
                                   f"t={c_t}")
    records = ("(SELECT seq AS k, commit_id AS v, '' AS p FROM observations UNION ALL "
               "SELECT seq, commit_id, '' FROM events)")
    if not _records_in_commit_order(c.conn):  # (the window query names the ones out of place)
        for seqs in _out_of_order(c.conn, records).values():
            c.add(rule, seqs, f"records out of commit order (seqs {_ids_text(seqs)}): "
                                 "seqs must increase with commit ids")
    for cid, scope, t, recorded in c.q(
            "SELECT id, scope, t, recorded_at FROM commits WHERE abs(t) > ? OR "
            "abs(recorded_at) > ? ORDER BY id", (MAX_ABS_TIME_S, MAX_ABS_TIME_S)):
        c.add(rule, (cid,), f"commit {cid} has t={t}, recorded_at={recorded}: outside the "
                            f"valid-time domain (within {MAX_ABS_TIME_S:g} s of t=0)", scope)
    commits = "(SELECT id AS k, t AS v, scope AS p FROM commits)"
    # a fleet's late scan may trail another writer's commit by the store's late_s (meta)
    late = dict(c.q("SELECT key, value FROM meta")).get("late_s", "0")
    try:
        slack = max(0.0, float(late))
    except ValueError:
        slack = 0.0
    for scope, ids in _out_of_order(c.conn, commits, slack).items():
        c.add(rule, ids, f"commit times go back at commits {_ids_text(ids)}"
                         + (f" (by more than late_s={slack} s)" if slack else ""), scope)


def record_kinds(c: Checker) -> None:
    rule = "record_kinds"
    kinds = ", ".join(f"'{k}'" for k in COMMIT_KINDS)
    for cid, kind in c.q(f"SELECT id, kind FROM commits WHERE kind NOT IN ({kinds}) "
                            "ORDER BY id"):
        c.add(rule, (cid,), f"commit {cid} has an unknown kind {kind!r}")
    for cid, kind, n in c.q("SELECT id, kind, n_detections FROM commits WHERE "
                               "n_detections < 0 OR (kind != 'scan' AND n_detections != 0) "
                               "ORDER BY id"):
        c.add(rule, (cid,), f"{kind} commit {cid} has n_detections={n}")
    kinds = ", ".join(f"'{k}'" for k in _EVENT_KINDS)
    objectless = ", ".join(f"'{k}'" for k in _OBJECTLESS)
    for seq, kind in c.q(f"SELECT seq, kind FROM events WHERE kind NOT IN ({kinds}) "
                            "ORDER BY seq"):
        c.add(rule, (seq,), f"event seq {seq} has an unknown kind {kind!r}")
    for seq, kind, oid in c.q(
            f"SELECT seq, kind, object_id FROM events WHERE (kind IN ({objectless}) AND "
            f"object_id != 0) OR (kind NOT IN ({objectless}) AND object_id <= 0) "
            "ORDER BY seq"):
        c.add(rule, (seq,), f"{kind} event seq {seq} names object {oid}")
    _identity_changes(c)


def _identity_changes(c: Checker) -> None:
    """MERGED and SPLIT come from the tracker (scans), a person (corrections, which name
    the commit's actor) or consolidation; a MERGED absorbs another object, by its id."""
    rule = "record_kinds"
    for seq, kind, ckind in c.q(
            "SELECT e.seq, e.kind, c.kind FROM events e JOIN commits c ON c.id = e.commit_id "
            "WHERE e.kind IN ('MERGED', 'SPLIT') AND c.kind NOT IN "
            f"({_IDENTITY_COMMITS}) ORDER BY e.seq"):
        c.add(rule, (seq,), f"{kind} event seq {seq} is in a {ckind} commit (only scans, "
                            "corrections and consolidation merge or split identities)")
    for seq, kind, actor, by in c.q(
            "SELECT e.seq, e.kind, c.actor, json_extract(e.data, '$.actor') FROM events e "
            "JOIN commits c ON c.id = e.commit_id WHERE e.kind IN ('MERGED', 'SPLIT') AND "
            "c.kind = 'correction' AND json_valid(e.data) AND "
            "json_extract(e.data, '$.actor') IS NOT c.actor ORDER BY e.seq"):
        c.add(rule, (seq,), f"{kind} event seq {seq} of a correction names actor {by!r}, "
                            f"its commit {actor!r}")
    for seq, oid, absorbed in c.q(
            "SELECT seq, object_id, json_extract(data, '$.absorbed') FROM events WHERE "
            "kind = 'MERGED' AND (NOT json_valid(data) OR "
            "json_type(data, '$.absorbed') IS NOT 'integer' OR "
            "json_extract(data, '$.absorbed') = object_id) ORDER BY seq"):
        c.add(rule, (seq,), f"MERGED event seq {seq} of #{oid} absorbs {absorbed!r}, not "
                            "another object's id")


# -- per scope ----------------------------------------------------------------------------
def appeared(c: Checker, s: Scope) -> None:
    rule = "appeared"
    missing = {}
    for table, what in (("objects", "object"), ("tombstones", "tombstone")):
        for (oid,) in c.q(
                f"SELECT id FROM {table} WHERE scope = ? AND id NOT IN (SELECT object_id "
                "FROM events WHERE scope = ? AND kind = 'APPEARED')", (s.name, s.name)):
            missing[oid] = f"{what} #{oid} has no APPEARED event in its scope"
    objectless = ", ".join(f"'{k}'" for k in _OBJECTLESS)
    for oid, first, kind, appeared in c.q(
            "SELECT e.object_id, min(e.seq), e.kind, a.seq FROM events e LEFT JOIN "
            "(SELECT object_id, min(seq) AS seq FROM events WHERE scope = ? AND "
            "kind = 'APPEARED' GROUP BY object_id) a ON a.object_id = e.object_id "
            f"WHERE e.scope = ? AND e.kind NOT IN ({objectless}) GROUP BY e.object_id "
            "HAVING a.seq IS NULL OR min(e.seq) < a.seq", (s.name, s.name)):
        if oid in missing:
            continue
        if appeared is None:
            missing[oid] = f"object #{oid} has events ({kind} at seq {first}) but no " \
                           "APPEARED event"
        else:
            missing[oid] = f"object #{oid} has a {kind} event (seq {first}) before it " \
                           f"APPEARED (seq {appeared})"
    # an identity a MERGED absorbed has ended: no later commit speaks of it
    for oid, merged_at, seq, kind in c.q(
            "SELECT m.absorbed, m.seq, min(e.seq), e.kind FROM (SELECT "
            "json_extract(data, '$.absorbed') AS absorbed, seq, commit_id FROM events WHERE "
            "scope = ? AND kind = 'MERGED' AND json_valid(data)) m JOIN events e ON "
            "e.scope = ? AND e.object_id = m.absorbed AND e.commit_id > m.commit_id "
            "GROUP BY m.absorbed, m.seq ORDER BY m.absorbed", (s.name, s.name)):
        missing.setdefault(oid, f"object #{oid} has a {kind} event (seq {seq}) after it was "
                                f"MERGED into another (seq {merged_at})")
    for oid in sorted(missing):
        c.add(rule, (oid,), missing[oid])


def observations_accounted(c: Checker, s: Scope) -> None:
    rule = "observations_accounted"
    known = s.known
    for oid, n, first in c.q(
            "SELECT object_id, count(*), min(seq) FROM observations WHERE scope = ? AND "
            "object_id IS NOT NULL GROUP BY object_id ORDER BY object_id", (s.name,)):
        if oid not in known:
            c.add(rule, (oid,), f"{n} accepted observation(s) (first seq {first}) "
                                   f"belong to object #{oid}, which is neither live, a "
                                   "tombstone nor ended")
    for (seq,) in c.q("SELECT seq FROM observations WHERE scope = ? AND object_id IS NULL "
                         "AND (rejected IS NULL OR trim(rejected) = '') ORDER BY seq",
                         (s.name,)):
        c.add(rule, (seq,), f"rejected observation seq {seq} has no reason")
    after = s.after
    for cid, n, count, distinct, lo, hi in c.q(
            "SELECT c.id, c.n_detections, count(o.seq), count(DISTINCT o.idx), min(o.idx), "
            "max(o.idx) FROM commits c LEFT JOIN observations o ON o.commit_id = c.id AND "
            "o.scope = c.scope WHERE c.scope = ? GROUP BY c.id ORDER BY c.id", (s.name,)):
        if count != distinct:
            c.add(rule, (cid,), f"commit {cid} has two observations of one detection")
        elif count and (lo < 0 or hi >= n):
            c.add(rule, (cid,), f"commit {cid} has observations of detections "
                                   f"{lo}..{hi}, but only {n} detections")
        elif cid > after and count != n:
            c.add(rule, (cid,), f"commit {cid} has {n} detections but {count} "
                                   "observations (no compaction covers it)")
    _rejection_counts(c, s)
    _suppressed_counts(c, s)


def _rejection_counts(c: Checker, s: Scope) -> None:
    base = {} if s.checkpoint is None else {
        k: r["count"] for k, r in s.checkpoint[1].get("rejections", {}).items()}
    expected = dict(base)
    for key, n in c.q(
            "SELECT key, count(*) FROM observations WHERE scope = ? AND object_id IS NULL "
            "AND key IS NOT NULL AND commit_id > ? GROUP BY key", (s.name, s.after)):
        if not key.startswith(TOMB_KEY):
            expected[key] = expected.get(key, 0) + n
    have = dict(c.q("SELECT key, count FROM rejection_keys WHERE scope = ?", (s.name,)))
    for key in sorted(set(expected) | set(have)):
        want, got = expected.get(key, 0), have.get(key)
        if got != want:
            c.add("observations_accounted", (),
                     f"rejection key {key!r} counts {got} in rejection_keys, but "
                     f"{want} by its observations"
                     + (" and the latest checkpoint" if key in base else ""))


def _suppressed_counts(c: Checker, s: Scope) -> None:
    forgotten = {oid: (seq, cid) for oid, seq, cid in c.q(
        "SELECT object_id, max(seq), max(commit_id) FROM events WHERE scope = ? AND "
        "kind = 'FORGOTTEN' GROUP BY object_id", (s.name,))}
    sightings: dict[int, list[tuple[int, int]]] = {}
    for key, seq, cid in c.q(
            "SELECT key, seq, commit_id FROM observations WHERE scope = ? AND object_id IS "
            "NULL AND key LIKE 'tomb:%'", (s.name,)):
        with contextlib.suppress(ValueError):
            sightings.setdefault(int(key[len(TOMB_KEY):]), []).append((seq, cid))
    cp_tombs = {} if s.checkpoint is None else s.checkpoint[1].get("tombstones", {})
    for oid, data in c.q("SELECT id, data FROM tombstones WHERE scope = ? ORDER BY id",
                            (s.name,)):
        if oid not in forgotten:
            continue  # no FORGOTTEN event: cache_matches_log says so
        f_seq, f_commit = forgotten[oid]
        seen = sightings.get(oid, [])
        if s.checkpoint is not None and f_commit <= s.after and str(oid) in cp_tombs:
            want = cp_tombs[str(oid)]["suppressed"] + sum(c > s.after for _, c in seen)
        else:
            want = sum(q > f_seq for q, _ in seen)
        got = json.loads(data).get("suppressed")
        if got != want:
            c.add("observations_accounted", (oid,),
                     f"tombstone #{oid} counts {got} suppressed sightings, its "
                     f"{TOMB_KEY}{oid} observations {want}")


def checkpoints_valid(c: Checker, s: Scope) -> None:
    rule = "checkpoints_valid"
    compacted = {r[0] for r in c.q(
        "SELECT json_extract(data, '$.horizon_commit') FROM events WHERE scope = ? AND "
        "kind = 'COMPACTED' AND json_valid(data)", (s.name,))}
    for cid, t, blob, c_scope, c_t in c.q(
            "SELECT k.commit_id, k.t, k.state, c.scope, c.t FROM checkpoints k LEFT JOIN "
            "commits c ON c.id = k.commit_id WHERE k.scope = ? ORDER BY k.commit_id",
            (s.name,)):
        problems = []
        if c_scope != s.name:
            problems.append("its commit does not exist" if c_scope is None
                            else f"its commit is in scope {c_scope!r}")
        elif t != c_t:
            problems.append(f"t={t}, its commit t={c_t}")
        if cid not in compacted:
            problems.append("no COMPACTED event names it")
        try:
            MemoryState.from_snapshot(json.loads(zlib.decompress(blob)), 1.0)
        except Exception as exc:
            problems.append(f"its state does not decode ({type(exc).__name__}: {exc})")
        if problems:
            c.add(rule, (cid,), f"checkpoint at commit {cid}: " + "; ".join(problems))


# -- helpers ----------------------------------------------------------------------------------
_SHAPES: dict[str, Any] = {}


def _expected_shape() -> dict[str, Any]:
    """Tables, columns and indexes of a new store (computed once)."""
    if "new" not in _SHAPES:
        conn = sqlite3.connect(":memory:")
        try:
            for _, _, migrate in MIGRATIONS:
                migrate(conn)
            _SHAPES["new"] = _shape(conn)
        finally:
            conn.close()
    return _SHAPES["new"]


def _shape(conn: sqlite3.Connection) -> dict[str, Any]:
    tables: dict[str, list[tuple[str, str, int, int]]] = {}
    for table, column, kind, notnull, pk in conn.execute(
            "SELECT m.name, p.name, upper(p.type), p.\"notnull\", p.pk FROM sqlite_master m, "
            "pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' "
            "ORDER BY m.name, p.cid"):
        tables.setdefault(table, []).append((column, kind, notnull, pk))
    return {
        "tables": tables,
        "indexes": {name: " ".join(sql.split()) for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")},
    }


def _records_in_commit_order(conn: sqlite3.Connection) -> bool:
    """Whether commit ids never go back along the records' seqs: the common case, read from
    the commit indexes — each commit's first and last seq, its records in both tables; the
    records are in commit order exactly when each commit's come after every record of the
    commits before it — a fraction of the cost of :func:`_out_of_order`'s window query over
    every record. False says only "look closer" (a commit id not an integer, a seq in two
    commits' spans)."""
    spans: dict[int, tuple[int, int]] = {}
    for table in ("observations", "events"):
        for cid, first, last in conn.execute(
                f"SELECT commit_id, min(seq), max(seq) FROM {table} GROUP BY commit_id"):
            if type(cid) is not int:
                return False
            if cid in spans:
                first, last = min(first, spans[cid][0]), max(last, spans[cid][1])
            spans[cid] = (first, last)
    previous = None
    for cid in sorted(spans):
        first, last = spans[cid]
        if previous is not None and first <= previous:
            return False
        previous = last
    return True


def _out_of_order(conn: sqlite3.Connection, rows: str, slack: float = 0.0
                  ) -> dict[Any, tuple[int, ...]]:
    """Per partition ``p`` of ``rows`` (k, v, p), the keys ``k`` whose value ``v`` breaks ``v``
    non-decreasing in ``k`` (by more than ``slack``): the smaller of the two sets "below an
    earlier value" and "above a later value" — the rows that moved, when one did."""
    window = "PARTITION BY p ORDER BY k ROWS BETWEEN {} AND {}"
    sql = (f"SELECT p, k, v, max(v) OVER ({window.format('UNBOUNDED PRECEDING', '1 PRECEDING')}"
           f") AS before, min(v) OVER ({window.format('1 FOLLOWING', 'UNBOUNDED FOLLOWING')}) "
           f"AS later FROM {rows}")
    below: dict[Any, list[int]] = {}
    above: dict[Any, list[int]] = {}
    for p, k, v, before, later in conn.execute(
            f"SELECT * FROM ({sql}) WHERE v < before - ? OR v > later + ? ORDER BY p, k",
            (slack, slack)):
        if before is not None and v < before - slack:
            below.setdefault(p, []).append(k)
        if later is not None and v > later + slack:
            above.setdefault(p, []).append(k)
    return {p: _moved(below.get(p, []), above.get(p, []))
            for p in sorted({*below, *above})}


def _ids_text(ids: tuple[int, ...], shown: int = 20) -> str:
    text = ", ".join(str(i) for i in ids[:shown])
    return text + (f", … {len(ids) - shown} more" if len(ids) > shown else "")


CHECKS: tuple[Callable[..., None], ...] = (
    sqlite_integrity, schema_version, schema_tables, ids_unique, log_order, record_kinds,
    appeared, observations_accounted, checkpoints_valid)



def _moved(below: list[int], above: list[int]) -> tuple[int, ...]:
    """The shorter of two key lists that is not empty (``below`` on a tie)."""
    if not below or (above and len(above) < len(below)):
        return tuple(above)
    return tuple(below)
