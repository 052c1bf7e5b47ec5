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
    ``meta`` names the locimem format, schema version :data:`~locimem.store.sqlite.schema.
    SCHEMA_VERSION` and a numeric ``created_at``; ``migrations`` holds exactly the names and
    versions of :data:`~locimem.store.sqlite.schema.MIGRATIONS`, in order. No ids.
``schema_tables``
    Every table, column (name, type, not-null, key) and index (its definition) the migrations
    create is there, and nothing else is: no trigger, view, other table or index, and no table
    defined otherwise (``sqlite_sequence`` and ``sqlite_stat*``, SQLite's own, aside) — "trigger
    'x' is not part of the locimem schema". No ids.
``ids_unique``
    An object id APPEARED once in the file, and every record and row naming it is in that one
    scope; no id is both a live object and a tombstone; no seq is both an observation's and an
    event's (observations and events share one sequence). ids: the object id, or the seq.
``log_order``
    Every observation and event belongs to a commit that exists, is in its commit's scope and
    carries its commit's valid time; seqs increase with commit ids; a scope's commit times
    never go back, and every commit's ``t`` and ``recorded_at`` are within the valid-time
    domain (:data:`~locimem.check.MAX_ABS_TIME_S`). ids: the seqs out of place (the commit
    ids, and the scope, for times).
``record_kinds``
    Commit kinds are :data:`COMMIT_KINDS` (scan, correction, forget, maintenance, scene,
    prior, review, consolidate), and only scans carry detections; event kinds are
    :class:`~locimem.model.EventKind` values; the object-less events (ROOM_DEFINED,
    ROOMS_CONNECTED, ROOM_REMOVED, COMPACTED) name object 0 and the others a positive id. MERGED and
    SPLIT events are in scan, correction or consolidate commits, and in a correction name
    the commit's actor; a MERGED absorbs another object's id. ids: the commit id, or the seq.

Per scope.

``appeared``
    Every object and tombstone has an APPEARED event in its scope, no event about an object
    comes before it, and none in a later commit than the MERGED that absorbed it. ids: the
    object id.
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
    :func:`~locimem.interchange.directory.check_directory` finds nothing wrong: the manifest is
    intact, and every file is there, with its size and SHA-256. No ids.
``directory_imports``
    The directory imports into a new store, which then passes every rule above (checked on a
    scratch copy). No ids.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locimem.config import TrackerConfig
from locimem.errors import NotFound
from locimem.interchange import rules_log, rules_state
from locimem.interchange.rules_state import DELTA_STATUSES
from locimem.progress import Progress, Ticker
from locimem.query import reader
from locimem.store.base import Store, is_postgres_url
from locimem.store.sqlite import MEMORY, SQLiteStore
from locimem.tracker.load import load_state as tracker_load_state
from locimem.tracker.state import MemoryState

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
# the commit kinds: the ones audit() filters on, and those of the prior map and its deltas
COMMIT_KINDS = reader.COMMIT_KINDS
# each rule's check: rules_log holds the file-level and log rules, rules_state the state rules
_CHECKS: dict[str, Callable[..., None]] = {
    check.__name__: check for check in (*rules_log.CHECKS, *rules_state.CHECKS)}
_SYMMETRIC = ("next_to", "near")
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
def validate(target: Store | str | os.PathLike[str], *, scope: str | None = None,
             hmac_key: bytes | None = None, progress: Progress | None = None
             ) -> ValidationReport:
    """Validate a store (an open one, a file or a PostgreSQL URL) or an exported directory
    (with ``hmac_key``, its signature too). ``progress`` (e.g.
    :func:`locimem.progress.progress`) shows a bar over the rules of a store file."""
    if not isinstance(target, (str, os.PathLike)) or is_postgres_url(target):
        return validate_store(target, scope=scope)
    if str(target) != MEMORY and Path(target).is_dir():
        return validate_directory(target, hmac_key=hmac_key)
    return validate_store(target, scope=scope, progress=progress)


def validate_store(store: Store | str | os.PathLike[str], *, scope: str | None = None,
                   quick: bool = False, progress: Progress | None = None) -> ValidationReport:
    """Check every rule (see the module docstring) on ``store``: an open store, checked on its
    own connection, or a path, opened read-only. Every scope in the file, or only ``scope``.
    ``quick`` runs SQLite's ``quick_check`` instead of the full ``integrity_check``.

    Raises:
        NotFound: there is no file at the path, or no ``scope`` in it.
    """
    if is_postgres_url(store) or not isinstance(store, (SQLiteStore, str, os.PathLike)):
        return _validate_server(store, scope)  # type: ignore[arg-type]
    if isinstance(store, SQLiteStore):
        if store.conn is None:
            raise NotFound(f"the store {store.path!r} is closed")
        return Checker(store.path, store.conn, lambda: store, scope, quick, progress).run()
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

    def open_store() -> SQLiteStore:  # (after sqlite_integrity passed: the open's own
        # quick_check would only repeat it)
        opened.append(SQLiteStore(path, read_only=True, check="header"))
        return opened[-1]

    try:
        return Checker(str(path), conn, open_store, scope, quick, progress).run()
    finally:
        for s in opened:
            s.close()
        conn.close()


def _validate_server(store: Store | str, scope: str | None) -> ValidationReport:
    """A server store (PostgreSQL): each scope is copied, as of one commit, into a scratch
    SQLite file (:func:`~locimem.interchange.move.scratch_copy`) and checked there by every
    rule; the server's own integrity is the server's (``sqlite_integrity`` then checks the
    copy). Violations name the scope they were found in."""
    from locimem.interchange.move import open_store, scratch_copy

    opened = open_store(store, read_only=True) if isinstance(store, str) else None
    src = opened if opened is not None else store
    try:
        scopes = src.scopes()  # type: ignore[union-attr]
        if scope is not None:
            if scope not in scopes:
                raise NotFound(f"no scope {scope!r} in {src.path!r}")  # type: ignore[union-attr]
            scopes = [scope]
        report = ValidationReport(src.path)  # type: ignore[union-attr]
        for name in scopes:
            with scratch_copy(src, name) as path:  # type: ignore[arg-type]
                part = validate_store(path, quick=True)
            report.rules = part.rules
            report.violations += part.violations
            report.warnings += part.warnings
        report.scopes = tuple(scopes)
        return report
    finally:
        if opened is not None:
            opened.close()


def load_state(store: SQLiteStore, scope: str, *, from_log: bool,
               config: TrackerConfig | None = None) -> MemoryState:
    """The state of ``scope`` as a memory would load it: from the materialised cache, or by
    replaying the log from the latest checkpoint. Takes no writer lock and writes nothing."""
    return tracker_load_state(store, scope, config or TrackerConfig(), from_log=from_log)


def validate_directory(directory: str | os.PathLike[str], *,
                       hmac_key: bytes | None = None) -> ValidationReport:
    """Check a memory directory (:mod:`locimem.interchange.export`): the manifest and the size
    and SHA-256 of every file (``manifest_checksums``, by
    :func:`~locimem.interchange.directory.check_directory`); then that it imports into a new
    store (``directory_imports``), and that the store it gives passes every rule of
    :func:`validate_store` (their messages say ``as imported``). The scratch store lives in a
    temporary directory and is deleted. A signed directory's signature is checked with
    ``hmac_key`` (a mismatch fails ``directory_imports``); without a key it is not, and a
    warning says so.

    Raises:
        NotFound: ``directory`` is not a directory.
    """
    from locimem.interchange.directory import check_directory, verify_directory
    from locimem.interchange.load import _import_memory

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
            if hmac_key is None and verify_directory(root, check_signature=False).hmac_sha256:
                report.warnings.append(Violation(
                    "directory_imports", (), "the directory is signed (HMAC-SHA256); its "
                    "signature was not checked (no key given)"))
            validated: list[ValidationReport] = []  # the import's own validation (the full
            # one): the store is not validated a second time
            _import_memory(root, copy, scope=None, progress=None, hmac_key=hmac_key,
                           check_signature=hmac_key is not None, validated=validated)
        except Exception as exc:  # whatever stops the import is what is wrong
            report.violations.append(Violation(
                "directory_imports", (), f"it does not import: {type(exc).__name__}: {exc}"))
            return report
        imported = validated[0] if validated else validate_store(copy)
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
class Scope:
    """What several per-scope rules share, computed once (by :meth:`Checker._check_scope`)."""

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


class Checker:
    """One validation run: the connection, the store opened on demand, the report. The rule
    checks (:mod:`~locimem.interchange.rules_log`, :mod:`~locimem.interchange.rules_state`)
    are functions of it: they read with :meth:`q`, :meth:`load` and :attr:`store`, and report
    with :meth:`add` and :meth:`warn`."""

    def __init__(self, target: str, conn: sqlite3.Connection,
                 open_store: Callable[[], SQLiteStore], scope: str | None, quick: bool,
                 progress: Progress | None = None) -> None:
        self.target = target
        self.progress = progress
        self._ticker: Ticker | None = None
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

    def load(self, scope: str, *, from_log: bool) -> MemoryState:
        """:func:`load_state` of ``scope`` in the store, with the checker's config."""
        return load_state(self.store, scope, from_log=from_log, config=self.config)

    def run(self) -> ValidationReport:
        self._ticker = Ticker(self.progress, None, "validating")  # one tick a rule checked
        try:
            with self._read_transaction():
                for rule in FILE_RULES[:3]:  # on the file as it is, before opening it as a store
                    self._check(rule, _CHECKS[rule])
            self.conn = self.store.conn
            with self._read_transaction():
                for rule in FILE_RULES[3:]:
                    self._check(rule, _CHECKS[rule])
                scopes = self._scopes()
                self.report.scopes = tuple(scopes)
                for name in scopes:
                    self._check_scope(name)
        except _Stop:
            pass
        finally:
            self._ticker.close()
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
            check(self, *args)
        except _Stop:
            raise
        except Exception as exc:  # a check must report, never crash, on a damaged store
            self.add(rule, (), f"could not be checked: {type(exc).__name__}: {exc}")
        if self._ticker is not None:
            self._ticker.tick()
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

    # -- per scope ----------------------------------------------------------------------------
    def _check_scope(self, name: str) -> None:
        self._scope = name
        s = Scope(name)
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
            s.cache = self.load(name, from_log=False)
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
            self._check(rule, _CHECKS[rule], s)
        self._scope = None
