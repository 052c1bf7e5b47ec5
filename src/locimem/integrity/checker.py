"""One validation run of a store file: the rules' names, the report they fill, and the
:class:`Checker` every rule (:mod:`~locimem.integrity.rules_log`,
:mod:`~locimem.integrity.rules_state`) reads from and reports to. The rules themselves are
documented in :mod:`locimem.interchange.validate`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from locimem.config import TrackerConfig
from locimem.errors import NotFound
from locimem.progress import Progress, Ticker
from locimem.query import base
from locimem.store.sqlite import SQLiteStore
from locimem.tracker.load import load_state as tracker_load_state
from locimem.tracker.state import MemoryState

__all__ = ["COMMIT_KINDS", "DIRECTORY_RULES", "FILE_RULES", "RULES", "SCOPE_RULES", "Checker",
           "Scope", "Stop", "ValidationReport", "Violation", "load_state"]

FILE_RULES = ("sqlite_integrity", "schema_version", "schema_tables", "ids_unique", "log_order",
              "record_kinds")
SCOPE_RULES = ("appeared", "observations_accounted", "confidence_range", "object_fields",
               "parents_exist", "relations_live", "levels_rooms", "cache_matches_log",
               "deltas_valid", "keyframes_bounded", "checkpoints_valid")
RULES: tuple[str, ...] = FILE_RULES + SCOPE_RULES  # a store's rules, in the order checked
DIRECTORY_RULES = ("manifest_checksums", "directory_imports")
# the commit kinds: the ones audit() filters on, and those of the prior map and its deltas
COMMIT_KINDS = base.COMMIT_KINDS
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


def load_state(store: SQLiteStore, scope: str, *, from_log: bool,
               config: TrackerConfig | None = None) -> MemoryState:
    """The state of ``scope`` as a memory would load it: from the materialised cache, or by
    replaying the log from the latest checkpoint. Takes no writer lock and writes nothing."""
    return tracker_load_state(store, scope, config or TrackerConfig(), from_log=from_log)



# -- the checks -------------------------------------------------------------------------------
class Stop(Exception):
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
    checks (:mod:`~locimem.integrity.rules_log`, :mod:`~locimem.integrity.rules_state`)
    are functions of it: they read with :meth:`q`, :meth:`load` and :attr:`store`, and report
    with :meth:`add` and :meth:`warn`."""

    def __init__(self, target: str, conn: sqlite3.Connection,
                 open_store: Callable[[], SQLiteStore], scope: str | None, quick: bool,
                 checks: Mapping[str, Callable[..., None]],
                 progress: Progress | None = None) -> None:
        self.target = target
        self.progress = progress
        self._ticker: Ticker | None = None
        self.conn = conn
        self._open_store = open_store
        self._store: SQLiteStore | None = None
        self.only_scope = scope
        self.quick = quick
        self.checks = checks  # rule name -> its check (locimem.integrity.sqlite)
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
                    self._check(rule, self.checks[rule])
            self.conn = self.store.conn
            with self._read_transaction():
                for rule in FILE_RULES[3:]:
                    self._check(rule, self.checks[rule])
                scopes = self._scopes()
                self.report.scopes = tuple(scopes)
                for name in scopes:
                    self._check_scope(name)
        except Stop:
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
        except Stop:
            raise
        except Exception as exc:  # a check must report, never crash, on a damaged store
            self.add(rule, (), f"could not be checked: {type(exc).__name__}: {exc}")
        if self._ticker is not None:
            self._ticker.tick()
        if rule in FILE_RULES[:3] and len(self.report.violations) > before:
            raise Stop

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
            self._check(rule, self.checks[rule], s)
        self._scope = None
