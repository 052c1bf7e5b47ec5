"""The code stays ruff-clean (the rules are in pyproject.toml): CI enforces it here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean() -> None:
    try:
        proc = subprocess.run([sys.executable, "-m", "ruff", "check", "src", "tests"],
                              cwd=ROOT, capture_output=True, text=True, check=False)
    except FileNotFoundError:  # pragma: no cover - the test extra installs ruff
        pytest.skip("ruff is not installed")
    assert proc.returncode == 0, proc.stdout + proc.stderr
