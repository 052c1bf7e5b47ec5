"""Long reads stream: ``iter_events``, ``iter_history`` and ``iter_audit`` read the store a page
at a time (each page its own query) and give exactly what ``events``, ``history`` and
``audit`` give."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import InvalidInput
from locimem.model import Event


@pytest.fixture
def mem() -> Iterator[ObjectMemory]:
    with ObjectMemory.open(":memory:", scope="s") as m:
        cup = Detection("cup", 0.9, (0.5, 0.5, 0.9), (0.08, 0.08, 0.1))
        book = Detection("book", 0.9, (1.5, 0.5, 0.9), (0.2, 0.15, 0.04))
        for t in range(0, 20, 2):
            m.observe(float(t), [cup, book])
        m.relabel(1, "mug", actor="alice", reason="it is a mug")
        m.observe(30.0, [Detection("mug", 0.9, (3.5, 0.5, 0.9), (0.08, 0.08, 0.1))])
        m.set_attributes(2, {"color": "red"}, actor="bob")
        m.forget(2, actor="bob", reason="not ours")
        yield m


class _Counting:
    """Counts the store's page reads of one method."""

    def __init__(self, mem: ObjectMemory, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = getattr(mem._live.store, method)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(mem._live.store, method, counted)


@pytest.mark.parametrize("filters", [{}, {"kind": "PROMOTED"}, {"object_id": 1},
                                     {"since": 4.0, "until": 18.0}, {"label": "mug"},
                                     {"limit": 3}])
def test_iter_events_gives_what_events_gives_in_any_page_size(mem: ObjectMemory,
                                                              filters: dict) -> None:
    expected = mem.events(**filters)
    assert expected  # every filter here matches something
    for page in (1, 2, 1000):
        assert list(mem.iter_events(**filters, page=page)) == expected
    assert all(ev.object_id != 2 for ev in mem.iter_events(page=1))  # forgotten: hidden


def test_iter_history_merges_evidence_and_events_in_record_order(mem: ObjectMemory) -> None:
    store, scope = mem._live.store, mem.scope
    full = sorted([*store.observations(scope, object_id=1), *store.events(scope, object_id=1)],
                  key=lambda r: r.seq)  # everything recorded of object 1, read whole
    for page in (1, 3, 1000):
        assert list(mem.iter_history(1, page=page)) == full == mem.history(1)
    assert any(isinstance(r, Event) for r in full) and not all(isinstance(r, Event)
                                                               for r in full)


def test_iter_audit_gives_what_audit_gives(mem: ObjectMemory) -> None:
    expected = mem.audit()
    assert [e.kind for e in expected][-4:] == ["correction", "scan", "correction", "forget"]
    for page in (1, 2, 1000):
        assert list(mem.iter_audit(page=page)) == expected
    assert list(mem.iter_audit(actor="bob", page=1)) == mem.audit(actor="bob")
    assert list(mem.iter_audit(limit=2, page=1)) == expected[:2]


def test_a_stream_reads_only_the_pages_it_is_asked_for(mem: ObjectMemory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counting(mem, "events", monkeypatch)
    stream = mem.iter_events(page=2)
    assert counter.calls == 0  # nothing is read before the first item is asked for
    first_three = list(itertools.islice(stream, 3))
    assert len(first_three) == 3 and counter.calls == 2  # two pages of two
    assert len(list(stream)) == len(mem.events()) - 3


def test_a_stream_checks_its_arguments_at_the_call(mem: ObjectMemory) -> None:
    with pytest.raises(InvalidInput, match="kind"):
        mem.iter_events(kind="BOGUS")  # raises here, not at the first next()
    with pytest.raises(InvalidInput, match="page"):
        mem.iter_audit(page=0)
    with pytest.raises(InvalidInput, match="limit"):
        mem.iter_events(limit=0)
