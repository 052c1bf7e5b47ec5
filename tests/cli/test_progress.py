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
