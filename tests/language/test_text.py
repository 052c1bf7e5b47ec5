"""Label and text matching: whole words, plural folding, synonyms, categories, ranking."""

from __future__ import annotations

import random

import pytest

from locimem.language.text import (
    LabelMatcher,
    categories_in,
    fold,
    phrase_in,
    singular,
    support_role,
    synonyms,
    text_scores,
    words,
)

HOUSEHOLD = [
    "cup", "mug", "coffee mug", "glass", "wine glass", "bottle", "water bottle", "chair",
    "armchair", "sofa", "couch", "cupboard", "vegetable", "timetable", "table", "kitchen table",
    "dining table", "table lamp", "cup holder", "trash can", "garbage bin", "cell phone",
    "mobile phone", "refrigerator", "television", "tv", "plate", "stool", "eyeglasses",
]


@pytest.mark.parametrize(("text", "expected"), [
    ("Coffee  Cup", ("coffee", "cup")),
    ("trash_can", ("trash", "can")),
    ("TV-remote", ("tv", "remote")),
    ("men's shoes", ("mens", "shoes")),
    ("don't", ("dont",)),
    ("Ｃｕｐ", ("cup",)),  # full-width letters fold (NFKC)
    ("", ()),
])
def test_words(text: str, expected: tuple[str, ...]) -> None:
    assert words(text) == expected


@pytest.mark.parametrize(("plural", "single"), [
    ("cups", "cup"), ("boxes", "box"), ("glasses", "glass"), ("dishes", "dish"),
    ("benches", "bench"), ("batteries", "battery"), ("cookies", "cookie"),
    ("knives", "knife"), ("shelves", "shelf"), ("shoes", "shoe"), ("keys", "key"),
    ("buses", "bus"), ("tomatoes", "tomato"), ("tvs", "tv"), ("people", "person"),
    ("glass", "glass"), ("bus", "bus"), ("news", "news"), ("series", "series"),
    ("gas", "gas"), ("cup", "cup"), ("ties", "tie"), ("mattresses", "mattress"),
])
def test_singular(plural: str, single: str) -> None:
    assert singular(plural) == single


def test_phrase_in_is_whole_word_and_consecutive() -> None:
    assert phrase_in(("cup",), fold("coffee cup"))
    assert not phrase_in(("cup",), fold("cupboard"))
    assert not phrase_in(("table",), fold("vegetable"))
    assert phrase_in(("kitchen", "table"), fold("the kitchen table"))
    assert not phrase_in(("kitchen", "table"), fold("table in the kitchen"))
    assert not phrase_in((), fold("anything"))


def test_whole_words_only_never_substrings() -> None:
    scores = text_scores("table", HOUSEHOLD)
    assert scores == {"table": 1.0, "kitchen table": 0.9, "dining table": 0.9,
                      "table lamp": 0.3}
    assert "vegetable" not in scores and "timetable" not in scores
    cup = text_scores("cup", HOUSEHOLD)
    assert "cupboard" not in cup
    assert cup == {"cup": 1.0, "mug": 0.7, "coffee mug": 0.63, "cup holder": 0.3}


def test_plurals_fold_on_both_sides() -> None:
    assert text_scores("cups", ["cup", "cupboard"]) == {"cup": 1.0}
    assert text_scores("glasses", ["wine glass", "glass"]) == {"wine glass": 0.9, "glass": 1.0}
    assert text_scores("shelf", ["shelves"]) == {"shelves": 1.0}


@pytest.mark.parametrize(("query", "label"), [
    ("mug", "cup"), ("cup", "mug"), ("sofa", "couch"), ("couch", "sofa"),
    ("tv", "television"), ("television", "tv"), ("phone", "cellphone"), ("phone", "mobile"),
    ("fridge", "refrigerator"), ("bin", "trash can"), ("trash can", "dustbin"),
    ("remote", "remote control"),
])
def test_synonyms_score_in_the_synonym_tier(query: str, label: str) -> None:
    assert text_scores(query, [label]) == {label: 0.7}


def test_synonym_keeps_query_modifiers() -> None:
    # "red mug" is a red cup: the synonym of the head, modifiers kept; a blue cup is not
    assert text_scores("red mug", ["red cup", "cup", "blue cup"]) == {
        "red cup": 0.7, "cup": 0.595}


def test_category_drink_from_finds_exactly_the_drinkware() -> None:
    labels = ["cup", "mug", "glass", "bottle", "chair", "plate", "cupboard", "vegetable",
              "coffee mug", "drink"]
    scores = text_scores("something to drink from", labels)
    assert scores == {"cup": 0.5, "mug": 0.5, "glass": 0.5, "bottle": 0.5, "coffee mug": 0.45}
    assert categories_in("something to drink from") == ["drinkware"]
    assert categories_in("somewhere to sit") == ["seating"]
    assert categories_in("a table") == []


def test_tiers_rank_exact_over_synonym_over_category() -> None:
    scores = text_scores("drinking glass", ["drinking glass", "glass", "tumbler", "bottle",
                                            "chair"])
    assert scores == {"drinking glass": 1.0, "glass": 0.85, "tumbler": 0.7, "bottle": 0.5}
    ranked = sorted(scores, key=lambda k: -scores[k])
    assert ranked == ["drinking glass", "glass", "tumbler", "bottle"]


def test_head_match_with_other_modifiers_is_below_synonyms() -> None:
    assert text_scores("kitchen table", ["dining table", "kitchen table", "table",
                                         "kitchen"]) == {
        "dining table": 0.55, "kitchen table": 1.0, "table": 0.85}


def test_no_match_and_empty_query() -> None:
    assert text_scores("spaceship", HOUSEHOLD) == {}
    assert text_scores("", HOUSEHOLD) == {}
    assert text_scores("the", HOUSEHOLD) == {}


def test_synonyms_and_support_roles() -> None:
    assert synonyms("fridge") == ["icebox", "refrigerator"]
    assert synonyms("spaceship") == []
    assert support_role("kitchen table") == "surface"
    assert support_role("top drawers") == "container"
    assert support_role("bookcase") == "container"
    assert support_role("cup") == "container"
    assert support_role("cup holder") is None
    assert support_role("") is None


def test_label_matcher_agrees_with_text_scores() -> None:
    rng = random.Random(5)
    queries = ["cup", "mugs", "table", "something to drink from", "sofa", "the kitchen table",
               "phone", "bin", "red mug", "something to sit on", "furniture", "lamp",
               "nothing", "glass", "fridge"]
    pool = [*HOUSEHOLD, "red cup", "blue cup", "bar stool", "ceiling light", "lamp"]
    for _ in range(20):
        labels = rng.sample(pool, rng.randint(1, len(pool)))
        matcher = LabelMatcher(labels)
        for q in queries:
            assert matcher.scores(q) == dict(sorted(text_scores(q, labels).items())), q


def test_label_matcher_add_and_discard() -> None:
    m = LabelMatcher(["cup", "mug"])
    assert len(m) == 2 and "cup" in m
    m.add("cup")
    assert len(m) == 2
    m.discard("cup")
    m.discard("not there")
    assert m.scores("cup") == {"mug": 0.7}
    m.add("coffee cup")
    assert m.scores("cup") == {"coffee cup": 0.9, "mug": 0.7}
