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

import numpy as np

from locimem.check import check_float
from locimem.errors import InvalidInput
from locimem.files import MIB, read_regular


# -- knobs: each declared once, beside its field -----------------------------------------------
@dataclass(frozen=True, slots=True)
class Knob:
    """What a setting may be: a closed range ``[lo, hi]`` in ``unit``, and one line of doc.

    The ranges keep the arithmetic the tracker does with a setting finite (divisions, logs,
    exponentials and squares of it and of positions within ``MAX_ABS_COORD_M``): validation,
    its error messages and docs/configuration.md's table of settings all come from these
    declarations.
    """

    lo: float
    hi: float
    unit: str
    doc: str

    def range_text(self) -> str:
        """``[0.001, 10] m``: the range as messages and docs show it."""
        unit = f" {self.unit}" if self.unit else ""
        return f"[{number_text(self.lo)}, {number_text(self.hi)}]{unit}"


def number_text(x: float) -> str:
    """A bound as people write it: ``0.001``, ``10``, ``1e6``."""
    return f"{x:.6g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def knob(default: Any, lo: float, hi: float, unit: str, doc: str) -> Any:
    """A config field with its :class:`Knob` (``field(metadata={"knob": ...})``)."""
    return field(default=default, metadata={"knob": Knob(lo, hi, unit, doc)})


def knobs(kind: type) -> list[tuple[str, str, Any, Knob]]:
    """``(name, type, default, knob)`` of every declared setting of a config dataclass."""
    return [(f.name, str(f.type), f.default, f.metadata["knob"]) for f in fields(kind)
            if "knob" in f.metadata]


def _check_knobs(config: Any) -> None:
    """Validate (and normalise: ints stay ints, numbers become floats) every declared
    setting of ``config`` against its knob; raises :class:`InvalidInput` naming the setting,
    the value and the range."""
    for name, kind, _, spec in knobs(type(config)):
        value = getattr(config, name)
        if value is None and "None" in kind:
            continue
        if kind.startswith("int"):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InvalidInput(f"{name} must be an integer, got {value!r}")
            out: float = int(value)
        else:
            out = check_float(value, name) + 0.0  # -0.0 is 0.0
        if not spec.lo <= out <= spec.hi:
            shown = value if isinstance(value, (int, float)) else out
            raise InvalidInput(f"{name} = {shown!r} is out of range: must be within "
                               f"{spec.range_text()}")
        object.__setattr__(config, name, out)


@dataclass(frozen=True, slots=True)
class RelationConfig:
    """Thresholds of the relation predicates (metres and fractions).

    ``report_delta`` is how much a confidence must move for :class:`RelationIndex` to report
    it as ``changed`` (the stored confidence always follows the geometry exactly).
    """

    on_gap_m: float = knob(0.05, 0.001, 10.0, "m", "a box at most this far above or into "
                           "another's top is on it")
    on_min_overlap: float = knob(0.3, 1e-9, 1.0, "", "share of its footprint over the other's "
                                 "top for on")
    under_clearance_m: float = knob(0.1, 0.001, 10.0, "m", "a box this far below a surface's "
                                    "top is sheltered under it")
    under_max_gap_m: float = knob(1.0, 0.001, 100.0, "m", "the highest gap below a box for "
                                  "under")
    under_min_overlap: float = knob(0.3, 1e-9, 1.0, "", "share of its footprint beneath the "
                                    "other for under")
    in_min_fraction: float = knob(0.6, 1e-9, 1.0, "", "share of its volume inside the other "
                                  "for in")
    support_tol_m: float = knob(0.1, 0.001, 10.0, "m", "bottoms within this stand on one "
                                "level (next_to)")
    next_to_gap_m: float = knob(0.3, 0.001, 10.0, "m", "the widest gap between boxes for "
                                "next_to")
    next_to_max_overlap: float = knob(0.5, 1e-9, 1.0, "", "the most footprint overlap for "
                                      "next_to")
    near_m: float = knob(1.0, 0.001, 100.0, "m", "centres closer than this are near")
    report_delta: float = knob(0.1, 0.0, 1.0, "", "confidence change reported as changed")

    def __post_init__(self) -> None:
        _check_knobs(self)

    @property
    def reach_xy_m(self) -> float:
        """How far (horizontally) beyond its box an object can relate to another."""
        return max(self.next_to_gap_m, self.on_gap_m)

    @property
    def reach_z_m(self) -> float:
        """How far (vertically) beyond its box an object can relate to another."""
        return max(self.under_max_gap_m, self.on_gap_m, self.support_tol_m)



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

    # Each range keeps the arithmetic finite: e.g. tau_s divides times and multiplies logs,
    # position_sigma_m is squared, pd_prior_weight divides, existence_max is a log-odds.
    tight_radius_m: float = knob(0.2, 0.001, 10.0, "m", "any live object this near matches "
                                 "(the tight tier)")
    drift_radius_m: float = knob(1.0, 0.001, 100.0, "m", "a same-label object this near "
                                 "matches (the drift tier; the grid's cell)")
    promote_after: int = knob(6, 1, 10_000, "sightings", "detections that promote an object")
    tau_s: float = knob(15.0, 0.001, 1e6, "s", "seconds of evidence of absence per e-fold "
                        "of belief")
    publish_min: float = knob(0.5, 0.001, 1.0, "", "the confidence a promoted object is "
                              "published at")
    lost_below: float = knob(0.1, 1e-6, 0.999, "", "an existence below this is lost")
    reacquire_window_s: float = knob(60.0, 0.0, 1e9, "s", "a lost object is re-acquirable "
                                     "this long")
    relocate_window_s: float = knob(3600.0, 0.0, 1e9, "s", "a lost object may be found moved "
                                    "this long")
    feature_reacquire_window_s: float = knob(3600.0, 0.0, 1e9, "s", "re-acquisition window "
                                             "for a matching embedding")
    feature_match_min: float = knob(0.8, 0.0, 1.0, "cosine", "embeddings at least this alike "
                                    "match")
    min_detection_confidence: float = knob(0.05, 0.0, 1.0, "", "detections below this are "
                                           "ignored")
    position_alpha: float = knob(0.3, 0.001, 1.0, "", "the least step toward an outlying "
                                 "sighting")
    position_sigma_m: float = knob(0.02, 1e-4, 10.0, "m", "a sighting's position noise")
    position_sigma_per_m: float = knob(0.01, 0.0, 1.0, "m/m", "more noise per metre from the "
                                       "camera")
    position_info_max: float = knob(50.0, 1.0, 1e6, "sightings", "the position estimate's "
                                    "information cap")
    human_label_weight: float | None = knob(None, 0.01, 1e6, "", "a relabel's label mass "
                                            "(None: it pins the label)")
    revive_after: int | None = knob(None, 1, 1_000_000, "sightings", "suppressed sightings "
                                    "that revive a forgotten object (None: never)")
    doubt_after_misses: int = knob(2, 1, 10_000, "looks", "misses before a published object "
                                   "can be doubted")
    new_object_min_confidence: float = knob(0.5, 0.0, 1.0, "", "the confidence that may "
                                            "create an object")
    promote_after_camera: int = knob(3, 1, 10_000, "sightings", "detections that promote with "
                                     "a camera")
    tau_unseen_s: float = knob(28800.0, 0.001, 1e9, "s", "seconds out of view per e-fold of "
                               "belief")
    see_through_m: float = knob(0.01, 0.0, 10.0, "m", "depth beyond a place's middle that "
                                "reads it empty")
    pd_prior: float = knob(0.8, 0.01, 0.99, "", "the prior probability of detection")
    pd_prior_weight: float = knob(5.0, 0.1, 1e6, "looks", "the prior's pseudo-looks")
    pd_max: float = knob(0.95, 0.01, 0.999, "", "the learned probability of detection's cap")
    empty_likelihood: float = knob(0.1, 0.001, 1.0, "", "odds factor of a place seen "
                                   "through")
    existence_max: float = knob(0.9999, 0.5, 0.999999, "", "the existence sightings restore, "
                                "at most")
    evidence_per_sighting: float = knob(2.5, 0.0, 100.0, "log-odds", "existence evidence of "
                                        "one sighting")
    promote_camera_min_mass: float = knob(1.8, 0.0, 1e6, "", "summed confidence an early "
                                          "promotion needs")
    promote_confidence: float = knob(0.7, 0.01, 10.0, "", "a detection this sure promotes at "
                                     "once (above 1: never)")
    lost_min_sightings: int = knob(2, 1, 10_000, "sightings", "camera sightings before misses "
                                   "can lose an object")
    withdraw_ratio: float = knob(0.003, 0.0, 1.0, "", "odds fall that withdraws publication "
                                 "(0: never)")
    depth_noise_m: float = knob(0.01, 0.0, 10.0, "m", "depth tolerance")
    depth_noise_per_m: float = knob(0.005, 0.0, 1.0, "m/m", "more depth tolerance per metre")
    range_edge: float = knob(0.8, 0.01, 0.99, "", "share of the range where detection starts "
                             "to fall off")
    small_angle_deg: float = knob(2.0, 0.0, 90.0, "deg", "objects subtending less are "
                                  "detected less")
    move_confirm_after: int = knob(3, 2, 10_000, "sightings", "held sightings that confirm a "
                                   "move")
    held_window_s: float = knob(30.0, 0.0, 1e9, "s", "held sightings count this long")
    suspect_size_ratio: float = knob(2.0, 0.01, 1e4, "", "a box this much larger is suspect")
    merge_min_iou: float = knob(0.25, 0.0, 1.0, "IoU", "overlap that merges duplicates")
    feature_margin: float = knob(0.1, 0.0, 1.0, "cosine", "lead over the second-best "
                                 "embedding")
    feature_label_strict: float = knob(0.1, 0.0, 1.0, "cosine", "more likeness when labels "
                                       "differ")
    feature_unlike_max: float = knob(0.5, 0.0, 1.0, "cosine", "below this, even a near "
                                     "object is another thing")
    delta_move_m: float = knob(0.5, 0.001, 1000.0, "m", "a prior object this far off opens "
                               "a moved delta")
    delta_size_ratio: float = knob(1.5, 1.001, 1e4, "", "a box this much larger or smaller "
                                   "opens a geometry delta")
    delta_confirm_after: int = knob(3, 1, 10_000, "sightings", "support that confirms a "
                                    "delta")
    keyframes_kept: int = knob(5, 1, 1000, "frames", "keyframes kept per object")
    appearance_approximate_above: int | None = knob(
        None, 1, 1_000_000_000, "objects", "rows above which the appearance tier searches an "
        "approximate usearch graph (the vectors extra; None: always exact)")
    appearance_unsure_max: int = knob(2, 0, 1000, "detections", "unsure detections searched "
                                      "by likeness a scan (0: none)")
    relations: RelationConfig = field(default_factory=RelationConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.relations, RelationConfig):
            raise InvalidInput(f"relations must be a RelationConfig, got "
                               f"{type(self.relations).__name__}")
        _check_knobs(self)
        if self.tight_radius_m > self.drift_radius_m:
            raise InvalidInput(
                f"tight_radius_m ({self.tight_radius_m}) must not exceed "
                f"drift_radius_m ({self.drift_radius_m})"
            )
        if not self.lost_below < self.publish_min:
            raise InvalidInput(
                "lost_below must be below publish_min, got "
                f"lost_below={self.lost_below}, publish_min={self.publish_min}"
            )

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
        read by :func:`locimem.language.encoder.encoder_from_toml`, and a ``[store]`` table,
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


def settings_table() -> str:
    """docs/configuration.md's table of settings, made from the declarations: one row per setting of
    ``[tracker]`` and ``[relations]`` with its default, range and meaning."""
    rows = ["| table | setting | default | range | meaning |", "|---|---|---|---|---|"]
    for table, kind in (("tracker", TrackerConfig), ("relations", RelationConfig)):
        for name, _, default, spec in knobs(kind):
            shown = "none" if default is None else number_text(default)
            rows.append(f"| {table} | `{name}` | {shown} | {spec.range_text()} | {spec.doc} |")
    return "\n".join(rows) + "\n"


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


MAX_CONFIG_BYTES = MIB
"""The largest config file read (a config is a few hundred bytes)."""


def read_toml(name: str) -> dict[str, Any]:
    """A TOML file's tables (tomllib, else tomli on Python 3.10): a regular file of at most
    :data:`MAX_CONFIG_BYTES` of UTF-8; anything else is :class:`InvalidInput` naming it."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise InvalidInput("reading a TOML config on Python 3.10 needs tomli: "
                               "pip install 'locimem[toml]'") from None
    try:
        raw = read_regular(name, "the config", MAX_CONFIG_BYTES,
                           f"expected a TOML file of at most {MAX_CONFIG_BYTES // MIB} MiB")
    except OSError as exc:
        raise InvalidInput(f"cannot read the config {name!r}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name} is not UTF-8 text (byte {exc.start}): a TOML config is "
                           "UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{name} is not valid TOML: {exc}") from None
    except RecursionError:
        raise InvalidInput(f"{name} nests arrays or inline tables too deeply to be a "
                           "config") from None
