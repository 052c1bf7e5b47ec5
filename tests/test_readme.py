"""The README's code runs, prints what its comments say, and its commands exist."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from locimem.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_quick_start_runs_and_prints_what_it_claims(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks()
    assert len(blocks) == 5
    out = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        for block in blocks:  # the second continues from the first's store
            exec(compile(block, "README.md", "exec"), namespace)
    assert out.getvalue().splitlines() == [
        "(1,)",
        "[('APPEARED', 1), ('PROMOTED', 1)]",
        "cup confirmed 1.0",
        "The cup (#1) is at (0.40, 0.10, 0.90); last seen just now (t=10.0 s).",
        "vase {'cup': 5.4}",
        "(None,) {0: 'forgotten'}",
        "[('correction', 'alice', 'it is a vase, not a cup'), ('forget', 'alice', 'not ours')]",
        "On the kitchen table (#1): mug (#2).",
        "['mug']",
        "The mug (#2) is on the kitchen table (#1) in the kitchen; last seen just now (t=10.0 s).",
        "14",
        "[1]",
        'The "mug" (#1) is at (0.80, 1.00, 0.80); last seen just now (t=10.0 s).',
        "[('moved', 'confirmed', 2)]",
        "[4.1, 1.0, 0.95] [2]",
    ]
    # and the comments in the README say the same
    text = "\n".join(blocks)
    for claim in ("# (1,)", "# cup confirmed 1.0", "# vase {'cup': 5.4}",
                  "# (None,) {0: 'forgotten'}"):
        assert claim in text
    assert (tmp_path / "home.loci").exists()


def test_the_two_setup_commands_are_the_ci_command():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    test_cmd = ('python -m pip install -e '
                '".[test,text,vectors,mcp,usd,graph,kuzu,rerun,ros,toml,postgres]" '
                "&& python -m pytest")
    assert test_cmd in text and test_cmd in ci
    assert "python -m pip install . && locimem demo" in text


def test_every_documented_command_has_help():
    commands = sorted(set(re.findall(r"`locimem (\w+)", README.read_text())))
    assert commands == ["audit", "bench", "compact", "consolidate", "deltas", "demo", "describe",
                        "events",
                        "export", "find", "forget", "history", "import", "ingest", "inspect",
                        "map", "mcp", "merge", "migrate", "move", "near", "query", "recall",
                        "relabel",
                        "rerun", "restore", "rooms", "set", "snapshot", "split", "validate"]
    for command in commands:  # in process: 29 interpreters took half a minute
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0
        assert f"usage: locimem {command}" in out.getvalue()
