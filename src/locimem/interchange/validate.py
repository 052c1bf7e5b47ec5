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
    ...     report = validate(mem)
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
    :class:`~locimem.model.EventKind` values; the object-less events
    (:data:`~locimem.model.OBJECTLESS_KINDS`: COMPACTED, the room and the map-epoch kinds)
    name object 0 and the others a positive id. MERGED and SPLIT events are in scan,
    correction or consolidate commits, and in a correction name the commit's actor; a
    MERGED absorbs another object's id. ids: the commit id, or the seq.

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

import os
import tempfile
from pathlib import Path

from locimem.errors import NotFound
from locimem.integrity.checker import (
    COMMIT_KINDS,
    DIRECTORY_RULES,
    FILE_RULES,
    RULES,
    SCOPE_RULES,
    ValidationReport,
    Violation,
    load_state,
)
from locimem.integrity.rules_state import DELTA_STATUSES
from locimem.interchange.directory import check_directory, verify_directory
from locimem.interchange.load import _import_memory
from locimem.interchange.store_check import validate_store
from locimem.memory import ObjectMemory, reader_of
from locimem.progress import Progress
from locimem.store.base import Store, is_postgres_url
from locimem.store.sqlite import MEMORY

__all__ = [
    "COMMIT_KINDS",
    "DELTA_STATUSES",
    "FILE_RULES",
    "RULES",
    "SCOPE_RULES",
    "ValidationReport",
    "Violation",
    "load_state",
    "validate",
    "validate_directory",
    "validate_store",
]


def validate(target: ObjectMemory | Store | str | os.PathLike[str], *,
             scope: str | None = None, hmac_key: bytes | None = None,
             progress: Progress | None = None) -> ValidationReport:
    """Validate a store (an open memory's, an open one, a file or a PostgreSQL URL) or an
    exported directory (with ``hmac_key``, its signature too). ``progress`` (e.g.
    :func:`locimem.progress.progress`) shows a bar over the rules of a store file."""
    if isinstance(target, ObjectMemory):
        target = reader_of(target).store
    if not isinstance(target, (str, os.PathLike)) or is_postgres_url(target):
        return validate_store(target, scope=scope)
    if str(target) != MEMORY and Path(target).is_dir():
        return validate_directory(target, hmac_key=hmac_key)
    return validate_store(target, scope=scope, progress=progress)


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


