"""USD export: a memory as an OpenUSD stage (the ``usd`` extra, ``usd-core``).

Frames and units: the stage is Z-up with ``metersPerUnit = 1``, so metres and coordinates in
the memory's frame carry over unchanged. Every prim below ``/World`` has an identity transform
except the objects', so an object's local translate *is* its centre in the memory's frame. The
layer says which frame that is: its ``customLayerData`` holds ``locimem.frame`` (``"map"``)
and, when the memory's frame is a named map epoch's, ``locimem.map_epoch``; its comment is
:func:`locimem.frames.frame_note` (``positions in the memory's frame "map" (map epoch
2026-12-01-boot)``).

Layout::

    /World                                   Xform, the default prim
        Rooms/                               Scope
            kitchen                          Xform per room, locimem:polygon, locimem:z_range
                Floor                        Mesh: the floor polygon at z_min (0 without z range)
                obj_2_cup                    Xform: translate = centre, orient = quaternion
                    Box                      Cube, size 1, scaled to the box size
        Unassigned/                          Scope: objects in no room

An object prim carries ``locimem:id``, ``label``, ``confidence`` (the belief at the memory's
``now``, recorded in the layer's ``customLayerData``), ``status``, ``level``, ``first_seen``,
``last_seen`` (seconds, valid time), ``attributes`` (JSON) and ``source`` (when the object has
one), the ``locimem:on`` / ``in`` / ``under`` relationships to the exported objects it rests
on, in or under, and the semantic label ``semantics:labels:class`` (``UsdSemantics.LabelsAPI``,
when the installed USD has it).

Only published (confirmed) objects are exported unless asked: ``include=("doubted", "lost",
"tentative")`` adds those statuses (a doubted object may be a false positive; a stage is often
handed to a simulator as the world). Lost objects, when asked for, are exported invisible: the
memory keeps their last place, but does not believe they are there.

``pxr`` is imported only when :func:`export_usd` runs; the core package never needs it.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput, LocimemError
from locimem.frames import FRAME_NAME, frame_note, memory_epoch
from locimem.memory import Readable, reader_of
from locimem.model import ObjectStatus, TrackedObject
from locimem.query.reader import MemoryReader, RoomInfo

__all__ = ["UsdExportReport", "UsdUnavailable", "export_usd", "object_prim_name", "safe_name"]

USD_SUFFIXES = (".usda", ".usdc", ".usd")  # .usda is text; .usdc and .usd are binary (crate)
SEMANTIC_TAXONOMY = "class"
SUPPORT_RELATIONS = ("on", "in", "under")  # recorded as relationships, subject side
MAX_NAME_LABEL_CHARS = 48  # of the label, in an object's prim name
PUBLISHED = (ObjectStatus.CONFIRMED,)  # exported by default
UNPUBLISHED = (ObjectStatus.DOUBTED, ObjectStatus.LOST, ObjectStatus.TENTATIVE)  # on request
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9]+")  # "_" too: runs of it fold to one


class UsdUnavailable(LocimemError, ImportError):
    """The ``usd`` extra (``usd-core``, the ``pxr`` package) is not installed."""


@dataclass(frozen=True, slots=True)
class UsdExportReport:
    """What :func:`export_usd` wrote: the file, how many rooms and objects, and the prim path
    of each exported object id."""

    path: Path
    n_rooms: int
    n_objects: int
    prim_paths: dict[int, str]


def export_usd(memory: Readable, path: str | os.PathLike[str], *,
               include: Iterable[str | ObjectStatus] = (),
               include_tentative: bool = False) -> UsdExportReport:
    """Write ``memory`` (an :class:`ObjectMemory` or an ``as_of`` view) to a USD file.

    The format follows the extension: ``.usda`` is text (diffable), ``.usdc`` and ``.usd``
    binary. Published (confirmed) objects are exported; ``include`` adds other statuses —
    ``"doubted"``, ``"lost"`` (exported invisible), ``"tentative"`` (``include_tentative=True``
    is short for that one); forgotten ones never. See the module docstring for the prim
    layout. Raises :class:`UsdUnavailable` without ``usd-core``.
    """
    memory = reader_of(memory)
    out = _check_path(path)
    if not isinstance(include_tentative, bool):
        raise InvalidInput(f"include_tentative must be a bool, got "
                           f"{type(include_tentative).__name__}")
    statuses = (*PUBLISHED, *_check_include(include),
                *((ObjectStatus.TENTATIVE,) if include_tentative else ()))
    pxr = _import_pxr()

    rooms = memory.rooms()
    room_paths = _room_paths(rooms)
    objects = memory.objects(status=statuses)
    paths: dict[int, str] = {}
    for obj in objects:
        in_room = memory.room_of(obj.id)
        parent = "/World/Unassigned" if in_room is None else room_paths[in_room]
        paths[obj.id] = f"{parent}/{object_prim_name(obj.id, obj.label)}"

    stage = _new_stage(pxr, memory)
    for room in rooms:
        _define_room(pxr, stage, room_paths[room.name], room)
    for obj in objects:
        support: dict[str, list[str]] = {name: [] for name in SUPPORT_RELATIONS}
        for r in memory.relations(obj.id):  # strongest first
            if r.subject == obj.id and r.relation in support and r.object in paths:
                support[r.relation].append(paths[r.object])
        _define_object(pxr, stage, paths[obj.id], obj, memory.level_of(obj.id), support)

    try:
        written = stage.GetRootLayer().Export(str(out))
    except pxr.Tf.ErrorException as exc:
        raise LocimemError(f"could not write the USD file {str(out)!r}: {exc}") from None
    if not written:
        raise LocimemError(f"could not write the USD file {str(out)!r}")
    return UsdExportReport(out, len(rooms), len(objects), paths)


# -- names ---------------------------------------------------------------------------------------

def safe_name(text: str) -> str:
    """``text`` as an ASCII identifier fragment: accents dropped ("café" -> "cafe"), every run
    of other characters one ``_``, no ``_`` at either end; "" when nothing is left ("杯子")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _NOT_IDENTIFIER.sub("_", ascii_text).strip("_")


def object_prim_name(object_id: int, label: str) -> str:
    """``obj_<id>_<label>`` ("obj_3_coffee_mug"), or ``obj_<id>`` when the label has no ASCII
    letters or digits. Unique by the id, and a valid USD identifier (ASCII, so that readers
    predating UTF-8 prim names open it too)."""
    label_part = safe_name(label)[:MAX_NAME_LABEL_CHARS].rstrip("_")
    return f"obj_{object_id}_{label_part}" if label_part else f"obj_{object_id}"


def _room_paths(rooms: list[RoomInfo]) -> dict[str, str]:
    """Room name -> prim path; names that fold to the same identifier get ``_2``, ``_3``."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for room in rooms:  # by name, so the suffixes are stable
        base = safe_name(room.name)
        if not base or base[0].isdigit():
            base = f"room_{base}" if base else "room"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        out[room.name] = f"/World/Rooms/{name}"
    return out


def _check_include(include: Any) -> tuple[ObjectStatus, ...]:
    """The unpublished statuses ``include`` names, checked."""
    if isinstance(include, (str, ObjectStatus)):
        include = (include,)
    allowed = ", ".join(s.value for s in UNPUBLISHED)
    out = []
    try:
        for item in include:
            status = ObjectStatus(item)
            if status not in UNPUBLISHED:
                raise ValueError
            out.append(status)
    except (TypeError, ValueError):
        raise InvalidInput(f"include must name statuses among {allowed}, got "
                           f"{include!r}") from None
    return tuple(dict.fromkeys(out))


def _check_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"path must be a file path, got {type(path).__name__}")
    out = Path(path)
    if out.suffix.lower() not in USD_SUFFIXES:
        raise InvalidInput(f"path must end in {', '.join(USD_SUFFIXES)}, got {str(out)!r}")
    if not out.parent.is_dir():
        raise InvalidInput(f"the directory {str(out.parent)!r} does not exist")
    if out.is_dir():  # USD would leave its temporary file behind
        raise InvalidInput(f"{str(out)!r} is a directory")
    return out


# -- USD -----------------------------------------------------------------------------------------

def _import_pxr() -> Any:
    """The ``pxr`` modules this exporter uses, as one namespace (``UsdSemantics`` is None in
    USD releases without the semantic-labels schema)."""
    try:
        from pxr import Gf, Sdf, Tf, Usd, UsdGeom, Vt
    except ImportError:
        raise UsdUnavailable('USD export needs usd-core: pip install "locimem[usd]"') from None
    try:
        from pxr import UsdSemantics
    except ImportError:  # older releases have no semantic-labels schema
        UsdSemantics = None
    return _Pxr(Gf, Sdf, Tf, Usd, UsdGeom, Vt, UsdSemantics)


@dataclass(frozen=True, slots=True)
class _Pxr:
    Gf: Any
    Sdf: Any
    Tf: Any
    Usd: Any
    UsdGeom: Any
    Vt: Any
    UsdSemantics: Any


def _new_stage(pxr: _Pxr, memory: MemoryReader) -> Any:
    stage = pxr.Usd.Stage.CreateInMemory()
    pxr.UsdGeom.SetStageUpAxis(stage, pxr.UsdGeom.Tokens.z)
    pxr.UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    world = pxr.UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    pxr.UsdGeom.Scope.Define(stage, "/World/Rooms")
    pxr.UsdGeom.Scope.Define(stage, "/World/Unassigned")
    about: dict[str, Any] = {"scope": memory.scope, "frame": FRAME_NAME}
    if memory.now is not None:
        about["now"] = float(memory.now)  # the time every confidence was read at
    epoch = memory_epoch(memory.state.epochs)
    if epoch is not None:
        about["map_epoch"] = epoch
    layer = stage.GetRootLayer()
    layer.customLayerData = {"locimem": about}
    layer.comment = frame_note(epoch)
    return stage


def _attr(prim: Any, name: str, type_name: Any, value: Any) -> None:
    prim.CreateAttribute(f"locimem:{name}", type_name, custom=True).Set(value)


def _define_room(pxr: _Pxr, stage: Any, path: str, room: RoomInfo) -> None:
    types = pxr.Sdf.ValueTypeNames
    prim = pxr.UsdGeom.Xform.Define(stage, path).GetPrim()
    _attr(prim, "name", types.String, room.name)
    _attr(prim, "level", types.Token, "room")
    _attr(prim, "polygon", types.Double2Array,
          pxr.Vt.Vec2dArray([pxr.Gf.Vec2d(x, y) for x, y in room.polygon]))
    if room.z_range is not None:
        _attr(prim, "z_range", types.Double2, pxr.Gf.Vec2d(*room.z_range))
    _attr(prim, "connected", types.StringArray, list(room.connected))

    z = room.z_range[0] if room.z_range is not None else 0.0
    points = [pxr.Gf.Vec3f(x, y, z) for x, y in room.polygon]  # counter-clockwise: faces +z
    floor = pxr.UsdGeom.Mesh.Define(stage, f"{path}/Floor")
    floor.CreatePointsAttr(points)
    floor.CreateFaceVertexCountsAttr([len(points)])
    floor.CreateFaceVertexIndicesAttr(list(range(len(points))))
    floor.CreateSubdivisionSchemeAttr(pxr.UsdGeom.Tokens.none)
    floor.CreateDoubleSidedAttr(True)
    floor.CreateExtentAttr(pxr.UsdGeom.PointBased.ComputeExtent(points))


def _define_object(pxr: _Pxr, stage: Any, path: str, obj: TrackedObject, level: str,
                   support: dict[str, list[str]]) -> None:
    gf, types = pxr.Gf, pxr.Sdf.ValueTypeNames
    xform = pxr.UsdGeom.Xform.Define(stage, path)
    double = pxr.UsdGeom.XformOp.PrecisionDouble
    xform.AddTranslateOp(double).Set(gf.Vec3d(*obj.center))
    if obj.orientation is not None:  # locimem quaternions are (w, x, y, z), as is Gf.Quatd
        w, x, y, z = obj.orientation
        xform.AddOrientOp(double).Set(gf.Quatd(w, gf.Vec3d(x, y, z)))
    if obj.status is ObjectStatus.LOST:
        xform.MakeInvisible()

    prim = xform.GetPrim()
    _attr(prim, "id", types.Int64, obj.id)
    _attr(prim, "label", types.String, obj.label)
    _attr(prim, "confidence", types.Double, obj.confidence)
    _attr(prim, "status", types.Token, obj.status.value)
    _attr(prim, "level", types.Token, level)
    _attr(prim, "first_seen", types.Double, obj.first_seen)
    _attr(prim, "last_seen", types.Double, obj.last_seen)
    _attr(prim, "attributes", types.String, _json(obj.attributes))
    source = getattr(obj, "source", None)
    if source is not None:
        _attr(prim, "source", types.String, source if isinstance(source, str) else _json(source))
    for name, targets in support.items():
        if targets:
            prim.CreateRelationship(f"locimem:{name}", custom=True).SetTargets(
                [pxr.Sdf.Path(t) for t in targets])
    if pxr.UsdSemantics is not None:
        labels = pxr.UsdSemantics.LabelsAPI.Apply(prim, SEMANTIC_TAXONOMY)
        labels.CreateLabelsAttr([obj.label])

    box = pxr.UsdGeom.Cube.Define(stage, f"{path}/Box")
    box.CreateSizeAttr(1.0)
    box.CreateExtentAttr([gf.Vec3f(-0.5, -0.5, -0.5), gf.Vec3f(0.5, 0.5, 0.5)])
    box.AddScaleOp(double).Set(gf.Vec3d(*obj.size))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
