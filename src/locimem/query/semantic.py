"""``find(text)``: whole-word label matching with synonyms, plus text-embedding similarity when
an :class:`~locimem.language.encoder.Encoder` is configured.

The index is a cache over the objects' labels, kept in step with the memory (``set`` on every
label change, ``remove`` when an object is forgotten) and rebuilt on open. An object's embedding
is its label's, so the vector index holds one vector per distinct label, not per object: a
search ranks the labels and then lists each label's objects (:meth:`SemanticIndex.by_embedding`).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

import numpy as np

from locimem.index.vectors import ExactIndex, VectorIndex
from locimem.language.encoder import Encoder
from locimem.language.text import LabelMatcher
from locimem.model.rows import RowChanges
from locimem.tracker.state import MemoryState

POOL_PER_LABEL = 50  # ties within a label are ranked among its newest identities
QUERIES_KEPT = 256  # query embeddings kept (see SemanticIndex._query)
MIN_COSINE = 0.45  # below this an embedding match is noise (MiniLM: mug~cup 0.71, mug~chair 0.30)


@dataclass(frozen=True, slots=True)
class Match:
    """One object a search found: its score in (0, 1] and how (``text`` or ``embedding``)."""

    object_id: int
    score: float
    how: str


class SemanticIndex:
    """Labels (and, with an encoder, label embeddings) of the objects, searchable by text."""

    def __init__(self, encoder: Encoder | None = None,
                 vector_index: Callable[[int], VectorIndex] | None = None) -> None:
        self.encoder = encoder
        self._make_index = vector_index or ExactIndex
        self._label_of: dict[int, str] = {}
        self._by_label: dict[str, list[int]] = {}  # ids per label, ascending
        self._matcher = LabelMatcher()
        self._vectors: VectorIndex | None = None  # one vector per label, keyed by label key
        self._label_vec: dict[str, np.ndarray] = {}  # embeddings computed so far
        self._key_of: dict[str, int] = {}  # label -> its key in the vector index
        self._label_at: dict[int, str] = {}  # key -> label
        self._next_key = 0
        # the latest queries' embeddings (a robot's or a model's questions repeat): up to
        # QUERIES_KEPT texts, the least recently asked dropped first
        self._query_vec: dict[str, np.ndarray] = {}
        if encoder is not None:
            self._vectors = self._make_index(encoder.dim)

    def __len__(self) -> int:
        return len(self._label_of)

    def _embed(self, labels: Iterable[str]) -> None:
        missing = sorted({lab for lab in labels if lab not in self._label_vec})
        if missing and self.encoder is not None:
            for label, vec in zip(missing, self.encoder.encode(missing), strict=True):
                self._label_vec[label] = np.asarray(vec, dtype=np.float32)

    def set_many(self, items: Iterable[tuple[int, str]]) -> None:
        """Index many (object id, label) pairs at once (one encoder call for new labels)."""
        items = list(items)
        self._embed(label for _, label in items)
        for oid, label in items:
            self.set(oid, label)

    def set(self, object_id: int, label: str) -> None:
        """Index an object under ``label`` (or re-index it after a label change)."""
        old = self._label_of.get(object_id)
        if old == label:
            return
        if label not in self._by_label:
            self._add_label(label)
        if old is not None:
            self._unlink(object_id, old)
        self._label_of[object_id] = label
        bisect.insort(self._by_label[label], object_id)

    def _add_label(self, label: str) -> None:
        """A label's first object is arriving: make the label searchable (its embedding, the
        step that can fail, comes first)."""
        if self._vectors is not None:
            self._embed([label])
            key, self._next_key = self._next_key, self._next_key + 1
            self._vectors.add(key, self._label_vec[label])
            self._key_of[label], self._label_at[key] = key, label
        self._by_label[label] = []
        self._matcher.add(label)

    def _unlink(self, object_id: int, label: str) -> None:
        ids = self._by_label[label]
        i = bisect.bisect_left(ids, object_id)
        if i < len(ids) and ids[i] == object_id:
            del ids[i]
        if not ids:  # the label's last object left
            del self._by_label[label]
            self._matcher.discard(label)
            if self._vectors is not None:
                key = self._key_of.pop(label)
                del self._label_at[key]
                self._vectors.remove(key)

    def remove(self, object_id: int) -> None:
        label = self._label_of.pop(object_id, None)
        if label is not None:
            self._unlink(object_id, label)

    def sync(self, state: MemoryState, changes: RowChanges) -> None:
        """Follow one commit: the objects it wrote take their label, the ones it removed
        (forgotten, expired, merged away) leave the index."""
        for oid in sorted({*changes.touched, *changes.removed_objects}):
            obj = state.objects.get(oid)
            if obj is None or oid in state.tombstones:
                self.remove(oid)
            else:
                self.set(oid, obj.label)

    def labels(self) -> list[str]:
        """Every label some indexed object has, sorted."""
        return sorted(self._by_label)

    def ids_for(self, phrase: str, min_score: float = 0.85) -> dict[int, float]:
        """Ids of objects whose label is the phrase (score 1), the phrase with modifiers added
        ("table" -> "kitchen table", 0.9) or the phrase's head word ("coffee table" ->
        "table", 0.85), with their label's score: whole words, no synonyms."""
        out: dict[int, float] = {}
        for label, score in self._matcher.scores(phrase).items():
            if score >= min_score:
                for oid in self._by_label.get(label, ()):
                    out[oid] = score
        return out

    def search(self, text: str, top_k: int, accept: Callable[[int], bool],
               rank: Callable[[int], tuple]) -> list[Match]:
        """The ``top_k`` best objects for ``text`` that ``accept`` admits: text scores
        (exact > synonym > category) and, with an encoder, cosine similarity of label
        embeddings (at least ``MIN_COSINE``); each object keeps its better score. Ties go by
        ``rank(id)`` (e.g. confirmed and recent first), ranked among the newest
        ``max(POOL_PER_LABEL, 4 * top_k)`` admitted identities of each label, so the cost does
        not grow with how many objects share a label."""
        best: dict[int, Match] = {}
        pool = max(POOL_PER_LABEL, 4 * top_k)
        for label, score in self._matcher.scores(text).items():
            taken = 0
            for oid in reversed(self._by_label.get(label, ())):  # newest identities first
                if taken >= pool:
                    break
                if accept(oid):
                    best[oid] = Match(oid, score, "text")
                    taken += 1
        if self.encoder is not None:
            query = self._query(text)
            # over-fetch: some hits may be filtered out by ``accept``
            for cos, oid in self.by_embedding(query, 4 * top_k):
                if cos < MIN_COSINE:
                    break
                # a text match keeps "text" unless the embedding is clearly better (float32
                # scores a label against itself a rounding error above 1.0)
                if accept(oid) and (oid not in best or best[oid].score < cos - 1e-5):
                    best[oid] = Match(oid, round(min(float(cos), 1.0), 6), "embedding")
        ranked = sorted(best.values(), key=lambda m: (-m.score, rank(m.object_id)))
        return ranked[:top_k]

    def _query(self, text: str) -> np.ndarray:
        """``text``'s embedding, from the encoder or the queries kept (the same vector: the
        encoder is a pure function of the text)."""
        kept = self._query_vec
        vec = kept.pop(text, None)
        if vec is None:
            assert self.encoder is not None
            vec = self.encoder.encode([text])[0]
            vec.flags.writeable = False  # kept: nobody may change it
            if len(kept) >= QUERIES_KEPT:
                del kept[next(iter(kept))]
        kept[text] = vec  # the most recent last
        return vec

    def by_embedding(self, query: np.ndarray, k: int, allow: Collection[int] | None = None
                     ) -> list[tuple[float, int]]:
        """The ``k`` objects whose label embedding is most similar to ``query`` (an encoder
        vector), as ``(cosine, object id)``: highest first, ties (within ``TIE_TOL``) by the
        smaller id, only ids in ``allow`` when it is given — the order a
        :class:`~locimem.index.vectors.VectorIndex` holding one vector per object would give
        (but for a chain of near-ties longer than ``TIE_TOL`` across the k-th place, which
        either may cut at a different link).

        The vector index ranks the labels (tied labels already report one score); each label's
        objects follow in id order, merged across labels of equal score. More labels are
        fetched until a lower score follows the label group that completes the ``k``, so no
        label tied with it is cut off."""
        if self._vectors is None or k <= 0:
            return []
        n_labels = len(self._vectors)
        fetch = min(k, n_labels)  # every label has at least one object
        while True:
            hits = self._vectors.search(query, fetch)
            out: list[tuple[float, int]] = []
            completed_at = -math.inf  # the score of the label group that completes the k
            for score, group in itertools.groupby(hits, key=lambda hit: hit[0]):
                ids = heapq.merge(*(self._by_label[self._label_at[key]] for _, key in group))
                if allow is not None:
                    ids = (oid for oid in ids if oid in allow)
                out += [(score, oid) for oid in itertools.islice(ids, k - len(out))]
                if len(out) == k:
                    completed_at = score
                    break
            if fetch == n_labels or hits[-1][0] < completed_at:
                return out
            fetch = min(2 * fetch, n_labels)
