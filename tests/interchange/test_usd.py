"""USD export: the furnished house written as a stage and opened again with ``pxr`` — Z-up and
metres, one Xform per room with its floor, every exported object under its room (or
``/World/Unassigned``) with its centre, orientation, box, attributes and semantic label;
tentative objects only on request; forgotten ones never; odd labels as valid, unique names."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("pxr")

from pxr import Gf, Sdf, Usd, UsdGeom, UsdSemantics

from locimem import Detection, ObjectMemory, ObjectStatus
from locimem.errors import InvalidInput, LocimemError
from locimem.interchange.usd import (
    UsdExportReport,
    UsdUnavailable,
    export_usd,
    object_prim_name,
    safe_name,
)
from tests.helpers import HOUSE, ID, ROOMS
from tests.scene.test_scene_graph import build_house, scan

QUARTER_TURN = (math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4))  # w, x, y, z: 90° about z
# outside every room (the house spans x 0..10, y -5..4); ids 17.. in this order
YARD = [
    ("coffee mug", (20.0, 20.0, 0.5), (0.1, 0.12, 0.1), QUARTER_TURN),
    ("café crème!", (21.0, 20.0, 0.5), (0.1, 0.1, 0.1), None),
    ("杯子", (22.0, 20.0, 0.5), (0.1, 0.1, 0.1), None),
    ("coffee-mug", (23.0, 20.0, 0.5), (0.1, 0.1, 0.1), None),
]
MUG, CAFE, CUP_ZH, MUG2 = range(len(HOUSE) + 1, len(HOUSE) + 1 + len(YARD))
TENTATIVE = MUG2 + 1  # a rubber duck seen once, at the last scan


def yard() -> list[Detection]:
    return [Detection(label, 0.9, c, s, orientation=q) for label, c, s, q in YARD]


@pytest.fixture
def house(mem: ObjectMemory) -> ObjectMemory:
    """The furnished house (ids 1-16) and the yard (17-20), all confirmed; the phone
    forgotten; a rubber duck (21) seen once, still tentative."""
    build_house(mem)
    for t in range(8, 14):
        result = mem.observe(float(t), scan() + yard())
    assert result.assignments == tuple(range(1, MUG2 + 1))
    result = mem.observe(14.0, [*scan(), *yard(), Detection("rubber duck", 0.9, (24, 20, 0.5),
                                                            (0.1, 0.1, 0.1))])
    assert result.assignments[-1] == TENTATIVE
    mem.forget(ID["phone"], reason="private")
    mem.set_attributes(ID["cup"], {"color": "red", "anchor": True})
    return mem


def exported(mem: ObjectMemory, path: Path, **kw) -> tuple[UsdExportReport, Usd.Stage]:
    report = export_usd(mem, path, **kw)
    stage = Usd.Stage.Open(str(path))
    assert stage is not None
    return report, stage


def object_prims(stage: Usd.Stage) -> dict[int, Usd.Prim]:
    """Every prim with a ``locimem:id``, by id."""
    out = {}
    for prim in stage.Traverse():
        attr = prim.GetAttribute("locimem:id")
        if attr:
            assert attr.Get() not in out
            out[attr.Get()] = prim
    return out


def op(prim: Usd.Prim, name: str):
    return prim.GetAttribute(f"xformOp:{name}").Get()


# -- the stage -----------------------------------------------------------------------------------

def test_the_stage_is_z_up_in_metres_with_world_as_default_prim(house, tmp_path) -> None:
    _, stage = exported(house, tmp_path / "house.usda")
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetDefaultPrim().GetPath() == Sdf.Path("/World")
    assert stage.GetRootLayer().customLayerData == {"locimem": {"scope": "test", "now": 14.0,
                                                                "frame": "map"}}
    assert stage.GetRootLayer().comment == "positions in the memory's frame \"map\""
    assert (tmp_path / "house.usda").read_text().startswith("#usda 1.0\n")


def test_the_layer_names_the_memory_s_map_epoch(tmp_path) -> None:
    """A memory whose scans named their SLAM session: the layer says whose frame it is (the
    base epoch's, not a later one's aligned into it)."""
    table = Detection("kitchen table", 0.9, (1.5, 1.5, 0.375), (1.2, 0.8, 0.75))
    with ObjectMemory.open(tmp_path / "m.loci", scope="home") as mem:
        for t in range(6):
            mem.observe(float(t), [table], map_epoch="2026-12-01-boot")
        mem.align_epoch("2026-12-02-boot", ((1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
        mem.observe(6.0, [Detection("kitchen table", 0.9, (0.5, 1.5, 0.375),
                                    (1.2, 0.8, 0.75))], map_epoch="2026-12-02-boot")
        report, stage = exported(mem, tmp_path / "m.usda")
        assert [o.center for o in mem.objects()] == [(1.5, 1.5, 0.375)]
    layer = stage.GetRootLayer()
    assert layer.customLayerData == {"locimem": {"scope": "home", "now": 6.0, "frame": "map",
                                                 "map_epoch": "2026-12-01-boot"}}
    assert layer.comment == "positions in the memory's frame \"map\" (map epoch 2026-12-01-boot)"
    assert report.prim_paths == {1: "/World/Unassigned/obj_1_kitchen_table"}
    assert op(stage.GetPrimAtPath(report.prim_paths[1]), "translate") == \
        Gf.Vec3d(1.5, 1.5, 0.375)


def test_one_xform_per_room_with_its_floor_polygon(house, tmp_path) -> None:
    _, stage = exported(house, tmp_path / "house.usda")
    rooms = stage.GetPrimAtPath("/World/Rooms").GetChildren()
    assert [p.GetName() for p in rooms] == sorted(ROOMS)
    for prim in rooms:
        assert prim.GetTypeName() == "Xform"
        assert prim.GetAttribute("locimem:name").Get() == prim.GetName()
        assert prim.GetAttribute("locimem:level").Get() == "room"
        polygon = [tuple(v) for v in prim.GetAttribute("locimem:polygon").Get()]
        assert polygon == [tuple(map(float, p)) for p in ROOMS[prim.GetName()]]
        floor = UsdGeom.Mesh(prim.GetChild("Floor"))
        assert [tuple(p) for p in floor.GetPointsAttr().Get()] == [(*p, 0.0) for p in polygon]
        assert list(floor.GetFaceVertexCountsAttr().Get()) == [len(polygon)]
    assert list(stage.GetPrimAtPath("/World/Rooms/hall")
                .GetAttribute("locimem:connected").Get()) == ["bedroom", "kitchen"]


def test_objects_sit_under_their_room_with_centre_box_and_attributes(house, tmp_path) -> None:
    report, stage = exported(house, tmp_path / "house.usda")
    prims = object_prims(stage)
    views = {o.id: o for o in house.objects(status=("confirmed", "doubted", "lost"))}
    assert sorted(prims) == sorted(views) == sorted(report.prim_paths)
    assert (report.path, report.n_rooms, report.n_objects) == (tmp_path / "house.usda",
                                                               len(ROOMS), len(views))
    for oid, prim in prims.items():
        view = views[oid]
        room = house.room_of(oid)
        parent = f"/World/Rooms/{room}" if room else "/World/Unassigned"
        assert str(prim.GetPath()) == report.prim_paths[oid] == \
            f"{parent}/{object_prim_name(oid, view.label)}"
        assert prim.GetTypeName() == "Xform"
        assert tuple(op(prim, "translate")) == view.center
        box = UsdGeom.Cube(prim.GetChild("Box"))
        assert box.GetSizeAttr().Get() == 1.0
        assert tuple(op(box.GetPrim(), "scale")) == view.size
        attrs = {a.GetName().removeprefix("locimem:"): a.Get() for a in prim.GetAttributes()
                 if a.GetNamespace() == "locimem"}
        source = getattr(view, "source", None)
        assert attrs == {
            "id": oid, "label": view.label, "confidence": view.confidence,
            "status": view.status.value, "level": house.level_of(oid),
            "first_seen": view.first_seen, "last_seen": view.last_seen,
            "attributes": json.dumps(view.attributes, sort_keys=True),
            **({"source": source} if source is not None else {}),
        }
        labels = UsdSemantics.LabelsAPI(prim, "class")
        assert UsdSemantics.LabelsAPI.GetDirectTaxonomies(prim) == ["class"]
        assert list(labels.GetLabelsAttr().Get()) == [view.label]
    cup = prims[ID["cup"]]
    assert str(cup.GetPath()) == "/World/Rooms/kitchen/obj_2_cup"
    assert json.loads(cup.GetAttribute("locimem:attributes").Get()) == {"anchor": True,
                                                                      "color": "red"}
    assert stage.GetPrimAtPath("/World/Rooms/bedroom/obj_16_bed").IsValid()


def test_the_box_renders_where_the_object_is_turned_as_it_is(house, tmp_path) -> None:
    _, stage = exported(house, tmp_path / "house.usda")
    mug = object_prims(stage)[MUG]
    assert op(mug, "orient") == Gf.Quatd(QUARTER_TURN[0], Gf.Vec3d(*QUARTER_TURN[1:]))
    bound = UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default"]).ComputeWorldBound(mug)
    lo, hi = bound.ComputeAlignedRange().GetMin(), bound.ComputeAlignedRange().GetMax()
    # 0.1 x 0.12 x 0.1, turned 90° about z: 0.12 along x, 0.1 along y
    assert [round(v, 9) for v in (*lo, *hi)] == [19.94, 19.95, 0.45, 20.06, 20.05, 0.55]
    unturned = object_prims(stage)[ID["cup"]]
    assert unturned.GetAttribute("xformOp:orient").IsValid() is False


def test_items_record_what_they_rest_on(house, tmp_path) -> None:
    report, stage = exported(house, tmp_path / "house.usda")
    prims, paths = object_prims(stage), report.prim_paths
    on = {oid: [str(t) for t in prim.GetRelationship("locimem:on").GetTargets()]
          for oid, prim in prims.items() if prim.GetRelationship("locimem:on")}
    assert on == {ID["cup"]: [paths[ID["table"]]], ID["plate"]: [paths[ID["table"]]],
                  ID["vase"]: [paths[ID["shelf"]]], ID["bottle"]: [paths[ID["nightstand"]]]}
    into = [str(t) for t in prims[ID["fork"]].GetRelationship("locimem:in").GetTargets()]
    assert into == [paths[ID["drawer"]]]
    under = [str(t) for t in prims[ID["shoes"]].GetRelationship("locimem:under").GetTargets()]
    assert under == [paths[ID["table"]]]


# -- what is exported ----------------------------------------------------------------------------

def test_tentative_objects_only_when_asked(house, tmp_path) -> None:
    assert house.get(TENTATIVE).status is ObjectStatus.TENTATIVE
    report, stage = exported(house, tmp_path / "a.usda")
    assert TENTATIVE not in object_prims(stage)
    assert report.n_objects == len(object_prims(stage)) == 19  # 16 + 4 less the phone

    report, stage = exported(house, tmp_path / "b.usda", include_tentative=True)
    prims = object_prims(stage)
    assert report.n_objects == len(prims) == 20
    assert str(prims[TENTATIVE].GetPath()) == "/World/Unassigned/obj_21_rubber_duck"
    assert prims[TENTATIVE].GetAttribute("locimem:status").Get() == "tentative"


def test_a_forgotten_object_is_absent(house, tmp_path) -> None:
    _, stage = exported(house, tmp_path / "house.usda", include_tentative=True)
    assert ID["phone"] not in object_prims(stage)
    text = (tmp_path / "house.usda").read_text()
    assert "phone" not in text


def test_objects_in_no_room_are_unassigned(house, tmp_path) -> None:
    _, stage = exported(house, tmp_path / "house.usda")
    unassigned = stage.GetPrimAtPath("/World/Unassigned")
    assert unassigned.GetTypeName() == "Scope"
    assert [p.GetName() for p in unassigned.GetChildren()] == [
        "obj_17_coffee_mug", "obj_18_cafe_creme", "obj_19", "obj_20_coffee_mug"]


def test_a_memory_without_rooms_puts_everything_in_unassigned(mem, tmp_path) -> None:
    for t in range(6):
        mem.observe(float(t), [Detection("cup", 0.9, (1, 1, 1), (0.1, 0.1, 0.1))])
    report, stage = exported(mem, tmp_path / "cup.usda")
    assert (report.n_rooms, report.n_objects) == (0, 1)
    assert stage.GetPrimAtPath("/World/Rooms").GetChildren() == []
    assert [str(p.GetPath()) for p in object_prims(stage).values()] == [
        "/World/Unassigned/obj_1_cup"]


def test_a_lost_object_is_exported_invisible(house, tmp_path) -> None:
    house.observe(60.0, scan("bed") + yard())  # the bed, unseen for 46 s, is lost
    assert house.get(ID["bed"]).status is ObjectStatus.LOST
    _, stage = exported(house, tmp_path / "published.usda")
    assert ID["bed"] not in object_prims(stage)  # only published objects, unless asked
    _, stage = exported(house, tmp_path / "house.usda", include=["lost"])
    prims = object_prims(stage)
    bed = prims[ID["bed"]]
    assert bed.GetAttribute("locimem:status").Get() == "lost"
    assert UsdGeom.Imageable(bed).ComputeVisibility() == UsdGeom.Tokens.invisible
    assert UsdGeom.Imageable(prims[ID["cup"]]).ComputeVisibility() == UsdGeom.Tokens.inherited


def test_unpublished_statuses_are_checked(house, tmp_path) -> None:
    with pytest.raises(InvalidInput, match=r"^include must name statuses among doubted, lost, "
                                           r"tentative, got \['confirmed'\]$"):
        export_usd(house, tmp_path / "x.usda", include=["confirmed"])
    assert not (tmp_path / "x.usda").exists()


# -- names ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("label", "name"), [
    ("coffee mug", "obj_7_coffee_mug"),
    ("coffee-mug", "obj_7_coffee_mug"),
    ("café crème!", "obj_7_cafe_creme"),
    ("杯子", "obj_7"),
    ("3d printer", "obj_7_3d_printer"),
    ("__init__ / ../etc", "obj_7_init_etc"),
    ("a" * 60 + " b", "obj_7_" + "a" * 48),
])
def test_object_prim_names_are_valid_identifiers(label, name) -> None:
    assert object_prim_name(7, label) == name
    assert Sdf.Path.IsValidIdentifier(name) and name.isascii()


def test_odd_labels_give_valid_unique_prim_names(house, tmp_path) -> None:
    report, stage = exported(house, tmp_path / "house.usda")
    names = [Sdf.Path(p).name for p in report.prim_paths.values()]
    assert len(set(names)) == len(names)
    assert all(Sdf.Path.IsValidIdentifier(n) and n.isascii() for n in names)
    labels = {oid: p.GetAttribute("locimem:label").Get() for oid, p in object_prims(stage).items()}
    assert [labels[i] for i in (MUG, CAFE, CUP_ZH, MUG2)] == [label for label, *_ in YARD]


def test_rooms_whose_names_fold_alike_get_distinct_prims(mem, tmp_path) -> None:
    mem.define_room("living room", [(0, 0), (1, 0), (1, 1)])
    mem.define_room("living-room", [(2, 0), (3, 0), (3, 1)])
    mem.define_room("2nd floor", [(4, 0), (5, 0), (5, 1)])
    mem.define_room("салон", [(6, 0), (7, 0), (7, 1)])
    _, stage = exported(mem, tmp_path / "rooms.usda")
    rooms = {p.GetAttribute("locimem:name").Get(): p.GetName()
             for p in stage.GetPrimAtPath("/World/Rooms").GetChildren()}
    assert rooms == {"2nd floor": "room_2nd_floor", "living room": "living_room",
                     "living-room": "living_room_2", "салон": "room"}


def test_safe_name_folds_accents_and_punctuation() -> None:
    assert [safe_name(s) for s in ("Crème brûlée", " a..b ", "!!", "x_y")] == [
        "Creme_brulee", "a_b", "", "x_y"]


# -- files and errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".usdc", ".usd"])
def test_binary_by_extension(house, tmp_path, suffix) -> None:
    report, stage = exported(house, tmp_path / f"house{suffix}")
    assert (tmp_path / f"house{suffix}").read_bytes().startswith(b"PXR-USDC")
    assert len(object_prims(stage)) == report.n_objects == 19


@pytest.mark.parametrize(("path", "message"), [
    ("house.json", r"^path must end in \.usda, \.usdc, \.usd, got '.*house\.json'$"),
    ("house.usdz", r"^path must end in \.usda, \.usdc, \.usd, got '.*house\.usdz'$"),
    ("nowhere/house.usda", r"^the directory '.*nowhere' does not exist$"),
])
def test_bad_paths_are_refused_and_nothing_is_written(house, tmp_path, path, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        export_usd(house, tmp_path / path)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_not_overwritten(house, tmp_path) -> None:
    (tmp_path / "taken.usda").mkdir()
    with pytest.raises(InvalidInput, match=r"^'.*taken\.usda' is a directory$"):
        export_usd(house, tmp_path / "taken.usda")
    assert [p.name for p in tmp_path.iterdir()] == ["taken.usda"]


def test_only_a_memory_is_exported(tmp_path) -> None:
    with pytest.raises(InvalidInput, match=r"^memory must be an ObjectMemory \(a MemoryReader\), "
                                           r"got dict$"):
        export_usd({}, tmp_path / "x.usda")


def test_without_usd_core_the_error_says_what_to_install(house, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pxr", None)  # as if usd-core were not installed
    with pytest.raises(UsdUnavailable, match=r'^USD export needs usd-core: '
                                             r'pip install "locimem\[usd\]"$') as info:
        export_usd(house, tmp_path / "house.usda")
    assert isinstance(info.value, ImportError)
    assert list(tmp_path.iterdir()) == []


def test_an_as_of_view_exports_the_past(house, tmp_path) -> None:
    report, stage = exported(house.as_of(7.0), tmp_path / "then.usda")
    assert report.n_objects == 15  # the house as it was; the phone forgotten since
    assert stage.GetRootLayer().customLayerData["locimem"]["now"] == 7.0



def test_a_failed_write_raises_a_locimem_error(house, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(Sdf.Layer, "Export", lambda *args, **kw: False)  # a full disk, say
    with pytest.raises(LocimemError, match=r"^could not write the USD file '.*house\.usda'$"):
        export_usd(house, tmp_path / "house.usda")
