"""The README's code runs, prints what its comments say, and its commands exist."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_quick_start_runs_and_prints_what_it_claims(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (block,) = _python_blocks()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    printed = out.getvalue().splitlines()
    # every "# <expected>" comment that follows a print(...) line is checked
    expected = [
        line.split("# ", 1)[1].split(":")[0].strip()
        for line in block.splitlines()
        if line.strip().startswith("print(") and "# " in line
    ]
    assert printed[0] == "(1,)"
    assert printed[1] == "[('APPEARED', 1), ('PROMOTED', 1)]"
    assert printed[2] == "cup confirmed 1.0"
    assert printed[3] == "The cup (#1) is at (0.40, 0.10, 0.90); last seen just now (t=10.0 s)."
    assert expected[0] == "(1,)" and expected[1] == "cup confirmed 1.0"
    assert (tmp_path / "home.loci").exists()


def test_the_two_setup_commands_are_the_ci_command():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    test_cmd = 'python -m pip install -e ".[test]" && python -m pytest'
    assert test_cmd in text and test_cmd in ci
    assert "python -m pip install . && locimem demo" in text


def test_every_documented_command_has_help():
    commands = sorted(set(re.findall(r"^\| `locimem (\w+)", README.read_text(), flags=re.M)))
    assert commands == ["bench", "demo", "events", "inspect", "recall"]
    for command in commands:
        proc = subprocess.run([sys.executable, "-m", "locimem", command, "--help"],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        assert f"usage: locimem {command}" in proc.stdout
