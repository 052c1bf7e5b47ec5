"""Tracker thresholds, validated once, with the published design's defaults.

The record never depends on these values: observations carry the weight they were applied with
and events carry the state they set, so replaying a store under another config rebuilds exactly
the same memory. The config only shapes *new* decisions and how beliefs are read.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from locimem.check import check_float, check_int
from locimem.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class RelationConfig:
    """Thresholds of the relation predicates (metres and fractions).

    ``report_delta`` is how much a confidence must move for :class:`RelationIndex` to report
    it as ``changed`` (the stored confidence always follows the geometry exactly).
    """

    on_gap_m: float = 0.05
    on_min_overlap: float = 0.3
    under_clearance_m: float = 0.1
    under_max_gap_m: float = 1.0
    under_min_overlap: float = 0.3
    in_min_fraction: float = 0.6
    support_tol_m: float = 0.1
    next_to_gap_m: float = 0.3
    next_to_max_overlap: float = 0.5
    near_m: float = 1.0
    report_delta: float = 0.1

    def __post_init__(self) -> None:
        for name in ("on_gap_m", "under_clearance_m", "under_max_gap_m", "support_tol_m",
                     "next_to_gap_m", "near_m"):
            value = check_float(getattr(self, name), name)
            if value <= 0.0:
                raise InvalidInput(f"{name} must be > 0 metres, got {value}")
            object.__setattr__(self, name, value)
        for name in ("on_min_overlap", "under_min_overlap", "in_min_fraction",
                     "next_to_max_overlap"):
            value = check_float(getattr(self, name), name)
            if not 0.0 < value <= 1.0:
                raise InvalidInput(f"{name} must be a fraction in (0, 1], got {value}")
            object.__setattr__(self, name, value)
        value = check_float(self.report_delta, "report_delta")
        if not 0.0 <= value <= 1.0:
            raise InvalidInput(f"report_delta must be in [0, 1], got {value}")
        object.__setattr__(self, "report_delta", value)

    @property
    def reach_xy_m(self) -> float:
        """How far (horizontally) beyond its box an object can relate to another."""
        return max(self.next_to_gap_m, self.on_gap_m)

    @property
    def reach_z_m(self) -> float:
        """How far (vertically) beyond its box an object can relate to another."""
        return max(self.under_max_gap_m, self.on_gap_m, self.support_tol_m)



_INTS = {"promote_after", "revive_after", "doubt_after_misses", "move_confirm_after",
         "promote_after_camera", "delta_confirm_after", "keyframes_kept",
         "appearance_approximate_above", "lost_min_sightings", "appearance_unsure_max"}
_ZERO_OK = {"appearance_unsure_max"}
_OPTIONAL = {"human_label_weight", "revive_after", "appearance_approximate_above"}
_NESTED = {"relations": RelationConfig}


@dataclass(frozen=True, slots=True)
class TrackerConfig:
    """Association, belief and lifecycle thresholds.

    Association is one assignment problem per scan (one detection per object, one object per
    detection). The tiers say which pairs are allowed, and name how a detection was matched:

    1. *track*: the detection carries the perception ``track_id`` the object last had, and lies
       within ``drift_radius_m`` of it.
    2. *tight*: a live object within ``tight_radius_m``, whatever its label.
    3. *drift*: a live object within ``drift_radius_m`` whose voted label is the detection's,
       or whose embedding is the clear best match (cosine >= ``feature_match_min``, plus
       ``feature_label_strict`` when the labels disagree, and ``feature_margin`` above the
       second-best candidate). Both having embeddings, a cosine below ``feature_match_min``
       rules a drift or re-acquisition pair out.
    4. *reacquire*: an object lost at most ``reacquire_window_s`` ago (or, when both carry
       embeddings with cosine >= ``feature_match_min``, ``feature_reacquire_window_s`` ago),
       within ``drift_radius_m`` and with the same voted label (or within ``tight_radius_m``).
    5. *appearance*: a detection left unmatched whose embedding picks out one object anywhere
       (cosine >= ``feature_match_min + feature_label_strict``, ``feature_margin`` above every
       other object — twice that when the detection's label is one the object was never seen
       under).

    A low cosine (below ``feature_match_min``) does not rule out a same-label object within
    half the tight radius (one thing seen again, whatever a noisy embedding says), but does
    beyond it: a look-alike neighbour 10-20 cm away is another thing — and so, even within
    it, is one whose cosine is below ``feature_unlike_max`` (0.5: nearer orthogonal than
    alike).

    Moves nobody watched: an identity whose place was found empty (doubted, or lost at most
    ``relocate_window_s`` ago) and a new identity with its label elsewhere, first seen after
    it was last seen and never beside it, are one object that moved when no other candidate
    of that label is unaccounted for (embeddings pick among several; with embeddings on both
    sides the one taken must have a cosine of at least ``feature_match_min +
    feature_label_strict``, else it is another thing): MERGED and MOVED. With
    embeddings, the old place need not have been looked at: a new identity that settles
    with an embedding picking out an unseen object of its label elsewhere (as the
    *appearance* tier reads a detection's) is that object, moved. Such a move, told by looks
    alone, is remembered (``moved_from``): a sighting back at the place it came from is
    another thing of that make, with an identity of its own, not the object moving back.

    Promotion: at the ``promote_after``-th detection; a detection in a scan that came with a
    camera promotes at ``promote_after_camera`` once the detections' summed confidence reaches
    ``promote_camera_min_mass`` (with see-through evidence a wrong publication is withdrawn
    after a few looks, so less corroboration is needed up front — but three weak detections
    at one place are not yet a thing); and a detection at or above ``promote_confidence`` in a
    scan with a camera promotes at once (a detector that sure is rarely wrong, and the memory
    should not wait for a second look the robot may not take for minutes; above 1: never).

    Detections at or above ``new_object_min_confidence`` are matched first; the others
    (ByteTrack's second pass) only to live objects left unmatched, and never create one: by
    place, or, for the ``appearance_unsure_max`` most confident of them with an embedding, by
    a clear likeness anywhere (the *appearance* tier over live objects; each such search is
    one product over every object's embedding, about 1 ms at 100k objects of 128-d, so their
    number a scan is bounded; 0: none).

    Position: a constant-position Kalman filter. A sighting's noise is ``position_sigma_m``
    plus ``position_sigma_per_m`` per metre from the camera; the estimate tightens with every
    sighting (its information capped at ``position_info_max`` sightings, so a slow drift is
    still followed), and a sighting beyond three standard deviations of the innovation takes
    at least ``position_alpha`` (something nudged it). A far sighting (beyond the tight
    radius) of a promoted object is *held* (weight
    0: it refreshes the object without moving it) when it is suspect — its box is more than
    ``suspect_size_ratio`` times the object's size, a live object with the same label is
    nearer to it, or the scan has a camera that had the object's place in view and did not see
    it empty.
    ``move_confirm_after`` consistent held sightings (within half the tight radius of each
    other) within ``held_window_s`` confirm a move
    (or, when the object was also seen at its place meanwhile, split off a new identity).

    Belief: ``confidence = exp(-A / tau_s - U / tau_unseen_s)``, with ``A`` the evidence of
    absence since the last sighting (in seconds of ``tau_s``) and ``U`` the rest of the time.
    Without a camera every second counts as absence (``A = t - last_seen``). With one,
    ``exp(-A / tau_s)`` is the existence probability of a Bernoulli filter: each scan whose
    camera had the object's place in view, not hidden, and did not detect it multiplies the odds
    by ``1 - p`` (docs/architecture.md, "Belief"), ``p`` being the object's probability of
    detection — learned from its own looks (Beta prior ``pd_prior`` with ``pd_prior_weight``
    pseudo-looks), capped at ``pd_max``, and reduced when only part of the place was visible,
    beyond ``range_edge`` of the range, or when the object subtends less than
    ``small_angle_deg``. A place the depth image sees through (empty) multiplies the odds by
    ``empty_likelihood`` besides, as far as its box surely lies on the object (its position
    uncertainty against its smallest half-extent). Depth readings are compared with a
    tolerance of ``depth_noise_m + depth_noise_per_m * range`` (``see_through_m``: how far
    beyond its middle a surface must be for the place to read empty). A sighting restores
    existence — read as 1 until the next miss — to log-odds of ``evidence_per_sighting`` per
    sighting so far (times the sightings' mean confidence over ``promote_confidence``, at most
    1: unsure sightings are less evidence), up to ``existence_max``. Published (``confirmed``)
    when promoted and confidence >= ``publish_min``; ``lost`` once ``exp(-A / tau_s)`` falls
    below ``lost_below`` (out-of-view time alone never loses an object) — except that a promoted
    object the camera has seen in fewer than ``lost_min_sightings`` scans is only doubted by
    looks that missed it, unless one saw its place through (its box, from so few sightings, may
    not be where it stands, so a look "at" it may not have been). Publication is quicker to go
    than existence: a published object is withdrawn (``doubted``) once
    ``doubt_after_misses`` or more looks since its last sighting have multiplied the odds of
    its existence by less than ``withdraw_ratio`` (0.003: two plain misses of a thing detected
    95 % of the time; 0: never), though it is lost only at ``lost_below`` (a status only: the
    tracker's own rules read doubted as below ``publish_min``). Every object that is not lost
    is matchable, and a lost one stays re-acquirable for the window. A tentative object that
    would be lost is ``EXPIRED`` instead.

    Duplicates: two live identities with the same voted label whose boxes overlap by at least
    ``merge_min_iou`` (3D IoU), never seen together in one scan, are merged into the older.

    Governance: a person's ``relabel`` pins the label (the detector's votes are kept but do not
    overturn it) when ``human_label_weight`` is None, or adds that much label mass otherwise.
    A forgotten object seen again is suppressed; with ``revive_after`` = N, the N-th suppressed
    sighting revives it instead. An object the camera looked at and missed
    ``doubt_after_misses`` times in a row and is no longer confident enough to publish is
    ``doubted``.

    Prior map (see :meth:`ObjectMemory.load_prior`): an object settled more than
    ``delta_move_m`` from its prior place opens a ``moved`` delta, a box more than
    ``delta_size_ratio`` times larger or smaller on any axis a ``geometry`` one; a delta is
    confirmed after ``delta_confirm_after`` supporting sightings (or looks that missed it).
    Keyframes: up to ``keyframes_kept`` frames per object are kept as evidence.

    Relations (on, in, under, next_to, near): the thresholds of their geometric predicates,
    ``relations`` (a :class:`~locimem.scene.relations.RelationConfig`).

    >>> TrackerConfig(relations=RelationConfig(on_gap_m=0.08)).relations.on_gap_m
    0.08
    """

    tight_radius_m: float = 0.2
    drift_radius_m: float = 1.0
    promote_after: int = 6
    tau_s: float = 15.0
    publish_min: float = 0.5
    lost_below: float = 0.1
    reacquire_window_s: float = 60.0
    relocate_window_s: float = 3600.0
    feature_reacquire_window_s: float = 3600.0
    feature_match_min: float = 0.8
    min_detection_confidence: float = 0.05
    position_alpha: float = 0.3
    position_sigma_m: float = 0.02
    position_sigma_per_m: float = 0.01
    position_info_max: float = 50.0
    human_label_weight: float | None = None
    revive_after: int | None = None
    doubt_after_misses: int = 2
    new_object_min_confidence: float = 0.5
    promote_after_camera: int = 3
    tau_unseen_s: float = 28800.0
    see_through_m: float = 0.01
    pd_prior: float = 0.8
    pd_prior_weight: float = 5.0
    pd_max: float = 0.95
    empty_likelihood: float = 0.1
    existence_max: float = 0.9999
    evidence_per_sighting: float = 2.5
    promote_camera_min_mass: float = 1.8
    promote_confidence: float = 0.7
    lost_min_sightings: int = 2
    withdraw_ratio: float = 0.003
    depth_noise_m: float = 0.01
    depth_noise_per_m: float = 0.005
    range_edge: float = 0.8
    small_angle_deg: float = 2.0
    move_confirm_after: int = 3
    held_window_s: float = 30.0
    suspect_size_ratio: float = 2.0
    merge_min_iou: float = 0.25
    feature_margin: float = 0.1
    feature_label_strict: float = 0.1
    feature_unlike_max: float = 0.5
    delta_move_m: float = 0.5
    delta_size_ratio: float = 1.5
    delta_confirm_after: int = 3
    keyframes_kept: int = 5
    # rows above which the appearance tier takes its candidates from an approximate usearch
    # graph (the vectors extra); None: always exact (see docs/architecture.md, Performance)
    appearance_approximate_above: int | None = None
    appearance_unsure_max: int = 2
    relations: RelationConfig = field(default_factory=RelationConfig)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _NESTED:
                if not isinstance(value, _NESTED[f.name]):
                    raise InvalidInput(f"{f.name} must be a {_NESTED[f.name].__name__}, got "
                                       f"{type(value).__name__}")
                continue
            if f.name in _OPTIONAL and value is None:
                continue
            if f.name in _INTS:
                object.__setattr__(self, f.name, check_int(
                    value, f.name, lo=0 if f.name in _ZERO_OK else 1, hi=1_000_000))
            else:
                object.__setattr__(self, f.name, check_float(value, f.name))
        if self.human_label_weight is not None and self.human_label_weight <= 0:
            raise InvalidInput(f"human_label_weight must be > 0 or None, "
                               f"got {self.human_label_weight}")
        positive = ("tight_radius_m", "drift_radius_m", "tau_s", "position_alpha",
                    "tau_unseen_s", "suspect_size_ratio", "delta_move_m", "position_sigma_m",
                    "position_info_max")
        for name in positive:
            if getattr(self, name) <= 0:
                raise InvalidInput(f"{name} must be > 0, got {getattr(self, name)}")
        if self.delta_size_ratio <= 1.0:
            raise InvalidInput(f"delta_size_ratio must be > 1, got {self.delta_size_ratio}")
        if self.tight_radius_m > self.drift_radius_m:
            raise InvalidInput(
                f"tight_radius_m ({self.tight_radius_m}) must not exceed "
                f"drift_radius_m ({self.drift_radius_m})"
            )
        if not 0.0 < self.lost_below < self.publish_min <= 1.0:
            raise InvalidInput(
                "thresholds must satisfy 0 < lost_below < publish_min <= 1, got "
                f"lost_below={self.lost_below}, publish_min={self.publish_min}"
            )
        for name in ("reacquire_window_s", "feature_reacquire_window_s", "relocate_window_s",
                     "see_through_m",
                     "held_window_s", "depth_noise_m", "depth_noise_per_m", "small_angle_deg",
                     "pd_prior_weight", "position_sigma_per_m", "evidence_per_sighting",
                     "promote_camera_min_mass", "promote_confidence"):
            if getattr(self, name) < 0:
                raise InvalidInput(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("pd_prior", "pd_max", "existence_max", "range_edge",
                     "empty_likelihood"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise InvalidInput(f"{name} must be in (0, 1), got {getattr(self, name)}")
        for name in ("feature_match_min", "min_detection_confidence", "position_alpha",
                     "new_object_min_confidence", "merge_min_iou", "feature_margin",
                     "feature_label_strict", "feature_unlike_max", "withdraw_ratio"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise InvalidInput(f"{name} must be in [0, 1], got {getattr(self, name)}")

    @property
    def lost_after_s(self) -> float:
        """Seconds without a detection after which belief falls below ``lost_below``."""
        return self.tau_s * math.log(1.0 / self.lost_below)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrackerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInput(f"unknown TrackerConfig field(s): {', '.join(unknown)}")
        data = dict(data)
        for name, kind in _NESTED.items():
            if isinstance(data.get(name), dict):
                try:
                    data[name] = kind(**data[name])
                except TypeError as exc:
                    raise InvalidInput(f"{name}: {exc}") from None
        return cls(**data)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> TrackerConfig:
        """Read a config from a TOML file: a ``[tracker]`` table of :class:`TrackerConfig`
        fields and a ``[relations]`` table of :class:`RelationConfig` fields, both optional;
        what is left out keeps its default. The same file may hold an ``[encoder]`` table,
        read by :func:`locimem.query.encoder.encoder_from_toml`, and a ``[store]`` table,
        read by :func:`store_settings_from_toml`. (``tomllib`` on Python
        3.11+; on 3.10 the ``tomli`` package, the ``toml`` extra.)

        Raises :class:`InvalidInput` naming the file and, where it applies, the table and the
        setting: a file that cannot be read or is not TOML, an unknown table or setting, a
        value of the wrong type or out of range.

        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "robot.toml"
        >>> _ = path.write_text("[tracker]\\ntau_s = 20.0\\n[relations]\\non_gap_m = 0.08\\n")
        >>> config = TrackerConfig.from_toml(path)
        >>> config.tau_s, config.relations.on_gap_m, config.promote_after
        (20.0, 0.08, 6)
        """
        name = os.fspath(path)
        data = read_toml(name)
        unknown = sorted(set(data) - {"tracker", "relations", "encoder", "store"})
        if unknown:
            raise InvalidInput(f"{name}: unknown table(s) {', '.join(unknown)} (a config has "
                               "[tracker], [relations], [encoder] and [store])")
        tables: dict[str, dict[str, Any]] = {}
        for table, kind in (("tracker", cls), ("relations", RelationConfig)):
            values = data.get(table, {})
            if not isinstance(values, dict):
                raise InvalidInput(f"{name}: {table} must be a table ([{table}]), got a "
                                   f"{type(values).__name__}")
            known = {f.name for f in fields(kind)} - set(_NESTED)
            extra = sorted(set(values) - known)
            if extra:
                raise InvalidInput(f"{name}: [{table}] has no setting {extra[0]!r} (known: "
                                   f"{', '.join(sorted(known))})")
            tables[table] = values
        try:
            relations = RelationConfig(**tables["relations"])
        except InvalidInput as exc:
            raise InvalidInput(f"{name}: [relations] {exc}") from None
        try:
            return cls(**tables["tracker"], relations=relations)
        except InvalidInput as exc:
            raise InvalidInput(f"{name}: [tracker] {exc}") from None


STORE_SETTINGS = {"late_s": "seconds a scan may trail another source's latest scan "
                            "(the store's late-scan tolerance; see ObjectMemory.open)"}


def store_settings_from_toml(path: str | os.PathLike[str]) -> dict[str, float]:
    """A config file's ``[store]`` table: settings of the store a command opens
    (:data:`STORE_SETTINGS`), as keyword arguments for :meth:`ObjectMemory.open`.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "fleet.toml"
    >>> _ = path.write_text("[store]\\nlate_s = 3\\n")
    >>> store_settings_from_toml(path)
    {'late_s': 3.0}
    """
    name = os.fspath(path)
    values = read_toml(name).get("store", {})
    if not isinstance(values, dict):
        raise InvalidInput(f"{name}: store must be a table ([store]), got a "
                           f"{type(values).__name__}")
    extra = sorted(set(values) - set(STORE_SETTINGS))
    if extra:
        raise InvalidInput(f"{name}: [store] has no setting {extra[0]!r} (known: "
                           f"{', '.join(sorted(STORE_SETTINGS))})")
    out: dict[str, float] = {}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise InvalidInput(f"{name}: [store] {key} must be a number of seconds >= 0, got "
                               f"{value!r}")
        out[key] = float(value)
    return out


def read_toml(name: str) -> dict[str, Any]:
    """A TOML file's tables (tomllib, else tomli on Python 3.10)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise InvalidInput("reading a TOML config on Python 3.10 needs tomli: "
                               "pip install 'locimem[toml]'") from None
    try:
        with open(name, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise InvalidInput(f"cannot read the config {name!r}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{name} is not valid TOML: {exc}") from None
