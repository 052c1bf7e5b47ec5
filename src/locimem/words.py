"""How labels are spelled: whole words, folded to a singular, and what a label's head word
says about the thing (a surface things stand on, a container things go in).

At the bottom of the package: the scene graph (support roles) and the queries (label matching,
:mod:`locimem.language.text`) both read labels through these.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

__all__ = ["Phrase", "fold", "singular", "support_role", "words"]

Phrase = tuple[str, ...]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# --------------------------------------------------------------------------------------------
# words and plural folding

_IRREGULAR = {
    "people": "person", "children": "child", "men": "man", "women": "woman", "mice": "mouse",
    "feet": "foot", "teeth": "tooth", "geese": "goose", "knives": "knife", "wives": "wife",
    "lives": "life", "leaves": "leaf", "shelves": "shelf", "halves": "half", "loaves": "loaf",
    "scarves": "scarf", "wolves": "wolf", "calves": "calf", "thieves": "thief",
    "potatoes": "potato", "tomatoes": "tomato", "mangoes": "mango", "heroes": "hero",
    "echoes": "echo", "buses": "bus", "tvs": "tv", "pcs": "pc", "cacti": "cactus",
    "fungi": "fungus", "dice": "die", "indices": "index", "matrices": "matrix",
    "vertices": "vertex", "radii": "radius",
}
_INVARIANT = frozenset({
    "news", "series", "species", "lens", "atlas", "canvas", "chaos", "iris", "always",
    "perhaps", "christmas", "yes", "thanks", "this", "has", "was", "does", "is", "as", "us",
    "its", "his", "hers", "ours", "yours", "theirs", "less", "unless", "across", "plus",
    "minus", "whereas", "towards", "upwards", "downwards", "afterwards",
})
# Singulars in -ie, whose plurals must not fold to -y ("cookies" -> "cookie", not "cooky").
_IE_SINGULARS = frozenset({
    "cookie", "movie", "hoodie", "beanie", "brownie", "smoothie", "selfie", "zombie", "rookie",
    "pixie", "calorie", "lingerie", "sortie", "prairie", "necktie", "bowtie", "goalie",
    "veggie", "birdie", "genie", "auntie", "freebie", "collie", "rotisserie",
})


def words(text: str) -> Phrase:
    """Lower-case words of ``text``: runs of letters and digits (any script). Accents are
    kept; apostrophes are dropped ("men's" -> "mens", "don't" -> "dont"); everything else
    separates words ("trash_can" -> ("trash", "can"))."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    text = re.sub(r"(?<=[^\W_])'(?=[^\W_])", "", text)
    return tuple(_WORD.findall(text))


def singular(word: str) -> str:
    """A simple English singular for a lower-case word ("cups" -> "cup", "boxes" -> "box",
    "batteries" -> "battery", "knives" -> "knife"); words it does not know stay as they are.
    Applied to both sides of every comparison, so its few imperfections cancel out."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word in _INVARIANT or not word.endswith("s") or word.isdigit():
        return word
    if word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        stem = word[:-1]
        return stem if stem in _IE_SINGULARS else word[:-3] + "y"
    if word.endswith(("sses", "xes", "zzes", "ches", "shes")):
        return word[:-2]
    return word[:-1]


def fold(text: str) -> Phrase:
    """The words of ``text``, each folded to its singular."""
    return tuple(singular(w) for w in words(text))


# What a piece of furniture does with what is placed at it, by the head word of its label:
# things go *on* a surface and *in* a container (used by the scene relations).
_SURFACES = frozenset(fold(" ".join((
    "table desk counter countertop worktop shelf nightstand bed sofa couch chair stool bench",
    "ottoman tray sideboard windowsill mantel mantelpiece stand island board cart trolley",
))))
_CONTAINERS = frozenset(fold(" ".join((
    "drawer cabinet cupboard box bin can basket bag fridge refrigerator freezer oven",
    "microwave dishwasher wardrobe closet bookcase bookshelf bowl cup mug jar vase pot",
    "sink bathtub tub bucket crate case chest container locker pan",
))))


def support_role(label: str) -> Literal["surface", "container"] | None:
    """Whether things sit *on* (``"surface"``) or *in* (``"container"``) a labelled object,
    from the head word of its label; None when the table does not say.

    >>> support_role("kitchen table"), support_role("top drawer"), support_role("cup holder")
    ('surface', 'container', None)
    """
    folded = fold(label)
    if not folded:
        return None
    head = folded[-1]
    if head in _SURFACES:
        return "surface"
    if head in _CONTAINERS:
        return "container"
    return None
