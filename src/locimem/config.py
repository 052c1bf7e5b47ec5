"""Tracker thresholds, validated once, with the published design's defaults.

The record never depends on these values: observations carry the weight they were applied with
and events carry the state they set, so replaying a store under another config rebuilds exactly
the same memory. The config only shapes *new* decisions and how beliefs are read.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import warnings
from collections.abc import Iterable
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
    group: str  # the concern it belongs to: a key of GROUPS

    def range_text(self) -> str:
        """``[0.001, 10] m``: the range as messages and docs show it."""
        unit = f" {self.unit}" if self.unit else ""
        return f"[{number_text(self.lo)}, {number_text(self.hi)}]{unit}"


def number_text(x: float) -> str:
    """A bound as people write it: ``0.001``, ``10``, ``1e6``."""
    return f"{x:.6g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


GROUPS: dict[str, str] = {
    "association": "which detection is which object: the match radii, which detections count, "
                   "the position filter, duplicates",
    "belief": "existence as a decaying belief: how fast it falls, what a look that missed "
              "says, when an object is published, doubted and lost",
    "lifecycle": "promotion, re-acquisition, moves nobody watched, held sightings, a person's "
                 "corrections",
    "appearance": "matching by embedding (feature) likeness",
    "prior": "differences from a prior map (deltas)",
    "retention": "the evidence kept per object",
    "relations": "the geometric predicates on, in, under, next_to and near",
}
"""The groups of settings, by concern: each knob names one (a TOML table, a ``--set GROUP.``
prefix, a section of docs/configuration.md)."""


def knob(default: Any, lo: float, hi: float, unit: str, doc: str, *, group: str) -> Any:
    """A config field with its :class:`Knob` (``field(metadata={"knob": ...})``)."""
    if group not in GROUPS:
        raise ValueError(f"no group {group!r}")  # a declaration's typo, at import
    return field(default=default, metadata={"knob": Knob(lo, hi, unit, doc, group)})


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
                raise InvalidInput(f"{name} must be an integer, got {value!r}", setting=name)
            out: float = int(value)
        else:
            try:
                out = check_float(value, name) + 0.0  # -0.0 is 0.0
            except InvalidInput as exc:
                raise InvalidInput(str(exc), setting=name) from None
        if not spec.lo <= out <= spec.hi:
            shown = value if isinstance(value, (int, float)) else out
            raise InvalidInput(f"{name} = {shown!r} is out of range: must be within "
                               f"{spec.range_text()}", setting=name)
        object.__setattr__(config, name, out)


@dataclass(frozen=True, slots=True)
class RelationConfig:
    """Thresholds of the relation predicates (metres and fractions).

    ``report_delta`` is how much a confidence must move for :class:`RelationIndex` to report
    it as ``changed`` (the stored confidence always follows the geometry exactly).
    """

    on_gap_m: float = knob(0.05, 0.001, 10.0, "m", "a box at most this far above or into "
                           "another's top is on it", group="relations")
    on_min_overlap: float = knob(0.3, 1e-9, 1.0, "", "share of its footprint over the other's "
                                 "top for on", group="relations")
    under_clearance_m: float = knob(0.1, 0.001, 10.0, "m", "a box this far below a surface's "
                                    "top is sheltered under it", group="relations")
    under_max_gap_m: float = knob(1.0, 0.001, 100.0, "m", "the highest gap below a box for "
                                  "under", group="relations")
    under_min_overlap: float = knob(0.3, 1e-9, 1.0, "", "share of its footprint beneath the "
                                    "other for under", group="relations")
    in_min_fraction: float = knob(0.6, 1e-9, 1.0, "", "share of its volume inside the other "
                                  "for in", group="relations")
    support_tol_m: float = knob(0.1, 0.001, 10.0, "m", "bottoms within this stand on one "
                                "level (next_to)", group="relations")
    next_to_gap_m: float = knob(0.3, 0.001, 10.0, "m", "the widest gap between boxes for "
                                "next_to", group="relations")
    next_to_max_overlap: float = knob(0.5, 1e-9, 1.0, "", "the most footprint overlap for "
                                      "next_to", group="relations")
    near_m: float = knob(1.0, 0.001, 100.0, "m", "centres closer than this are near",
                         group="relations")
    report_delta: float = knob(0.1, 0.0, 1.0, "", "confidence change reported as changed",
                               group="relations")

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





@dataclass(frozen=True, slots=True)
class TrackerConfig:
    """The tracker's settings, by concern (:data:`GROUPS`): association, belief, lifecycle,
    appearance, prior, retention, and ``relations`` (a :class:`RelationConfig`).

    Each setting is declared once below with its range, unit, default, group and one line of
    meaning; docs/configuration.md lists them by group, with what each group decides. Write
    them grouped — ``TrackerConfig.from_dict({"belief": {"tau_s": 20.0}})``, a TOML
    ``[belief]`` table, ``--set belief.tau_s=20`` — or, in Python, as keywords of the
    dataclass (``TrackerConfig(tau_s=20.0)``; a setting's name is unique across groups).
    The flat spellings of stored configs (a ``[tracker]`` table, flat ``from_dict`` keys,
    ``--set tau_s=20``) still work and warn (:class:`DeprecationWarning`).

    >>> TrackerConfig(relations=RelationConfig(on_gap_m=0.08)).relations.on_gap_m
    0.08
    >>> TrackerConfig.from_dict({"belief": {"tau_s": 20.0}}).tau_s
    20.0
    """

    # Each range keeps the arithmetic finite: e.g. tau_s divides times and multiplies logs,
    # position_sigma_m is squared, pd_prior_weight divides, existence_max is a log-odds.
    tight_radius_m: float = knob(0.2, 0.001, 10.0, "m", "any live object this near matches "
                                 "(the tight tier)", group="association")
    drift_radius_m: float = knob(1.0, 0.001, 100.0, "m", "a same-label object this near "
                                 "matches (the drift tier; the grid's cell)", group="association")
    promote_after: int = knob(6, 1, 10_000, "sightings", "detections that promote an object",
                              group="lifecycle")
    tau_s: float = knob(15.0, 0.001, 1e6, "s", "seconds of evidence of absence per e-fold "
                        "of belief", group="belief")
    publish_min: float = knob(0.5, 0.001, 1.0, "", "the confidence a promoted object is "
                              "published at", group="belief")
    lost_below: float = knob(0.1, 1e-6, 0.999, "", "an existence below this is lost",
                             group="belief")
    reacquire_window_s: float = knob(60.0, 0.0, 1e9, "s", "a lost object is re-acquirable "
                                     "this long", group="lifecycle")
    relocate_window_s: float = knob(3600.0, 0.0, 1e9, "s", "a lost object may be found moved "
                                    "this long", group="lifecycle")
    feature_reacquire_window_s: float = knob(3600.0, 0.0, 1e9, "s", "re-acquisition window "
                                             "for a matching embedding", group="appearance")
    feature_match_min: float = knob(0.8, 0.0, 1.0, "cosine", "embeddings at least this alike "
                                    "match", group="appearance")
    min_detection_confidence: float = knob(0.05, 0.0, 1.0, "", "detections below this are "
                                           "ignored", group="association")
    position_alpha: float = knob(0.3, 0.001, 1.0, "", "the least step toward an outlying "
                                 "sighting", group="association")
    position_sigma_m: float = knob(0.02, 1e-4, 10.0, "m", "a sighting's position noise",
                                   group="association")
    position_sigma_per_m: float = knob(0.01, 0.0, 1.0, "m/m", "more noise per metre from the "
                                       "camera", group="association")
    position_info_max: float = knob(50.0, 1.0, 1e6, "sightings", "the position estimate's "
                                    "information cap", group="association")
    human_label_weight: float | None = knob(None, 0.01, 1e6, "", "a relabel's label mass "
                                            "(None: it pins the label)", group="lifecycle")
    revive_after: int | None = knob(None, 1, 1_000_000, "sightings", "suppressed sightings "
                                    "that revive a forgotten object (None: never)",
                                    group="lifecycle")
    doubt_after_misses: int = knob(2, 1, 10_000, "looks", "misses before a published object "
                                   "can be doubted", group="belief")
    new_object_min_confidence: float = knob(0.5, 0.0, 1.0, "", "the confidence that may "
                                            "create an object", group="association")
    promote_after_camera: int = knob(3, 1, 10_000, "sightings", "detections that promote with "
                                     "a camera", group="lifecycle")
    tau_unseen_s: float = knob(28800.0, 0.001, 1e9, "s", "seconds out of view per e-fold of "
                               "belief", group="belief")
    see_through_m: float = knob(0.01, 0.0, 10.0, "m", "depth beyond a place's middle that "
                                "reads it empty", group="belief")
    pd_prior: float = knob(0.8, 0.01, 0.99, "", "the prior probability of detection",
                           group="belief")
    pd_prior_weight: float = knob(5.0, 0.1, 1e6, "looks", "the prior's pseudo-looks",
                                  group="belief")
    pd_max: float = knob(0.95, 0.01, 0.999, "", "the learned probability of detection's cap",
                         group="belief")
    empty_likelihood: float = knob(0.1, 0.001, 1.0, "", "odds factor of a place seen "
                                   "through", group="belief")
    existence_max: float = knob(0.9999, 0.5, 0.999999, "", "the existence sightings restore, "
                                "at most", group="belief")
    evidence_per_sighting: float = knob(2.5, 0.0, 100.0, "log-odds", "existence evidence of "
                                        "one sighting", group="belief")
    promote_camera_min_mass: float = knob(1.8, 0.0, 1e6, "", "summed confidence an early "
                                          "promotion needs", group="lifecycle")
    promote_confidence: float = knob(0.7, 0.01, 10.0, "", "a detection this sure promotes at "
                                     "once (above 1: never)", group="lifecycle")
    lost_min_sightings: int = knob(2, 1, 10_000, "sightings", "camera sightings before misses "
                                   "can lose an object", group="belief")
    losses_per_scan: int = knob(32, 1, 1_000_000, "objects", "objects unseen too long a scan "
                                "gives up at most (the rest at the next scans)",
                                group="lifecycle")
    withdraw_ratio: float = knob(0.003, 0.0, 1.0, "", "odds fall that withdraws publication "
                                 "(0: never)", group="belief")
    depth_noise_m: float = knob(0.01, 0.0, 10.0, "m", "depth tolerance", group="belief")
    depth_noise_per_m: float = knob(0.005, 0.0, 1.0, "m/m", "more depth tolerance per metre",
                                    group="belief")
    range_edge: float = knob(0.8, 0.01, 0.99, "", "share of the range where detection starts "
                             "to fall off", group="belief")
    small_angle_deg: float = knob(2.0, 0.0, 90.0, "deg", "objects subtending less are "
                                  "detected less", group="belief")
    move_confirm_after: int = knob(3, 2, 10_000, "sightings", "held sightings that confirm a "
                                   "move", group="lifecycle")
    held_window_s: float = knob(30.0, 0.0, 1e9, "s", "held sightings count this long",
                                group="lifecycle")
    suspect_size_ratio: float = knob(2.0, 0.01, 1e4, "", "a box this much larger is suspect",
                                     group="association")
    merge_min_iou: float = knob(0.25, 0.0, 1.0, "IoU", "overlap that merges duplicates",
                                group="association")
    feature_margin: float = knob(0.1, 0.0, 1.0, "cosine", "lead over the second-best "
                                 "embedding", group="appearance")
    feature_label_strict: float = knob(0.1, 0.0, 1.0, "cosine", "more likeness when labels "
                                       "differ", group="appearance")
    feature_unlike_max: float = knob(0.5, 0.0, 1.0, "cosine", "below this, even a near "
                                     "object is another thing", group="appearance")
    delta_move_m: float = knob(0.5, 0.001, 1000.0, "m", "a prior object this far off opens "
                               "a moved delta", group="prior")
    delta_size_ratio: float = knob(1.5, 1.001, 1e4, "", "a box this much larger or smaller "
                                   "opens a geometry delta", group="prior")
    delta_confirm_after: int = knob(3, 1, 10_000, "sightings", "support that confirms a "
                                    "delta", group="prior")
    keyframes_kept: int = knob(5, 1, 1000, "frames", "keyframes kept per object", group="retention")
    appearance_approximate_above: int | None = knob(
        None, 1, 1_000_000_000, "objects", "rows above which the appearance tier searches an "
        "approximate usearch graph (the vectors extra; None: always exact)", group="appearance")
    appearance_unsure_max: int = knob(2, 0, 1000, "detections", "unsure detections searched "
                                      "by likeness a scan (0: none)", group="appearance")
    relations: RelationConfig = field(default_factory=RelationConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.relations, RelationConfig):
            raise InvalidInput(f"relations must be a RelationConfig, got "
                               f"{type(self.relations).__name__}")
        _check_knobs(self)
        if self.tight_radius_m > self.drift_radius_m:
            raise InvalidInput(
                f"tight_radius_m ({self.tight_radius_m}) must not exceed "
                f"drift_radius_m ({self.drift_radius_m})", setting="tight_radius_m"
            )
        if not self.lost_below < self.publish_min:
            raise InvalidInput(
                "lost_below must be below publish_min, got "
                f"lost_below={self.lost_below}, publish_min={self.publish_min}",
                setting="lost_below"
            )

    @property
    def lost_after_s(self) -> float:
        """Seconds without a detection after which belief falls below ``lost_below``."""
        return self.tau_s * math.log(1.0 / self.lost_below)

    def to_dict(self) -> dict[str, Any]:
        """The settings grouped: ``{group: {setting: value}}``, ``relations`` included;
        :meth:`from_dict` reads it back."""
        flat = asdict(self)
        out: dict[str, dict[str, Any]] = {group: {} for group in GROUPS}
        for name, _, _, spec in knobs(TrackerConfig):
            out[spec.group][name] = flat[name]
        out["relations"] = flat["relations"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrackerConfig:
        """A config from :meth:`to_dict`'s form: a dict per group (``relations`` for the
        :class:`RelationConfig`); what is left out keeps its default. A flat setting at the
        top level (the old form) is read too, with a :class:`DeprecationWarning`.

        Raises :class:`InvalidInput` for an unknown group or setting (naming the known ones)
        or a value out of range."""
        if not isinstance(data, dict):
            raise InvalidInput(f"a config is a dict of groups, got {type(data).__name__}")
        unknown = sorted(set(data) - set(GROUPS) - set(GROUP_OF))
        if unknown:
            raise InvalidInput(f"unknown TrackerConfig group(s) or setting(s): "
                               f"{', '.join(map(str, unknown))} (groups: {', '.join(GROUPS)})")
        values: dict[str, Any] = {}
        flat = []
        for key, value in data.items():
            if key == "relations":
                values["relations"] = _relations(value, "[relations]")
            elif key in GROUPS:
                values.update(_group_values(key, value, f"[{key}]"))
            else:  # a flat setting (the old form)
                flat.append(key)
                values[key] = value
        if flat:
            _deprecated(f"flat TrackerConfig settings ({', '.join(flat)}) are deprecated: "
                        f"group them, e.g. {{{GROUP_OF[flat[0]]!r}: {{{flat[0]!r}: ...}}}}")
        return cls(**values)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> TrackerConfig:
        """Read a config from a TOML file: a table per group of settings (``[association]``,
        ``[belief]``, ``[lifecycle]``, ``[appearance]``, ``[prior]``, ``[retention]``,
        ``[relations]``), each optional; what is left out keeps its default. The same file
        may hold an ``[encoder]`` table, read by
        :func:`locimem.language.encoder.encoder_from_toml`, and a ``[store]`` table, read by
        :func:`store_settings_from_toml`. A ``[tracker]`` table of flat settings (the old
        form) is read too, with a :class:`DeprecationWarning`. (``tomllib`` on Python 3.11+;
        on 3.10 the ``tomli`` package, the ``toml`` extra.)

        Raises :class:`InvalidInput` naming the file and, where it applies, the table and the
        setting: a file that cannot be read or is not TOML, an unknown table or setting, a
        value of the wrong type or out of range.

        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "robot.toml"
        >>> _ = path.write_text("[belief]\\ntau_s = 20.0\\n[relations]\\non_gap_m = 0.08\\n")
        >>> config = TrackerConfig.from_toml(path)
        >>> config.tau_s, config.relations.on_gap_m, config.promote_after
        (20.0, 0.08, 6)
        """
        name = os.fspath(path)
        data = read_toml(name)
        tables = (*GROUPS, "tracker", "encoder", "store")
        unknown = sorted(set(data) - set(tables))
        if unknown:
            raise InvalidInput(f"{name}: unknown table(s) {', '.join(unknown)} (a config has "
                               f"{', '.join(f'[{t}]' for t in tables if t != 'tracker')})")
        values: dict[str, Any] = {}
        table_of: dict[str, str] = {}  # setting -> the table it was given in
        for table in data:
            where = f"{name}: [{table}]"
            if table == "relations":
                values["relations"] = _relations(data[table], where)
            elif table in GROUPS:
                values.update(_group_values(table, data[table], where))
            elif table == "tracker":
                values.update(_flat_table(data[table], where))
            table_of.update(dict.fromkeys(data[table] if table in GROUPS or table == "tracker"
                                          else (), table))
        try:
            return cls(**values)
        except InvalidInput as exc:  # a value or a rule joining two: name the setting's table
            setting = exc.setting or ""
            table = table_of.get(setting, GROUP_OF.get(setting, "tracker"))
            raise InvalidInput(f"{name}: [{table}] {exc}") from None

    def with_settings(self, settings: Iterable[str]) -> TrackerConfig:
        """This config with ``GROUP.NAME=VALUE`` settings applied (the CLI's ``--set``), each
        value a number or ``none``; a bare ``NAME=VALUE`` (the old flat form) works with a
        :class:`DeprecationWarning`.

        >>> TrackerConfig().with_settings(["belief.tau_s=20", "relations.near_m=0.5"]).tau_s
        20.0
        """
        values: dict[str, Any] = {}
        relations: dict[str, Any] = {}
        for item in settings:
            key, sep, text = str(item).partition("=")
            if not sep or not key.strip():
                raise InvalidInput(f"--set takes GROUP.NAME=VALUE, got {item!r}")
            group, dot, setting = key.strip().rpartition(".")
            value = _setting_value(text.strip(), key)
            if not dot:
                _deprecated(f"--set {setting}=... is deprecated: write "
                            f"--set {GROUP_OF.get(setting, 'GROUP')}.{setting}=...")
                values.update(_flat_table({setting: value}, "--set"))
            elif group == "relations":
                relations.update({setting: value})
            else:
                values.update(_group_values(group, {setting: value}, f"--set [{group}]"))
        if relations:
            values["relations"] = _relations({**asdict(self.relations), **relations},
                                             "--set [relations]")
        return dataclasses.replace(self, **values)


GROUP_OF: dict[str, str] = {name: spec.group for name, _, _, spec in knobs(TrackerConfig)}
"""Each :class:`TrackerConfig` setting's group (``relations`` is a :class:`RelationConfig`)."""


def _deprecated(message: str) -> None:
    warnings.warn(message, DeprecationWarning, stacklevel=3)


def _group_values(group: str, values: Any, where: str) -> dict[str, Any]:
    """One group's table of settings, checked to belong to it."""
    if group not in GROUPS:
        raise InvalidInput(f"{where}: no group {group!r} (groups: {', '.join(GROUPS)})")
    if not isinstance(values, dict):
        raise InvalidInput(f"{where} must be a table of settings, got a "
                           f"{type(values).__name__}")
    for setting in values:
        if GROUP_OF.get(setting) != group:
            known = [n for n, g in GROUP_OF.items() if g == group]
            elsewhere = f", it is in [{GROUP_OF[setting]}]" if setting in GROUP_OF else ""
            raise InvalidInput(f"{where} has no setting {setting!r}{elsewhere} (known: "
                               f"{', '.join(known)})")
    return dict(values)


def _flat_table(values: Any, where: str) -> dict[str, Any]:
    """Settings in the old flat form (a ``[tracker]`` table): read, with a warning."""
    if not isinstance(values, dict):
        raise InvalidInput(f"{where} must be a table of settings, got a "
                           f"{type(values).__name__}")
    unknown = sorted(set(values) - set(GROUP_OF))
    if unknown:
        raise InvalidInput(f"{where} has no setting {unknown[0]!r} (known: "
                           f"{', '.join(sorted(GROUP_OF))})")
    if values and where != "--set":
        first = next(iter(values))
        _deprecated(f"{where}: a flat table of settings is deprecated: put each in its "
                    f"group's table, e.g. [{GROUP_OF[first]}] {first} = ...")
    return dict(values)


def _relations(values: Any, where: str) -> RelationConfig:
    if isinstance(values, RelationConfig):
        return values
    if not isinstance(values, dict):
        raise InvalidInput(f"{where} must be a table of settings, got a "
                           f"{type(values).__name__}")
    known = {f.name for f in fields(RelationConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise InvalidInput(f"{where} has no setting {unknown[0]!r} (known: "
                           f"{', '.join(sorted(known))})")
    try:
        return RelationConfig(**values)
    except InvalidInput as exc:
        raise InvalidInput(f"{where} {exc}") from None


def _setting_value(text: str, key: str) -> Any:
    """A ``--set`` value: ``none``, an integer or a number."""
    if text.lower() in ("none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise InvalidInput(f"--set {key}: {text!r} is not a number (or none)") from None


def settings_table() -> str:
    """docs/configuration.md's tables of settings, made from the declarations: a section per
    group (its TOML table and what it decides), a row per setting with its default, range and
    meaning."""
    out = []
    for group, what in GROUPS.items():
        kind = RelationConfig if group == "relations" else TrackerConfig
        out += [f"### [{group}]", "", f"{what[0].upper()}{what[1:]}.", "",
                "| setting | default | range | meaning |", "|---|---|---|---|"]
        for name, _, default, spec in knobs(kind):
            if spec.group == group:
                shown = "none" if default is None else number_text(default)
                out.append(f"| `{name}` | {shown} | {spec.range_text()} | {spec.doc} |")
        out.append("")
    return "\n".join(out)


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
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        try:
            import tomli as tomllib
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
