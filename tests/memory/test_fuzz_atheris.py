"""The input boundary under fuzzing (issue 13): ``observe`` with ``Detection`` and ``Camera``
built from fuzzed values, and ``tools().call`` with fuzzed names and arguments, raise only
``LocimemError`` (see ``tests/fuzz_harness.py``).

The quick test runs the harness over seeded random choices (no atheris needed). The slow one
runs it under atheris, coverage-guided, for ``LOCIMEM_FUZZ_SECONDS`` (default 60) seconds; it
runs with ``LOCIMEM_SLOW=1`` and skips, saying why, when atheris is not installed."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.fuzz_harness import Harness, RandomBytes

HARNESS = Path(__file__).parents[1] / "fuzz_harness.py"


def test_the_harness_finds_nothing_on_seeded_random_inputs():
    harness = Harness()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a silent numpy cast is a finding too
            for seed in range(3):
                rng = random.Random(seed)
                for _ in range(700):
                    harness.one_input(RandomBytes(rng))
    finally:
        harness.close()
    assert harness.calls == 2100


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("LOCIMEM_SLOW") != "1",
                    reason="a bounded atheris run; set LOCIMEM_SLOW=1 to run it")
def test_atheris_finds_nothing(tmp_path):
    pytest.importorskip("atheris", reason="atheris is not installed (pip install atheris)")
    seconds = int(os.environ.get("LOCIMEM_FUZZ_SECONDS", "60"))
    root = HARNESS.parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root / "src"), str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(HARNESS), f"-max_total_time={seconds}", "-print_final_stats=1",
         f"-artifact_prefix={tmp_path}/", "-rss_limit_mb=4096"],
        capture_output=True, text=True, env=env, timeout=seconds + 600, check=False)
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
    print(f"atheris: {runs.group(1) if runs else '?'} inputs in {seconds} s")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("oom-*"))
