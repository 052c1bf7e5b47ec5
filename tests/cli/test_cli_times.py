"""One time contract through the CLI: ``--since`` takes seconds, ISO 8601 or a clock time on the
store's day, and what a person reads shows ISO 8601 for Unix-looking times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import main

MIDNIGHT = 1_700_000_000.0 - 1_700_000_000.0 % 86400.0  # 2023-11-14T00:00:00Z
H = 3600.0


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cup seen every 20 s from 09:00 UTC; a book from 10:30; the last scan at 11:00."""
    path = tmp_path_factory.mktemp("times") / "day.loci"
    cup = Detection("cup", 0.9, (1.0, 0.0, 0.9), (0.1, 0.1, 0.1))
    book = Detection("book", 0.9, (3.0, 0.0, 0.9), (0.2, 0.15, 0.05))
    with ObjectMemory.open(path, scope="day") as mem:
        t = MIDNIGHT + 9 * H
        while t <= MIDNIGHT + 11 * H:
            mem.observe(t, [cup, book] if t >= MIDNIGHT + 10.5 * H else [cup])
            t += 20.0
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def appeared(out: str) -> list[dict]:
    return [e for e in map(json.loads, out.splitlines()) if e["kind"] == "APPEARED"]


@pytest.mark.parametrize("since", ["10:00", "2023-11-14T10:00:00Z", "2023-11-14 11:00+01:00",
                                   str(MIDNIGHT + 10 * H)])
def test_events_since_takes_seconds_iso_and_a_clock_time(day, capsys, since) -> None:
    code, out, _ = run(capsys, "events", str(day), "--since", since, "--json")
    assert code == 0
    (book,) = appeared(out)  # the cup appeared at 09:00, before: absent
    assert (book["label"], book["t"]) == ("book", MIDNIGHT + 10.5 * H)
    assert all(e["t"] >= MIDNIGHT + 10 * H for e in map(json.loads, out.splitlines()))


def test_events_text_shows_iso(day, capsys) -> None:
    code, out, _ = run(capsys, "events", str(day), "--since", "10:30", "--kind", "APPEARED")
    assert code == 0
    assert out.split()[:3] == ["2023-11-14T10:30:00.000Z", "APPEARED", "#2"]
    assert "1699957800" not in out


def test_a_clock_time_still_to_come_is_the_day_before(day, capsys) -> None:
    # the latest scan is 11:00: "12:00" is yesterday's noon, so everything is after it
    code, out, _ = run(capsys, "events", str(day), "--since", "12:00", "--json")
    assert code == 0 and [e["label"] for e in appeared(out)] == ["cup", "book"]


def test_audit_since_takes_the_same_forms(day, capsys) -> None:
    code, iso_out, _ = run(capsys, "audit", str(day), "--since", "2023-11-14T10:30:00Z",
                           "--json")
    assert code == 0
    code, clock_out, _ = run(capsys, "audit", str(day), "--since", "10:30", "--json")
    assert code == 0 and clock_out == iso_out
    times = [json.loads(line)["t"] for line in iso_out.splitlines()]
    assert times[0] == MIDNIGHT + 10.5 * H  # the scan the book appeared in; none before it
    code, out, _ = run(capsys, "audit", str(day), "--since", "10:30", "--limit", "1")
    assert code == 0 and out.startswith("2023-11-14T10:30:00.000Z") and "1699957800" not in out


@pytest.mark.parametrize("command", ["events", "audit"])
def test_a_bad_since_is_refused_with_the_forms_it_takes(day, capsys, command) -> None:
    code, out, err = run(capsys, command, str(day), "--since", "yesterday")
    assert (code, out) == (2, "")
    assert "--since: 'yesterday' is not a time" in err and "ISO 8601" in err and "10:00" in err
    code, _, err = run(capsys, command, str(day), "--since", "25:00")
    assert code == 2 and "not a clock time" in err


def test_query_since_ten_answers_in_iso(day, capsys) -> None:
    code, out, _ = run(capsys, "query", str(day), "what changed since 10:00")
    assert code == 0
    assert out.startswith("Since 2023-11-14T10:00:00Z: #2 book: appeared")
    assert "t=" not in out and "1699956000" not in out
