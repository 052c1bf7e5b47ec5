"""The package type-checks: mypy over ``src/locimem`` with the settings in pyproject.toml
(``[tool.mypy]``: every function typed, bodies checked, no unused ``type: ignore``). The test extra
installs mypy; CI enforces it here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the test extra")
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
