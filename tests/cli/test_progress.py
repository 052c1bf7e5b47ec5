"""The progress bar (tqdm): every item yielded in order, a bar only on a terminal."""

from __future__ import annotations

import io

from locimem.progress import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_only() -> None:
    tty = Terminal()
    assert list(progress(range(25), label="ingesting", stream=tty, unit="scans")) == \
        list(range(25))
    drawn = tty.getvalue()
    assert "ingesting: 100%" in drawn and "25/25" in drawn and "scans/s" in drawn
    assert drawn.endswith("\n")
    piped = io.StringIO()
    assert list(progress(iter("abc"), total=3, stream=piped)) == ["a", "b", "c"]
    assert piped.getvalue() == ""


def test_quiet_commands_draw_nothing(tmp_path, capsys) -> None:
    from locimem import Detection, ObjectMemory
    from locimem.cli import main

    store = tmp_path / "home.loci"
    with ObjectMemory.open(store, scope="home") as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (1, 1, 1), (0.1, 0.1, 0.1))])
    assert main(["snapshot", str(store), "--out", str(tmp_path / "s.snap"), "--quiet"]) == 0
    assert main(["restore", str(tmp_path / "s.snap"), str(tmp_path / "r.loci"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


class _Recorder:
    """A progress callback that records what it was given and how far it was iterated."""

    def __init__(self) -> None:
        self.bars: list[dict] = []

    def __call__(self, items, total=None, label=""):
        bar = {"label": label, "total": total, "steps": 0}
        self.bars.append(bar)
        for item in items:
            bar["steps"] += 1
            yield item


def test_ticker_counts_steps_and_finishes_the_bar() -> None:
    from locimem.progress import Ticker

    rec = _Recorder()
    steps = Ticker(rec, 4, "work")
    steps.tick()
    assert rec.bars == [{"label": "work", "total": 4, "steps": 2}]  # drawn at 0, then one
    steps.close()
    assert rec.bars[0]["steps"] == 4  # closing fills it
    Ticker(None, 3).close()  # no bar: nothing to do


def test_validate_and_compact_show_their_steps(tmp_path) -> None:
    from locimem import Detection, ObjectMemory
    from locimem.interchange.validate import FILE_RULES, SCOPE_RULES, validate_store

    path = tmp_path / "p.loci"
    with ObjectMemory.open(path, scope="s") as mem:
        for t in range(40):
            mem.observe(float(t), [Detection("cup", 0.9, (1, 1, 0.9), (0.1, 0.1, 0.1))])
        rec = _Recorder()
        report = mem.compact(older_than_s=5.0, progress=rec, reclaim=True)
        assert report.removed > 0
        assert rec.bars == [{"label": "compacting", "total": 5, "steps": 5}]
    rec = _Recorder()
    assert validate_store(path, progress=rec).ok
    # one step a rule checked (and one drawn at 0): the file's rules, then the scope's
    assert rec.bars[0]["label"] == "validating"
    assert rec.bars[0]["steps"] == 1 + len(FILE_RULES) + len(SCOPE_RULES)
