"""Validate a store: every consistency rule we can state, each violation named by its rule.

:func:`validate_store` checks one store — an open :class:`~locimem.store.sqlite.SQLiteStore`
(``":memory:"`` included) or a path, opened read-only — in every scope of the file unless
``scope`` names one; :func:`validate_directory` checks an exported directory (its manifest and
checksums, and every store file in it); :func:`validate` picks one by what it is given. Nothing
is ever written, and no writer lock is taken: the checks run in one read transaction, so a store
another process keeps writing is seen at one commit boundary.

    >>> from locimem import Detection, ObjectMemory
    >>> with ObjectMemory.open(":memory:", scope="home") as mem:
    ...     _ = mem.observe(0.0, [Detection("cup", 0.9, (1.0, 2.0, 0.8), (0.1, 0.1, 0.1))])
    ...     report = validate_store(mem.store)
    >>> report.ok, report.scopes, len(report.rules)
    (True, ('home',), 17)

Each :class:`Violation` names its ``rule``, the ``ids`` involved (what they are is said per rule
below), a ``message`` and the ``scope`` (None for the file-wide rules). A report's
``warnings`` (same form) say what is odd but legitimate; they do not make it fail.

Rules
-----
File-wide. When one of the first three fails nothing else is checked: the rest would only
report its consequences.

``sqlite_integrity``
    ``PRAGMA integrity_check`` (``quick_check`` with ``quick=True``) says ok. No ids.
``schema_version``
    ``meta`` names the locimem format, schema version :data:`~locimem.store.schema.
    SCHEMA_VERSION` and a numeric ``created_at``; ``migrations`` holds exactly the names and
    versions of :data:`~locimem.store.schema.MIGRATIONS`, in order. No ids.
``schema_tables``
    Every table, column (name, type, not-null, key) and index (its definition) the migrations
    create is there. No ids.
``ids_unique``
    An object id APPEARED once in the file, and every record and row naming it is in that one
    scope; no id is both a live object and a tombstone; no seq is both an observation's and an
    event's (observations and events share one sequence). ids: the object id, or the seq.
``log_order``
    Every observation and event belongs to a commit that exists, is in its commit's scope and
    carries its commit's valid time; seqs increase with commit ids; a scope's commit times
    never go back. ids: the seqs out of place (the commit ids, and the scope, for times).
``record_kinds``
    Commit kinds are :data:`COMMIT_KINDS` (scan, correction, forget, maintenance, scene,
    prior, review, consolidate), and only scans carry detections; event kinds are
    :class:`~locimem.model.EventKind` values; the object-less events (ROOM_DEFINED,
    ROOMS_CONNECTED, COMPACTED) name object 0 and the others a positive id. ids: the commit
    id, or the seq.

Per scope.

``appeared``
    Every object and tombstone has an APPEARED event in its scope, and no event about an object
    comes before it. ids: the object id.
``observations_accounted``
    Every accepted observation belongs to an object of the scope that is live, a tombstone, or
    ended (EXPIRED, or absorbed by a MERGED event); every rejected one has a reason. A commit's
    observations are its detections: indexes unique and below its ``n_detections``, and all of
    them there in commits after the scope's latest checkpoint (compaction thins the ones at or
    before it). The ``rejection_keys`` counts, and each tombstone's ``suppressed`` count, equal
    the latest checkpoint's plus the observations carrying the key after it (all of them, where
    no checkpoint covers the key). ids: the object id, the seq, the commit id or the tombstone
    id; none for a rejection key (the message names it).
``confidence_range``
    Observation confidences lie in [0, 1] (ids: the seq); label masses of objects and
    tombstones are finite and >= 0, and each live object's confidence (read as the memory reads
    it, with the default :class:`~locimem.config.TrackerConfig`) lies in [0, 1] (ids: the object
    id); relation confidences lie in (0, 1] (ids: subject and object).
``object_fields``
    Objects and tombstoned objects have a label, finite centres and places, finite sizes >= 0,
    ``first_seen <= last_seen``, ``lost_at`` exactly when lost, counts and absence >= 0, at
    most ``HELD_MAX`` held sightings. ids: the object id.
``parents_exist``
    Every id the scope refers to exists — is live, a tombstone, or ended (EXPIRED or MERGED):
    the target of every recorded relation (RELATION events: on, in, under, …), the ids events
    name (SPLIT ``into``, APPEARED ``split_from``, LOST / EXPIRED ``replaced_by``), and the
    object of every prior-map, delta and keyframe row; every id in an object's ``merged_from``
    was absorbed by a MERGED event. ids: the missing id.
``relations_live``
    Every relation of the memory (derived on open from the cache) joins two live objects of the
    scope that are published (promoted), present (not lost) and not forgotten; so does every
    relation the RELATION events leave standing (added and not removed since). ids: the subject
    and the object.
``levels_rooms``
    Levels are ordered (:mod:`locimem.scene.levels`: rooms contain furniture, furniture
    supports items): no relation — derived, or left standing by the RELATION events — puts
    furniture on, under or in an item (ids: subject and object). Once the scope has rooms, a
    published, present object that lies outside every room (``room_of`` is None) is a
    *warning*, not a violation: the rooms need not cover the whole map, and the test suite
    builds such memories on purpose (ids: the object id).
``cache_matches_log``
    The materialised state (``objects``, ``tombstones``, ``rejection_keys``, ``scene``,
    ``prior_map``, ``deltas``, ``keyframes``) equals the replay of the log from the latest
    checkpoint: ``snapshot()`` of both agree. The strongest rule. ids: the object ids that
    differ (a delta's object; none for rejection keys, rooms or the time), or the object of the
    record replay failed at.
``deltas_valid``
    Every delta (row and DELTA event) has a status in pending, confirmed, rejected, applied,
    and each row's data agrees with its id, object and status columns. ids: the delta id.
``keyframes_bounded``
    At most :data:`~locimem.evidence.keyframes.N_KEYFRAMES` kept frames per object (rows and
    KEYFRAME events). ids: the object id.
``checkpoints_valid``
    Every checkpoint decodes to a state, sits on a commit of its scope and carries that
    commit's time, and was written with a COMPACTED event naming it. ids: the checkpoint's
    commit id.

Memory directories (:func:`validate_directory`, see :mod:`locimem.interchange.export`):

``manifest_checksums``
    :func:`~locimem.interchange.export.check_directory` finds nothing wrong: the manifest is
    intact, and every file is there, with its size and SHA-256. No ids.
``directory_imports``
    The directory imports into a new store, which then passes every rule above (checked on a
    scratch copy). No ids.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locimem.config import TrackerConfig
from locimem.errors import NotFound
from locimem.evidence.keyframes import N_KEYFRAMES
from locimem.model import Commit, Event, EventKind, Observation
from locimem.query import reader
from locimem.query.reader import MemoryReader
from locimem.scene.levels import OBJECT_LEVELS, level_of
from locimem.store.schema import FORMAT, MIGRATIONS, SCHEMA_VERSION
from locimem.store.sqlite import MEMORY, SQLiteStore
from locimem.tracker.apply import TOMB_KEY, apply
from locimem.tracker.state import HELD_MAX, MemoryState, ObjectState

__all__ = [
    "COMMIT_KINDS",
    "DELTA_STATUSES",
    "RULES",
    "ValidationReport",
    "Violation",
    "load_state",
    "validate",
    "validate_directory",
    "validate_store",
]

FILE_RULES = ("sqlite_integrity", "schema_version", "schema_tables", "ids_unique", "log_order",
              "record_kinds")
SCOPE_RULES = ("appeared", "observations_accounted", "confidence_range", "object_fields",
               "parents_exist", "relations_live", "levels_rooms", "cache_matches_log",
               "deltas_valid", "keyframes_bounded", "checkpoints_valid")
RULES: tuple[str, ...] = FILE_RULES + SCOPE_RULES  # a store's rules, in the order checked
DIRECTORY_RULES = ("manifest_checksums", "directory_imports")
DELTA_STATUSES = ("pending", "confirmed", "rejected", "applied")
# the commit kinds: the ones audit() filters on, and those of the prior map and its deltas
COMMIT_KINDS = reader.COMMIT_KINDS
_OBJECTLESS = ("ROOM_DEFINED", "ROOMS_CONNECTED", "COMPACTED")  # events about no object
_SUPPORT = ("on", "under", "in")  # relations that order levels: never furniture to an item
_SYMMETRIC = ("next_to", "near")
_EVENT_KINDS = tuple(k.value for k in EventKind)
_SHOWN = 50  # violations listed per rule by str(report)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: its id, the ids involved, what is wrong, and the scope (None: the
    whole file)."""

    rule: str
    ids: tuple[int, ...]
    message: str
    scope: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "ids": list(self.ids), "message": self.message,
                "scope": self.scope}

    def __str__(self) -> str:
        where = "" if self.scope is None else f" scope {self.scope!r}:"
        return f"[{self.rule}]{where} {self.message}"


@dataclass
class ValidationReport:
    """What :func:`validate_store` (or :func:`validate_directory`) found in ``target``."""

    target: str
    violations: list[Violation] = field(default_factory=list)
    rules: tuple[str, ...] = ()  # the rules checked, in order
    scopes: tuple[str, ...] = ()  # the scopes checked
    warnings: list[Violation] = field(default_factory=list)  # odd but legitimate

    @property
    def ok(self) -> bool:
        """True when no rule is broken (warnings do not count)."""
        return not self.violations

    def of(self, rule: str) -> list[Violation]:
        """The violations of one rule."""
        return [v for v in self.violations if v.rule == rule]

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "ok": self.ok, "rules": list(self.rules),
                "scopes": list(self.scopes),
                "violations": [v.to_dict() for v in self.violations],
                "warnings": [w.to_dict() for w in self.warnings]}

    def __str__(self) -> str:
        scopes = ", ".join(self.scopes) or "none"
        n, w = len(self.violations), len(self.warnings)
        head = f"{self.target}: {len(self.rules)} rules checked, scopes: {scopes}: "
        head += "ok" if self.ok else f"{n} violation{'s' * (n != 1)}"
        if w:
            head += f", {w} warning{'s' * (w != 1)}"
        lines = [head]
        for found, prefix in ((self.violations, ""), (self.warnings, "warning ")):
            for rule in dict.fromkeys(v.rule for v in found):
                mine = [v for v in found if v.rule == rule]
                lines += [f"  {prefix}{v}" for v in mine[:_SHOWN]]
                if len(mine) > _SHOWN:
                    lines.append(f"  {prefix}[{rule}] ... {len(mine) - _SHOWN} more")
        return "\n".join(lines)


# -- entry points -----------------------------------------------------------------------------
def validate(target: SQLiteStore | str | os.PathLike[str], *, scope: str | None = None
             ) -> ValidationReport:
    """Validate a store (an open one or a file) or an exported directory."""
    if not isinstance(target, SQLiteStore) and str(target) != MEMORY and Path(target).is_dir():
        return validate_directory(target)
    return validate_store(target, scope=scope)


def validate_store(store: SQLiteStore | str | os.PathLike[str], *, scope: str | None = None,
                   quick: bool = False) -> ValidationReport:
    """Check every rule (see the module docstring) on ``store``: an open store, checked on its
    own connection, or a path, opened read-only. Every scope in the file, or only ``scope``.
    ``quick`` runs SQLite's ``quick_check`` instead of the full ``integrity_check``.

    Raises:
        NotFound: there is no file at the path, or no ``scope`` in it.
    """
    if isinstance(store, SQLiteStore):
        if store.conn is None:
            raise NotFound(f"the store {store.path!r} is closed")
        return _Checker(store.path, store.conn, lambda: store, scope, quick).run()
    path = Path(store)
    if not path.is_file():
        raise NotFound(f"no store at {str(path)!r}")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                               isolation_level=None)
    except sqlite3.Error as exc:
        return ValidationReport(str(path), [Violation("sqlite_integrity", (), str(exc))],
                                ("sqlite_integrity",))
    opened: list[SQLiteStore] = []

    def open_store() -> SQLiteStore:
        opened.append(SQLiteStore(path, read_only=True))
        return opened[-1]

    try:
        return _Checker(str(path), conn, open_store, scope, quick).run()
    finally:
        for s in opened:
            s.close()
        conn.close()


def load_state(store: SQLiteStore, scope: str, *, from_log: bool,
               config: TrackerConfig | None = None) -> MemoryState:
    """The state of ``scope`` as a memory would load it: from the materialised cache, or by
    replaying the log from the latest checkpoint. Takes no writer lock and writes nothing."""
    reader = MemoryReader(store, scope, config or TrackerConfig(), MemoryState())
    return reader._load_state(from_log=from_log)


def validate_directory(directory: str | os.PathLike[str]) -> ValidationReport:
    """Check a memory directory (:mod:`locimem.interchange.export`): the manifest and the size
    and SHA-256 of every file (``manifest_checksums``, by
    :func:`~locimem.interchange.export.check_directory`); then that it imports into a new
    store (``directory_imports``), and that the store it gives passes every rule of
    :func:`validate_store` (their messages say ``as imported``). The scratch store lives in a
    temporary directory and is deleted.

    Raises:
        NotFound: ``directory`` is not a directory.
    """
    from locimem.interchange.export import check_directory, import_memory

    root = Path(directory)
    if not root.is_dir():
        raise NotFound(f"no directory at {str(root)!r}")
    report = ValidationReport(str(root), rules=DIRECTORY_RULES[:1])
    report.violations += [Violation("manifest_checksums", (), problem)
                          for problem in check_directory(root)]
    if not report.ok:
        return report
    report.rules = DIRECTORY_RULES
    with tempfile.TemporaryDirectory(prefix="locimem-validate-") as scratch:
        copy = Path(scratch) / "imported.loci"
        try:
            import_memory(root, copy)
        except Exception as exc:  # whatever stops the import is what is wrong
            report.violations.append(Violation(
                "directory_imports", (), f"it does not import: {type(exc).__name__}: {exc}"))
            return report
        imported = validate_store(copy)
    report.rules += imported.rules
    report.scopes = imported.scopes
    for found, into in ((imported.violations, report.violations),
                        (imported.warnings, report.warnings)):
        into += [Violation(v.rule, v.ids, f"as imported: {v.message}", v.scope) for v in found]
    return report


# -- the checks -------------------------------------------------------------------------------
class _Stop(Exception):
    """A fundamental rule failed: the others are not checked."""


@dataclass
class _Scope:
    """What several per-scope rules share, computed once."""

    name: str
    checkpoint: tuple[int, dict[str, Any]] | None = None  # newest (commit id, state)
    live: set[int] = field(default_factory=set)
    tombs: set[int] = field(default_factory=set)
    ended: set[int] = field(default_factory=set)  # EXPIRED, or absorbed by a MERGED event
    absorbed: set[int] = field(default_factory=set)
    cache: MemoryState | None = None  # None when the cache does not load
    # relations the RELATION events leave standing: (subject, relation, object), "contains"
    # as "in" and symmetric ones smaller id first, as the relation index keys them
    standing: list[tuple[int, str, int]] = field(default_factory=list)

    @property
    def after(self) -> int:
        return 0 if self.checkpoint is None else self.checkpoint[0]

    @property
    def known(self) -> set[int]:
        return self.live | self.tombs | self.ended


class _Checker:
    def __init__(self, target: str, conn: sqlite3.Connection,
                 open_store: Callable[[], SQLiteStore], scope: str | None, quick: bool) -> None:
        self.target = target
        self.conn = conn
        self._open_store = open_store
        self._store: SQLiteStore | None = None
        self.only_scope = scope
        self.quick = quick
        self.config = TrackerConfig()
        self.report = ValidationReport(target)
        self._scope: str | None = None

    @property
    def store(self) -> SQLiteStore:
        if self._store is None:
            self._store = self._open_store()
        return self._store

    def add(self, rule: str, ids: Any, message: str, scope: str | None = None) -> None:
        self.report.violations.append(
            Violation(rule, tuple(int(i) for i in ids), message, scope or self._scope))

    def warn(self, rule: str, ids: Any, message: str) -> None:
        self.report.warnings.append(
            Violation(rule, tuple(int(i) for i in ids), message, self._scope))

    def q(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, args).fetchall()

    def run(self) -> ValidationReport:
        try:
            with self._read_transaction():
                for rule in FILE_RULES[:3]:  # on the file as it is, before opening it as a store
                    self._check(rule, getattr(self, "_" + rule))
            self.conn = self.store.conn
            with self._read_transaction():
                for rule in FILE_RULES[3:]:
                    self._check(rule, getattr(self, "_" + rule))
                scopes = self._scopes()
                self.report.scopes = tuple(scopes)
                for name in scopes:
                    self._check_scope(name)
        except _Stop:
            pass
        return self.report

    @contextlib.contextmanager
    def _read_transaction(self) -> Iterator[None]:
        """One read snapshot for a series of checks (unless the caller holds a transaction)."""
        conn = self.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")

    def _check(self, rule: str, check: Callable[..., None], *args: Any) -> None:
        self.report.rules = tuple(dict.fromkeys((*self.report.rules, rule)))
        before = len(self.report.violations)
        try:
            check(*args)
        except _Stop:
            raise
        except Exception as exc:  # a check must report, never crash, on a damaged store
            self.add(rule, (), f"could not be checked: {type(exc).__name__}: {exc}")
        if rule in FILE_RULES[:3] and len(self.report.violations) > before:
            raise _Stop

    def _scopes(self) -> list[str]:
        tables = ("commits", "objects", "tombstones", "rejection_keys", "scene", "checkpoints",
                  "prior_map", "deltas", "keyframes")
        names = sorted({r[0] for t in tables for r in self.q(f"SELECT DISTINCT scope FROM {t}")})
        if self.only_scope is None:
            return names
        if self.only_scope not in names:
            raise NotFound(f"no scope {self.only_scope!r} in {self.target!r} (scopes: "
                           f"{', '.join(repr(n) for n in names) or 'none'})")
        return [self.only_scope]

    # -- file-wide ----------------------------------------------------------------------------
    def _sqlite_integrity(self) -> None:
        pragma = "quick_check" if self.quick else "integrity_check"
        try:
            rows = [r[0] for r in self.q(f"PRAGMA {pragma}")]
        except sqlite3.DatabaseError as exc:
            self.add("sqlite_integrity", (), f"not a readable SQLite database ({exc})")
            return
        if rows != ["ok"]:
            shown = "; ".join(str(r) for r in rows[:5])
            more = f"; … {len(rows) - 5} more" if len(rows) > 5 else ""
            self.add("sqlite_integrity", (), f"{pragma}: {shown}{more}")

    def _schema_version(self) -> None:
        rule = "schema_version"
        try:
            meta = dict(self.q("SELECT key, value FROM meta"))
            migrations = self.q("SELECT name, version FROM migrations ORDER BY version, name")
        except sqlite3.DatabaseError as exc:
            self.add(rule, (), f"not a locimem store ({exc})")
            return
        if meta.get("format") != FORMAT:
            self.add(rule, (), f"meta format is {meta.get('format')!r}, not {FORMAT!r}")
            return
        version = meta.get("schema_version")
        if version != str(SCHEMA_VERSION):
            older = version is not None and version.isdigit() and int(version) < SCHEMA_VERSION
            self.add(rule, (), f"schema version {version!r}; this locimem reads {SCHEMA_VERSION}"
                     + (" (open the store once writable to migrate it; a backup is taken "
                        "first)" if older else ""))
            return
        try:
            created = float(meta.get("created_at", ""))
        except ValueError:
            created = math.nan
        if not math.isfinite(created):
            self.add(rule, (), f"meta created_at is {meta.get('created_at')!r}, not a time")
        expected = [(name, version) for name, version, _ in MIGRATIONS]
        if [tuple(m) for m in migrations] != expected:
            self.add(rule, (), f"the migrations table holds {[tuple(m) for m in migrations]}, "
                               f"expected {expected}")

    def _schema_tables(self) -> None:
        want, have = _expected_shape(), _shape(self.conn)
        for table, columns in want["tables"].items():
            if table not in have["tables"]:
                self.add("schema_tables", (), f"table {table} is missing")
            elif have["tables"][table] != columns:
                got = {c[0]: c for c in have["tables"][table]}
                diff = sorted({c[0] for c in columns} ^ set(got)
                              | {c[0] for c in columns if got.get(c[0]) not in (None, c)})
                self.add("schema_tables", (), f"table {table} differs in columns {diff}")
        for index, sql in sorted(want["indexes"].items()):
            if index not in have["indexes"]:
                self.add("schema_tables", (), f"index {index} is missing")
            elif have["indexes"][index] != sql:
                self.add("schema_tables", (), f"index {index} is not the one the migrations "
                                              f"create: {have['indexes'][index]}")

    def _ids_unique(self) -> None:
        rule = "ids_unique"
        problems: dict[int, list[str]] = {}
        for oid, n in self.q("SELECT object_id, count(*) FROM events WHERE kind = 'APPEARED' "
                             "GROUP BY object_id HAVING count(*) > 1"):
            problems.setdefault(oid, []).append(f"APPEARED {n} times")
        objectless = ", ".join(f"'{k}'" for k in _OBJECTLESS)
        for oid, scopes in self.q(
                "SELECT id, group_concat(scope, ', ') FROM ("
                "SELECT object_id AS id, scope FROM events WHERE object_id != 0 AND kind NOT IN "
                f"({objectless}) UNION SELECT object_id, scope FROM observations "
                "WHERE object_id IS NOT NULL UNION SELECT id, scope FROM objects "
                "UNION SELECT id, scope FROM tombstones) GROUP BY id HAVING count(*) > 1"):
            problems.setdefault(oid, []).append(f"is named in scopes {scopes}")
        for oid, a, b in self.q("SELECT o.id, o.scope, t.scope FROM objects o "
                                "JOIN tombstones t ON t.id = o.id"):
            problems.setdefault(oid, []).append(
                f"is both a live object (scope {a!r}) and a tombstone (scope {b!r})")
        for oid in sorted(problems):
            self.add(rule, (oid,), f"object #{oid} " + "; ".join(problems[oid]))
        for (seq,) in self.q("SELECT seq FROM observations WHERE seq IN "
                             "(SELECT seq FROM events) ORDER BY seq"):
            self.add(rule, (seq,), f"seq {seq} is both an observation's and an event's")

    def _log_order(self) -> None:
        rule = "log_order"
        for seq, cid, scope, t, c_scope, c_t in self.q(
                "SELECT r.seq, r.commit_id, r.scope, r.t, c.scope, c.t FROM ("
                "SELECT seq, commit_id, scope, t FROM observations UNION ALL "
                "SELECT seq, commit_id, scope, t FROM events) r "
                "LEFT JOIN commits c ON c.id = r.commit_id "
                "WHERE c.id IS NULL OR c.scope != r.scope OR c.t != r.t ORDER BY r.seq"):
            if c_scope is None:
                self.add(rule, (seq,), f"record seq {seq} names commit {cid}, which does "
                                       "not exist")
            elif c_scope != scope:
                self.add(rule, (seq,), f"record seq {seq} is in scope {scope!r}, its commit "
                                       f"{cid} in scope {c_scope!r}")
            else:
                self.add(rule, (seq,), f"record seq {seq} has t={t}, its commit {cid} "
                                       f"t={c_t}")
        records = ("(SELECT seq AS k, commit_id AS v, '' AS p FROM observations UNION ALL "
                   "SELECT seq, commit_id, '' FROM events)")
        for seqs in _out_of_order(self.conn, records).values():
            self.add(rule, seqs, f"records out of commit order (seqs {_ids_text(seqs)}): "
                                 "seqs must increase with commit ids")
        commits = "(SELECT id AS k, t AS v, scope AS p FROM commits)"
        for scope, ids in _out_of_order(self.conn, commits).items():
            self.add(rule, ids, f"commit times go back at commits {_ids_text(ids)}", scope)

    def _record_kinds(self) -> None:
        rule = "record_kinds"
        kinds = ", ".join(f"'{k}'" for k in COMMIT_KINDS)
        for cid, kind in self.q(f"SELECT id, kind FROM commits WHERE kind NOT IN ({kinds}) "
                                "ORDER BY id"):
            self.add(rule, (cid,), f"commit {cid} has an unknown kind {kind!r}")
        for cid, kind, n in self.q("SELECT id, kind, n_detections FROM commits WHERE "
                                   "n_detections < 0 OR (kind != 'scan' AND n_detections != 0) "
                                   "ORDER BY id"):
            self.add(rule, (cid,), f"{kind} commit {cid} has n_detections={n}")
        kinds = ", ".join(f"'{k}'" for k in _EVENT_KINDS)
        objectless = ", ".join(f"'{k}'" for k in _OBJECTLESS)
        for seq, kind in self.q(f"SELECT seq, kind FROM events WHERE kind NOT IN ({kinds}) "
                                "ORDER BY seq"):
            self.add(rule, (seq,), f"event seq {seq} has an unknown kind {kind!r}")
        for seq, kind, oid in self.q(
                f"SELECT seq, kind, object_id FROM events WHERE (kind IN ({objectless}) AND "
                f"object_id != 0) OR (kind NOT IN ({objectless}) AND object_id <= 0) "
                "ORDER BY seq"):
            self.add(rule, (seq,), f"{kind} event seq {seq} names object {oid}")

    # -- per scope ----------------------------------------------------------------------------
    def _check_scope(self, name: str) -> None:
        self._scope = name
        s = _Scope(name)
        try:
            s.checkpoint = self.store.latest_checkpoint(name)
        except Exception:  # reported by checkpoints_valid
            s.checkpoint = None
        s.live = {r[0] for r in self.q("SELECT id FROM objects WHERE scope = ?", (name,))}
        s.tombs = {r[0] for r in self.q("SELECT id FROM tombstones WHERE scope = ?", (name,))}
        s.absorbed = {r[0] for r in self.q(
            "SELECT json_extract(data, '$.absorbed') FROM events WHERE scope = ? AND "
            "kind = 'MERGED' AND json_valid(data)", (name,)) if isinstance(r[0], int)}
        s.ended = s.absorbed | {r[0] for r in self.q(
            "SELECT object_id FROM events WHERE scope = ? AND kind = 'EXPIRED'", (name,))}
        try:
            s.cache = load_state(self.store, name, from_log=False, config=self.config)
        except Exception:  # reported by cache_matches_log
            s.cache = None
        standing: dict[tuple[int, str, int], bool] = {}
        for subject, relation, target, added in self.q(
                "SELECT object_id, json_extract(data, '$.relation'), "
                "json_extract(data, '$.object'), json_extract(data, '$.added') FROM events "
                "WHERE scope = ? AND kind = 'RELATION' AND json_valid(data) ORDER BY seq",
                (name,)):
            if not isinstance(target, int):
                continue  # parents_exist says so
            if relation == "contains":
                subject, relation, target = target, "in", subject
            if relation in _SYMMETRIC:
                subject, target = min(subject, target), max(subject, target)
            standing[(subject, relation, target)] = bool(added)
        s.standing = sorted(key for key, on in standing.items() if on)
        for rule in SCOPE_RULES:
            self._check(rule, getattr(self, "_" + rule), s)
        self._scope = None

    def _appeared(self, s: _Scope) -> None:
        rule = "appeared"
        missing = {}
        for table, what in (("objects", "object"), ("tombstones", "tombstone")):
            for (oid,) in self.q(
                    f"SELECT id FROM {table} WHERE scope = ? AND id NOT IN (SELECT object_id "
                    "FROM events WHERE scope = ? AND kind = 'APPEARED')", (s.name, s.name)):
                missing[oid] = f"{what} #{oid} has no APPEARED event in its scope"
        objectless = ", ".join(f"'{k}'" for k in _OBJECTLESS)
        for oid, first, kind, appeared in self.q(
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
        for oid in sorted(missing):
            self.add(rule, (oid,), missing[oid])

    def _observations_accounted(self, s: _Scope) -> None:
        rule = "observations_accounted"
        known = s.known
        for oid, n, first in self.q(
                "SELECT object_id, count(*), min(seq) FROM observations WHERE scope = ? AND "
                "object_id IS NOT NULL GROUP BY object_id ORDER BY object_id", (s.name,)):
            if oid not in known:
                self.add(rule, (oid,), f"{n} accepted observation(s) (first seq {first}) "
                                       f"belong to object #{oid}, which is neither live, a "
                                       "tombstone nor ended")
        for (seq,) in self.q("SELECT seq FROM observations WHERE scope = ? AND object_id IS NULL "
                             "AND (rejected IS NULL OR trim(rejected) = '') ORDER BY seq",
                             (s.name,)):
            self.add(rule, (seq,), f"rejected observation seq {seq} has no reason")
        after = s.after
        for cid, n, count, distinct, lo, hi in self.q(
                "SELECT c.id, c.n_detections, count(o.seq), count(DISTINCT o.idx), min(o.idx), "
                "max(o.idx) FROM commits c LEFT JOIN observations o ON o.commit_id = c.id AND "
                "o.scope = c.scope WHERE c.scope = ? GROUP BY c.id ORDER BY c.id", (s.name,)):
            if count != distinct:
                self.add(rule, (cid,), f"commit {cid} has two observations of one detection")
            elif count and (lo < 0 or hi >= n):
                self.add(rule, (cid,), f"commit {cid} has observations of detections "
                                       f"{lo}..{hi}, but only {n} detections")
            elif cid > after and count != n:
                self.add(rule, (cid,), f"commit {cid} has {n} detections but {count} "
                                       "observations (no compaction covers it)")
        self._rejection_counts(s)
        self._suppressed_counts(s)

    def _rejection_counts(self, s: _Scope) -> None:
        base = {} if s.checkpoint is None else {
            k: r["count"] for k, r in s.checkpoint[1].get("rejections", {}).items()}
        expected = dict(base)
        for key, n in self.q(
                "SELECT key, count(*) FROM observations WHERE scope = ? AND object_id IS NULL "
                "AND key IS NOT NULL AND commit_id > ? GROUP BY key", (s.name, s.after)):
            if not key.startswith(TOMB_KEY):
                expected[key] = expected.get(key, 0) + n
        have = dict(self.q("SELECT key, count FROM rejection_keys WHERE scope = ?", (s.name,)))
        for key in sorted(set(expected) | set(have)):
            want, got = expected.get(key, 0), have.get(key)
            if got != want:
                self.add("observations_accounted", (),
                         f"rejection key {key!r} counts {got} in rejection_keys, but "
                         f"{want} by its observations"
                         + (" and the latest checkpoint" if key in base else ""))

    def _suppressed_counts(self, s: _Scope) -> None:
        forgotten = {oid: (seq, cid) for oid, seq, cid in self.q(
            "SELECT object_id, max(seq), max(commit_id) FROM events WHERE scope = ? AND "
            "kind = 'FORGOTTEN' GROUP BY object_id", (s.name,))}
        sightings: dict[int, list[tuple[int, int]]] = {}
        for key, seq, cid in self.q(
                "SELECT key, seq, commit_id FROM observations WHERE scope = ? AND object_id IS "
                "NULL AND key LIKE 'tomb:%'", (s.name,)):
            with contextlib.suppress(ValueError):
                sightings.setdefault(int(key[len(TOMB_KEY):]), []).append((seq, cid))
        cp_tombs = {} if s.checkpoint is None else s.checkpoint[1].get("tombstones", {})
        for oid, data in self.q("SELECT id, data FROM tombstones WHERE scope = ? ORDER BY id",
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
                self.add("observations_accounted", (oid,),
                         f"tombstone #{oid} counts {got} suppressed sightings, its "
                         f"{TOMB_KEY}{oid} observations {want}")

    def _confidence_range(self, s: _Scope) -> None:
        rule = "confidence_range"
        for seq, oid, conf in self.q(
                "SELECT seq, object_id, confidence FROM observations WHERE scope = ? AND NOT "
                "(typeof(confidence) IN ('real', 'integer') AND confidence >= 0 AND "
                "confidence <= 1) ORDER BY seq", (s.name,)):
            whose = "rejected" if oid is None else f"of object #{oid}"
            self.add(rule, (seq,), f"observation seq {seq} ({whose}) has confidence {conf!r}")
        state = s.cache
        if state is None:
            return
        objects = [*state.objects.values(), *(t.obj for t in state.tombstones.values())]
        for obj in sorted(objects, key=lambda o: o.id):
            bad = {k: m for k, m in obj.label_mass.items()
                   if not isinstance(m, (int, float)) or not math.isfinite(m) or m < 0}
            if bad:
                self.add(rule, (obj.id,), f"object #{obj.id} has label masses {bad}")
        now, cfg = state.now or 0.0, self.config
        for oid, obj in sorted(state.objects.items()):
            try:
                conf = obj.confidence(now, cfg.tau_s, cfg.tau_unseen_s)
            except (ArithmeticError, TypeError, ValueError) as exc:
                conf = f"unreadable ({exc})"
            if not isinstance(conf, float) or not 0.0 <= conf <= 1.0:
                self.add(rule, (oid,), f"object #{oid} reads confidence {conf} at t={now}")
        for (a, relation, b), conf in sorted(state.scene.relations.all().items()):
            if not 0.0 < conf <= 1.0:
                self.add(rule, (a, b), f"relation #{a} {relation} #{b} has confidence {conf}")

    def _object_fields(self, s: _Scope) -> None:
        state = s.cache
        if state is None:
            return
        objects = [*state.objects.values(), *(t.obj for t in state.tombstones.values())]
        for obj in sorted(objects, key=lambda o: o.id):
            problems = _object_problems(obj)
            if problems:
                self.add("object_fields", (obj.id,), f"object #{obj.id}: " + "; ".join(problems))

    def _parents_exist(self, s: _Scope) -> None:
        rule = "parents_exist"
        known = s.known
        missing: dict[int, list[str]] = {}

        def need(oid: Any, what: str) -> None:
            if isinstance(oid, int) and oid not in known:
                missing.setdefault(oid, []).append(what)
            elif oid is not None and not isinstance(oid, int):
                missing.setdefault(-1, []).append(f"{what} names {oid!r}, not an id")

        for seq, subject, target, relation in self.q(
                "SELECT seq, object_id, json_extract(data, '$.object'), "
                "json_extract(data, '$.relation') FROM events WHERE scope = ? AND "
                "kind = 'RELATION' AND json_valid(data) ORDER BY seq", (s.name,)):
            need(target, f"the relation #{subject} {relation} (event seq {seq})")
        for seq, kind, oid, into, split_from, replaced_by in self.q(
                "SELECT seq, kind, object_id, json_extract(data, '$.into'), "
                "json_extract(data, '$.split_from'), json_extract(data, '$.replaced_by') "
                "FROM events WHERE scope = ? AND kind IN ('SPLIT', 'APPEARED', 'LOST', "
                "'EXPIRED') AND json_valid(data) AND (json_extract(data, '$.into') IS NOT NULL "
                "OR json_extract(data, '$.split_from') IS NOT NULL OR "
                "json_extract(data, '$.replaced_by') IS NOT NULL) ORDER BY seq", (s.name,)):
            for value, key in ((into, "into"), (split_from, "split_from"),
                               (replaced_by, "replaced_by")):
                need(value, f"{kind} of #{oid} (seq {seq}) {key}")
        for table, column, what in (("prior_map", "id", "a prior-map entry"),
                                    ("deltas", "object_id", "a delta"),
                                    ("keyframes", "object_id", "keyframes")):
            for (oid,) in self.q(f"SELECT {column} FROM {table} WHERE scope = ? ORDER BY 1",
                                 (s.name,)):
                need(oid, what)
        if s.cache is not None:
            for oid, obj in sorted(s.cache.objects.items()):
                for gone in obj.merged_from:
                    if gone not in s.absorbed:
                        missing.setdefault(gone, []).append(
                            f"the merged_from of #{oid} (no MERGED event absorbed it)")
        for oid in sorted(missing):
            whats = missing[oid]
            shown = "; ".join(whats[:5]) + (f"; … {len(whats) - 5} more" if len(whats) > 5
                                            else "")
            if oid == -1:
                self.add(rule, (), shown)
            else:
                self.add(rule, (oid,), f"object #{oid} does not exist, but is named by {shown}")

    def _relations_live(self, s: _Scope) -> None:
        rule = "relations_live"
        state = s.cache
        if state is None:
            return

        def dead(oid: int) -> str | None:
            obj = state.objects.get(oid)
            if obj is None:
                return "forgotten" if oid in state.tombstones else "not a live object"
            if oid in state.tombstones:
                return "forgotten"
            if not obj.promoted:
                return "not published"
            return "lost" if obj.lost else None

        for (a, relation, b), _ in sorted(state.scene.relations.all().items()):
            why = [f"#{i} is {w}" for i in (a, b) if (w := dead(i)) is not None]
            if why:
                self.add(rule, (a, b), f"relation #{a} {relation} #{b}: " + ", ".join(why))
        for a, relation, b in s.standing:
            why = [f"#{i} is {w}" for i in (a, b) if (w := dead(i)) is not None]
            if why:
                self.add(rule, (a, b), f"the RELATION events leave #{a} {relation} #{b} "
                                       "standing, but " + ", ".join(why))

    def _levels_rooms(self, s: _Scope) -> None:
        state = s.cache
        if state is None:
            return
        objects = state.objects
        derived = sorted(state.scene.relations.all())
        for where, relations in (("", derived), ("the RELATION events say ", s.standing)):
            for a, relation, b in relations:
                if relation in _SUPPORT and a in objects and b in objects \
                        and level_of(objects[a]) == "furniture" \
                        and level_of(objects[b]) == "item":
                    self.add("levels_rooms", (a, b),
                             f"{where}furniture #{a} {objects[a].label!r} is {relation} item "
                             f"#{b} {objects[b].label!r}")
        rooms = state.scene.rooms
        if not rooms.names():
            return
        for oid, obj in sorted(objects.items()):
            if not obj.promoted or obj.lost or oid in state.tombstones:
                continue
            level = level_of(obj)
            if level in OBJECT_LEVELS and rooms.assign(obj.center, obj.size) is None:
                x, y, z = obj.center
                self.warn("levels_rooms", (oid,),
                          f"{level} #{oid} {obj.label!r} at ({x:.2f}, {y:.2f}, {z:.2f}) lies "
                          "outside every room")

    def _cache_matches_log(self, s: _Scope) -> None:
        rule = "cache_matches_log"
        try:
            cache = s.cache.snapshot() if s.cache is not None else load_state(
                self.store, s.name, from_log=False, config=self.config).snapshot()
        except Exception as exc:
            self.add(rule, (), f"the cache does not load: {type(exc).__name__}: {exc}")
            return
        try:
            log = load_state(self.store, s.name, from_log=True, config=self.config).snapshot()
        except Exception as exc:
            record = _failing_record(self.store, s.name, self.config.lost_after_s)
            ids, where = _record_ids(record), _record_text(record)
            self.add(rule, ids, f"the log does not replay{where}: {type(exc).__name__}: {exc}")
            return
        for section, what in (("objects", "object"), ("tombstones", "tombstone"),
                              ("prior", "prior-map entry"), ("keyframes", "keyframes of")):
            for oid, text in _differences(cache[section], log[section]):
                self.add(rule, (int(oid),), f"{what} #{oid} {text}")
        for did, text in _differences(cache["deltas"], log["deltas"]):
            obj = (cache["deltas"].get(did) or log["deltas"].get(did) or {}).get("object")
            self.add(rule, (obj,) if isinstance(obj, int) else (), f"delta {did} {text}")
        for key, text in _differences(cache["rejections"], log["rejections"]):
            self.add(rule, (), f"rejection key {key!r} {text}")
        for section in ("rooms", "now", "feature_dim"):
            if cache[section] != log[section]:
                self.add(rule, (), f"{section}: the cache holds {_short(cache[section])}, "
                                   f"replay {_short(log[section])}")

    def _deltas_valid(self, s: _Scope) -> None:
        problems: dict[int, list[str]] = {}
        for did, oid, status, data in self.q(
                "SELECT id, object_id, status, data FROM deltas WHERE scope = ?", (s.name,)):
            found = problems.setdefault(did, [])
            if status not in DELTA_STATUSES:
                found.append(f"status {status!r}")
            try:
                d = json.loads(data)
            except ValueError:
                found.append("unreadable data")
                continue
            if not isinstance(d, dict):
                found.append("data is not an object")
                continue
            for key, column in (("id", did), ("object", oid), ("status", status)):
                if d.get(key) != column:
                    found.append(f"data {key} {d.get(key)!r} but column {column!r}")
        for seq, data in self.q("SELECT seq, data FROM events WHERE scope = ? AND "
                                "kind = 'DELTA' ORDER BY seq", (s.name,)):
            with contextlib.suppress(ValueError, AttributeError):
                d = json.loads(data)
                if d.get("status") not in DELTA_STATUSES and isinstance(d.get("id"), int):
                    problems.setdefault(d["id"], []).append(
                        f"DELTA event seq {seq} sets status {d.get('status')!r}")
        for did in sorted(problems):
            if problems[did]:
                self.add("deltas_valid", (did,), f"delta {did}: " + "; ".join(problems[did])
                         + f" (statuses are {', '.join(DELTA_STATUSES)})")

    def _keyframes_bounded(self, s: _Scope) -> None:
        problems: dict[int, list[str]] = {}
        for oid, data in self.q("SELECT object_id, data FROM keyframes WHERE scope = ?",
                                (s.name,)):
            kept = _loads(data)
            if not isinstance(kept, list):
                problems.setdefault(oid, []).append("the kept frames are not a list")
            elif len(kept) > N_KEYFRAMES:
                problems.setdefault(oid, []).append(f"{len(kept)} kept frames")
        for seq, oid, data in self.q("SELECT seq, object_id, data FROM events WHERE scope = ? "
                                     "AND kind = 'KEYFRAME' ORDER BY seq", (s.name,)):
            kept = (_loads(data) or {}).get("kept") if data else None
            if isinstance(kept, list) and len(kept) > N_KEYFRAMES:
                problems.setdefault(oid, []).append(
                    f"KEYFRAME event seq {seq} keeps {len(kept)} frames")
        for oid in sorted(problems):
            self.add("keyframes_bounded", (oid,), f"object #{oid}: " + "; ".join(problems[oid])
                     + f" (at most {N_KEYFRAMES})")

    def _checkpoints_valid(self, s: _Scope) -> None:
        rule = "checkpoints_valid"
        compacted = {r[0] for r in self.q(
            "SELECT json_extract(data, '$.horizon_commit') FROM events WHERE scope = ? AND "
            "kind = 'COMPACTED' AND json_valid(data)", (s.name,))}
        for cid, t, blob, c_scope, c_t in self.q(
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
                self.add(rule, (cid,), f"checkpoint at commit {cid}: " + "; ".join(problems))


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


def _out_of_order(conn: sqlite3.Connection, rows: str) -> dict[Any, tuple[int, ...]]:
    """Per partition ``p`` of ``rows`` (k, v, p), the keys ``k`` whose value ``v`` breaks ``v``
    non-decreasing in ``k``: the smaller of the two sets "below an earlier value" and "above
    a later value" — the rows that moved, when one did."""
    window = "PARTITION BY p ORDER BY k ROWS BETWEEN {} AND {}"
    sql = (f"SELECT p, k, v, max(v) OVER ({window.format('UNBOUNDED PRECEDING', '1 PRECEDING')}"
           f") AS before, min(v) OVER ({window.format('1 FOLLOWING', 'UNBOUNDED FOLLOWING')}) "
           f"AS later FROM {rows}")
    below: dict[Any, list[int]] = {}
    above: dict[Any, list[int]] = {}
    for p, k, v, before, later in conn.execute(f"SELECT * FROM ({sql}) WHERE v < before OR "
                                               "v > later ORDER BY p, k"):
        if before is not None and v < before:
            below.setdefault(p, []).append(k)
        if later is not None and v > later:
            above.setdefault(p, []).append(k)
    return {p: tuple(min((below.get(p, []), above.get(p, [])),
                         key=lambda ids: (len(ids) == 0, len(ids))))
            for p in sorted({*below, *above})}


def _ids_text(ids: tuple[int, ...], shown: int = 20) -> str:
    text = ", ".join(str(i) for i in ids[:shown])
    return text + (f", … {len(ids) - shown} more" if len(ids) > shown else "")


def _finite(values: Any) -> bool:
    try:
        return all(math.isfinite(v) for v in values)
    except TypeError:
        return False


def _object_problems(obj: ObjectState) -> list[str]:
    problems = []
    if not isinstance(obj.label, str) or not obj.label.strip():
        problems.append(f"label {obj.label!r}")
    for name in ("center", "place"):
        if not _finite(getattr(obj, name)):
            problems.append(f"{name} {getattr(obj, name)} is not finite")
    for name in ("size", "place_size"):
        value = getattr(obj, name)
        if not _finite(value) or min(value) < 0:
            problems.append(f"{name} {value} is not finite and >= 0")
    if not _finite((obj.first_seen, obj.last_seen)) or obj.first_seen > obj.last_seen:
        problems.append(f"first_seen {obj.first_seen} after last_seen {obj.last_seen}")
    if obj.lost != (obj.lost_at is not None):
        problems.append(f"lost={obj.lost} but lost_at={obj.lost_at}")
    for name in ("n_detections", "n_features", "n_missed"):
        if getattr(obj, name) < 0:
            problems.append(f"{name}={getattr(obj, name)}")
    if not _finite((obj.absence_s,)) or obj.absence_s < 0:
        problems.append(f"absence_s={obj.absence_s}")
    if len(obj.held) > HELD_MAX:
        problems.append(f"{len(obj.held)} held sightings (at most {HELD_MAX})")
    return problems


def _differences(cache: dict[Any, Any], log: dict[Any, Any]) -> list[tuple[Any, str]]:
    out = []
    for key in sorted(set(cache) | set(log), key=lambda k: (str(type(k)), k)):
        if key not in log:
            out.append((key, "is in the cache but not in the replayed log"))
        elif key not in cache:
            out.append((key, "is in the replayed log but not in the cache"))
        elif cache[key] != log[key]:
            a, b = cache[key], log[key]
            if isinstance(a, dict) and isinstance(b, dict):
                fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                detail = "; ".join(f"{f}: cache {_short(a.get(f))}, log {_short(b.get(f))}"
                                   for f in fields[:4])
                out.append((key, f"differs from replay in {', '.join(fields)} ({detail})"))
            else:
                out.append((key, f"differs from replay (cache {_short(a)}, log {_short(b)})"))
    return out


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _loads(data: Any) -> Any:
    try:
        return json.loads(data)
    except (TypeError, ValueError):
        return None


def _failing_record(store: SQLiteStore, scope: str, lost_after_s: float
                    ) -> Commit | Observation | Event | None:
    """The record the replay of ``scope`` fails at (None if it fails elsewhere)."""
    try:
        checkpoint = store.latest_checkpoint(scope)
        state = MemoryState() if checkpoint is None else MemoryState.from_snapshot(
            checkpoint[1], 1.0)
        after = 0 if checkpoint is None else checkpoint[0]
        records = store.iter_log(scope, after_commit=after)
    except Exception:
        return None
    while True:
        try:
            record = next(records)
        except StopIteration:
            return None
        except Exception:  # a row that does not decode
            return None
        try:
            apply(state, record, lost_after_s)
        except Exception:
            return record


def _record_ids(record: Commit | Observation | Event | None) -> tuple[int, ...]:
    if isinstance(record, Observation):
        if record.object_id is not None:
            return (record.object_id,)
        if record.key is not None and record.key.startswith(TOMB_KEY):
            with contextlib.suppress(ValueError):
                return (int(record.key[len(TOMB_KEY):]),)
        return ()
    if isinstance(record, Event):
        ids = [record.object_id] if record.object_id else []
        absorbed = record.data.get("absorbed") if isinstance(record.data, dict) else None
        if record.kind is EventKind.MERGED and isinstance(absorbed, int):
            ids.append(absorbed)
        return tuple(ids)
    if isinstance(record, Commit):
        return tuple(record.missed)
    return ()


def _record_text(record: Commit | Observation | Event | None) -> str:
    if isinstance(record, Observation):
        return f" at observation seq {record.seq}"
    if isinstance(record, Event):
        return f" at {record.kind.value} event seq {record.seq}"
    if isinstance(record, Commit):
        return f" at commit {record.id}"
    return ""
