"""Label and text matching: whole words, plural folding, a household synonym and category table.

Matching is on whole words, never substrings: "table" never matches "vegetable", "cup" never
matches "cupboard". Words are lower-cased and folded to a singular form on both sides
("cups" ~ "cup", "glasses" ~ "glass", "shelves" ~ "shelf").

:func:`text_scores` ranks labels for a query in three strict tiers::

    exact     1.00  same words                   "coffee cup" for "coffee cup"
              0.90  label adds modifiers         "coffee cup" for "cup"
              0.85  query adds modifiers         "cup" for "red cup"
    synonym   0.70  a synonym of the query       "mug" for "cup", "couch" for "sofa"
              0.63 / 0.595  with modifiers, as above
    category  0.50  a member of a category the query names   "glass" for "something to drink from"
              0.45 / 0.425  with modifiers
    mention   0.30  the query's words inside the label, not as its head: "cup holder" for "cup"

The head of an English noun phrase is its last word, so "coffee cup" is a cup but a
"cup holder" is not: only the mention tier (below every category match) admits it.

Everything here is pure and deterministic; the tables are plain module data.
"""

from __future__ import annotations

from collections.abc import Iterable

from locimem.words import Phrase, fold, singular, support_role, words

__all__ = [
    "CATEGORIES",
    "SYNONYM_GROUPS",
    "LabelMatcher",
    "categories_in",
    "fold",
    "phrase_at",
    "phrase_in",
    "singular",
    "support_role",
    "synonyms",
    "text_scores",
    "words",
]


# Tier weights and the positional factors they are multiplied by.
EXACT, SYNONYM, CATEGORY, MENTION = 1.0, 0.7, 0.5, 0.3
WHOLE, LABEL_MORE_SPECIFIC, QUERY_MORE_SPECIFIC, SAME_HEAD = 1.0, 0.9, 0.85, 0.55

def phrase_at(needle: Phrase, hay: Phrase) -> list[int]:
    """Start positions where ``needle`` occurs in ``hay`` as whole, consecutive words."""
    n = len(needle)
    if n == 0 or n > len(hay):
        return []
    return [i for i in range(len(hay) - n + 1) if hay[i:i + n] == needle]


def phrase_in(needle: Phrase, hay: Phrase) -> bool:
    """True when ``needle`` occurs in ``hay`` as whole, consecutive words."""
    return bool(phrase_at(needle, hay))


# --------------------------------------------------------------------------------------------
# the tables

#: Groups of names for the same kind of household thing (each group is symmetric).
SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("cup", "mug", "teacup"),
    ("glass", "tumbler", "drinking glass"),
    ("flask", "thermos", "vacuum flask"),
    ("sofa", "couch", "settee", "loveseat"),
    ("armchair", "easy chair", "recliner"),
    ("tv", "television", "telly", "tv set"),
    ("phone", "cellphone", "cell phone", "mobile phone", "smartphone", "mobile", "telephone"),
    ("fridge", "refrigerator", "icebox"),
    ("bin", "trash can", "trash bin", "trashcan", "garbage can", "garbage bin", "rubbish bin",
     "waste bin", "wastebasket", "waste basket", "dustbin"),
    ("remote", "remote control", "tv remote", "clicker"),
    ("laptop", "notebook computer", "notebook pc"),
    ("computer", "pc", "desktop computer"),
    ("monitor", "computer monitor", "display"),
    ("cabinet", "cupboard"),
    ("counter", "countertop", "worktop"),
    ("nightstand", "night stand", "bedside table", "night table", "bedside cabinet"),
    ("dresser", "chest of drawers"),
    ("wardrobe", "closet", "armoire"),
    ("bookshelf", "bookcase", "book shelf"),
    ("rug", "carpet"),
    ("pillow", "cushion"),
    ("lamp", "light"),
    ("faucet", "tap"),
    ("stove", "cooktop", "hob"),
    ("microwave", "microwave oven"),
    ("sink", "washbasin", "wash basin", "basin"),
    ("toilet", "lavatory", "wc", "loo"),
    ("bathtub", "bath", "tub"),
    ("backpack", "rucksack", "knapsack"),
    ("handbag", "purse"),
    ("spectacles", "eyeglasses"),
    ("headphones", "headset", "earphones", "earbuds"),
    ("charger", "power adapter", "charging cable"),
    ("pen", "ballpoint", "biro"),
    ("plant", "potted plant", "houseplant", "house plant"),
    ("picture", "painting", "picture frame"),
    ("dining table", "dinner table"),
    ("coffee table", "cocktail table"),
    ("washing machine", "washer", "laundry machine"),
    ("dryer", "tumble dryer", "clothes dryer"),
    ("vacuum", "vacuum cleaner", "hoover"),
    ("tablet", "ipad"),
    ("box", "carton", "cardboard box"),
    ("plate", "dish"),
    ("pan", "frying pan", "skillet"),
    ("pot", "saucepan", "cooking pot"),
    ("jacket", "coat"),
    ("sweater", "jumper", "pullover"),
    ("trousers", "pants"),
    ("sneaker", "trainer", "running shoe"),
)

#: Categories: ``name -> (trigger phrases, member phrases)``. A query that contains a trigger
#: (as whole words) names the category; labels headed by a member match it.
CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "drinkware": (
        ("drink", "drinking", "drinkware", "beverage", "sip"),
        ("cup", "mug", "glass", "bottle", "tumbler", "teacup", "flask", "thermos", "jug",
         "pitcher", "goblet"),
    ),
    "seating": (
        ("sit", "seat", "seating", "sitting"),
        ("chair", "armchair", "sofa", "couch", "stool", "bench", "ottoman", "recliner",
         "settee", "loveseat"),
    ),
    "furniture": (
        ("furniture",),
        ("table", "chair", "sofa", "couch", "bed", "desk", "shelf", "bookshelf", "bookcase",
         "cabinet", "cupboard", "dresser", "wardrobe", "nightstand", "stool", "bench",
         "armchair", "ottoman", "counter", "sideboard"),
    ),
    "surface": (
        ("surface", "put something on", "place something on"),
        ("table", "desk", "counter", "countertop", "shelf", "nightstand", "sideboard"),
    ),
    "electronics": (
        ("electronic", "electronics", "device", "gadget"),
        ("phone", "cellphone", "smartphone", "laptop", "computer", "tablet", "tv",
         "television", "remote", "monitor", "keyboard", "mouse", "speaker", "camera",
         "charger", "headphones", "router", "console"),
    ),
    "appliance": (
        ("appliance",),
        ("fridge", "refrigerator", "freezer", "microwave", "oven", "stove", "toaster",
         "dishwasher", "kettle", "washing machine", "dryer", "blender", "coffee maker",
         "vacuum"),
    ),
    "cookware": (
        ("cook", "cooking", "cookware"),
        ("pot", "pan", "saucepan", "wok", "stove", "oven", "microwave", "kettle", "spatula"),
    ),
    "food": (
        ("eat", "eating", "food", "snack", "meal"),
        ("apple", "banana", "orange", "pear", "grape", "sandwich", "bread", "pizza", "cake",
         "donut", "carrot", "broccoli", "hot dog", "cookie", "cereal", "fruit"),
    ),
    "fruit": (
        ("fruit",),
        ("apple", "banana", "orange", "pear", "grape", "lemon", "lime", "strawberry",
         "peach", "mango", "kiwi", "pineapple", "watermelon", "plum", "cherry"),
    ),
    "cutlery": (
        ("cutlery", "utensil", "silverware", "flatware"),
        ("fork", "knife", "spoon", "chopsticks", "ladle", "whisk", "spatula"),
    ),
    "tableware": (
        ("tableware", "dishware", "crockery"),
        ("plate", "bowl", "cup", "mug", "glass", "saucer"),
    ),
    "container": (
        ("container", "storage", "put things in", "keep things in"),
        ("box", "basket", "bin", "bag", "jar", "bowl", "drawer", "crate", "bucket", "tub",
         "tin", "container"),
    ),
    "clothing": (
        ("clothing", "clothes", "wear", "garment", "apparel"),
        ("shirt", "t shirt", "jacket", "coat", "sweater", "hoodie", "trousers", "pants",
         "jeans", "shorts", "skirt", "dress", "sock", "shoe", "hat", "cap", "scarf", "glove",
         "sneaker", "boot"),
    ),
    "reading": (
        ("read", "reading"),
        ("book", "magazine", "newspaper", "notebook", "kindle", "e reader"),
    ),
    "writing": (
        ("write", "writing", "stationery"),
        ("pen", "pencil", "marker", "crayon", "notebook", "paper"),
    ),
    "sleeping": (
        ("sleep", "sleeping", "lie down", "nap"),
        ("bed", "sofa", "couch", "mattress", "hammock"),
    ),
    "lighting": (
        ("lighting", "illumination", "light source"),
        ("lamp", "light", "candle", "torch", "flashlight", "chandelier"),
    ),
    "cutting": (
        ("cut", "cutting"),
        ("knife", "scissors", "cutter", "saw", "blade"),
    ),
    "cleaning": (
        ("clean", "cleaning"),
        ("sponge", "broom", "mop", "vacuum", "towel", "cloth", "brush", "detergent", "soap"),
    ),
    "toy": (
        ("toy", "play", "plaything"),
        ("teddy bear", "ball", "doll", "lego", "puzzle", "kite", "frisbee", "toy"),
    ),
}

# --------------------------------------------------------------------------------------------
# expansion


def _build_synonyms() -> dict[Phrase, frozenset[Phrase]]:
    out: dict[Phrase, set[Phrase]] = {}
    for group in SYNONYM_GROUPS:
        phrases = {fold(p) for p in group}
        for p in phrases:
            out.setdefault(p, set()).update(phrases)
    return {p: frozenset(s - {p}) for p, s in out.items()}


_SYN = _build_synonyms()
_CATS: dict[str, tuple[tuple[Phrase, ...], tuple[Phrase, ...]]] = {
    name: (tuple(fold(t) for t in triggers), tuple(fold(m) for m in members))
    for name, (triggers, members) in CATEGORIES.items()
}
_LEADING_FILLERS = frozenset({
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "this", "that", "these",
    "those", "some", "any", "all",
})


def synonyms(text: str) -> list[str]:
    """Synonyms the built-in table knows for ``text`` (as folded phrases, sorted).

    >>> synonyms("sofa")
    ['couch', 'loveseat', 'settee']
    """
    return sorted(" ".join(p) for p in _SYN.get(fold(text), ()))


def categories_in(text: str) -> list[str]:
    """Names of the categories ``text`` names through a trigger phrase, sorted.

    >>> categories_in("something to drink from")
    ['drinkware']
    """
    q = fold(text)
    return sorted(name for name, (triggers, _) in _CATS.items()
                  if any(phrase_in(t, q) for t in triggers))


def _query_phrase(text: str) -> Phrase:
    q = list(fold(text))
    while q and q[0] in _LEADING_FILLERS:
        q.pop(0)
    return tuple(q)


def _positional(q: Phrase, label: Phrase, *, allow_mention: bool) -> float:
    """How the phrase ``q`` sits in ``label``: whole, as its head, containing it, or inside."""
    if not q or not label:
        return 0.0
    if q == label:
        return WHOLE
    if len(label) > len(q) and label[-len(q):] == q:
        return LABEL_MORE_SPECIFIC
    if len(q) > len(label) and q[-len(label):] == label:
        return QUERY_MORE_SPECIFIC
    if not allow_mention:
        return 0.0
    if q[-1] == label[-1]:
        return SAME_HEAD
    if phrase_in(q, label):
        return MENTION
    return 0.0


def _synonym_phrases(q: Phrase) -> set[Phrase]:
    """Every synonym of ``q``, and of each of its tails with the modifiers kept
    ("red mug" -> "red cup", "red teacup")."""
    out: set[Phrase] = set()
    for cut in range(len(q)):
        tail = q[cut:]
        for syn in _SYN.get(tail, ()):
            out.add(q[:cut] + syn)
    return out


class _Plan:
    """A query resolved into the phrases each tier looks for."""

    __slots__ = ("category", "exact", "synonym")

    def __init__(self, text: str) -> None:
        q = _query_phrase(text)
        self.exact: tuple[Phrase, ...] = (q,) if q else ()
        self.synonym = tuple(sorted(_synonym_phrases(q))) if q else ()
        full = fold(text)
        members: set[Phrase] = set()
        for triggers, cat_members in _CATS.values():
            if any(phrase_in(t, full) for t in triggers):
                members.update(cat_members)
        self.category = tuple(sorted(members))

    def phrases(self) -> Iterable[Phrase]:
        yield from self.exact
        yield from self.synonym
        yield from self.category

    def score(self, label: Phrase) -> float:
        best = 0.0
        for q in self.exact:
            best = max(best, EXACT * _positional(q, label, allow_mention=True))
        if best >= SYNONYM:
            return best
        for q in self.synonym:
            best = max(best, SYNONYM * _positional(q, label, allow_mention=False))
        if best >= CATEGORY:
            return best
        for q in self.category:
            best = max(best, CATEGORY * _positional(q, label, allow_mention=False))
        return best


def text_scores(query: str, labels: Iterable[str]) -> dict[str, float]:
    """Score every label that matches ``query``; labels that do not match are absent.

    Scores are in (0, 1] and rank exact > synonym > category > mention (see the module
    docstring). Keys are the labels exactly as given.

    >>> text_scores("mug", ["cup", "coffee mug", "chair", "mug"])
    {'cup': 0.7, 'coffee mug': 0.9, 'mug': 1.0}
    >>> text_scores("table", ["vegetable", "kitchen table", "table lamp"])
    {'kitchen table': 0.9, 'table lamp': 0.3}
    """
    plan = _Plan(query)
    out: dict[str, float] = {}
    for label in labels:
        score = plan.score(fold(label))
        if score > 0.0:
            out[label] = round(score, 6)
    return out


class LabelMatcher:
    """:func:`text_scores` over a changing set of labels, without scanning them all.

    Labels are indexed by their folded words; a query scores only the labels that share the
    first or the last word of one of its phrases.
    """

    def __init__(self, labels: Iterable[str] = ()) -> None:
        self._folded: dict[str, Phrase] = {}
        self._by_word: dict[str, set[str]] = {}
        for label in labels:
            self.add(label)

    def __len__(self) -> int:
        return len(self._folded)

    def __contains__(self, label: object) -> bool:
        return label in self._folded

    def add(self, label: str) -> None:
        """Index ``label`` (no-op if present)."""
        if label in self._folded:
            return
        folded = fold(label)
        self._folded[label] = folded
        for w in set(folded):
            self._by_word.setdefault(w, set()).add(label)

    def discard(self, label: str) -> None:
        """Forget ``label`` (no-op if absent)."""
        folded = self._folded.pop(label, None)
        if folded is None:
            return
        for w in set(folded):
            bucket = self._by_word[w]
            bucket.discard(label)
            if not bucket:
                del self._by_word[w]

    def scores(self, query: str) -> dict[str, float]:
        """Like :func:`text_scores` over the indexed labels."""
        plan = _Plan(query)
        candidates: set[str] = set()
        for phrase in plan.phrases():
            candidates.update(self._by_word.get(phrase[0], ()))
            candidates.update(self._by_word.get(phrase[-1], ()))
        out: dict[str, float] = {}
        for label in sorted(candidates):
            score = plan.score(self._folded[label])
            if score > 0.0:
                out[label] = round(score, 6)
        return out
