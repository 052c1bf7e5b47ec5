"""The tracker's decisions as fingerprints, to show a refactoring changed none of them.

Every built-in scenario is played, at its default seed and at more, into a store file; each
fingerprint is a hash of every stored table (wall-clock columns left out) and of the objects
as the live memory held them, which must equal the objects of the store reopened. Two trees
that decide alike print the same fingerprints::

    python -m locimem.bench.decisions before.json          # on the old tree
    python -m locimem.bench.decisions after.json --compare before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from locimem.memory import ObjectMemory
from locimem.sim.scenario import Scenario
from locimem.sim.scenarios import NAMES, build

__all__ = ["SEEDS", "fingerprint", "fingerprints", "main"]

SEEDS: tuple[int | None, ...] = (None, 101, 202)  # None: the scenario's own seed
_WALL_CLOCK = {"recorded_at", "applied_at", "created_at"}  # columns a rerun changes
_NOT_DECIDED = ("meta", "migrations", "checkpoints")  # tables no decision writes


def _tables_hash(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        digest = hashlib.sha256()
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                   "ORDER BY name"):
            if name in _NOT_DECIDED:
                continue
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({name})")
                    if r[1] not in _WALL_CLOCK]
            listed = ", ".join(cols)
            rows = con.execute(f"SELECT {listed} FROM {name} ORDER BY {listed}").fetchall()
            digest.update(name.encode())
            digest.update(repr(rows).encode())
        return digest.hexdigest()[:16]
    finally:
        con.close()


def _objects(mem: ObjectMemory) -> list[tuple[object, ...]]:
    return sorted((int(o.id), str(o.label), str(o.status),
                   tuple(round(float(v), 9) for v in o.center)) for o in mem.objects())


def fingerprint(scenario: Scenario) -> str:
    """The scenario's fingerprint: its stored tables' hash and its objects' hash.

    Raises AssertionError if the store reopened holds other objects than the live memory."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "decisions.loci"
        mem = ObjectMemory.open(path, durable=False)
        try:
            for frame in scenario.frames:
                if frame.restart:
                    mem.close()
                    mem = ObjectMemory.open(path, durable=False)
                mem.observe(frame.t, list(frame.detections), frame.camera)
            live = _objects(mem)
        finally:
            mem.close()
        with ObjectMemory.open(path, read_only=True) as again:
            if _objects(again) != live:
                raise AssertionError(f"{scenario.name}: the reopened store holds other objects")
        objects = hashlib.sha256(repr(live).encode()).hexdigest()[:16]
        return f"{_tables_hash(path)} {objects}"


def fingerprints(names: Sequence[str] = NAMES, seeds: Sequence[int | None] = SEEDS,
                 out: TextIO | None = None) -> dict[str, str]:
    """``{"scenario/seed": fingerprint}`` for each scenario and seed (printed as they come
    when ``out`` is a stream)."""
    found: dict[str, str] = {}
    for name in names:
        for seed in seeds:
            key = f"{name}/{'default' if seed is None else seed}"
            found[key] = fingerprint(build(name, seed))
            if out is not None:
                print(f"{key:<28} {found[key]}", file=out, flush=True)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m locimem.bench.decisions",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", metavar="OUT.json", help="where to write the fingerprints")
    parser.add_argument("--compare", metavar="OLD.json",
                        help="exit 1 unless the fingerprints of the scenarios run equal "
                             "these")
    parser.add_argument("--scenario", action="append", choices=NAMES, metavar="NAME",
                        help="only this built-in scenario (repeatable; default: all)")
    args = parser.parse_args(argv)
    found = fingerprints(args.scenario or NAMES, out=sys.stdout)
    Path(args.out).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    if args.compare is None:
        return 0
    old = json.loads(Path(args.compare).read_text())
    print(compared(found, old))
    return 1 if any(k in old and old[k] != v for k, v in found.items()) else 0


def compared(found: dict[str, str], old: dict[str, str]) -> str:
    """What ``--compare`` says: "identical", or which runs differ; runs ``old`` does not
    hold (a scenario added since) are named apart and do not count as differing."""
    differ = sorted(k for k in found if k in old and old[k] != found[k])
    new = sorted(k for k in found if k not in old)
    text = "identical" if not differ else f"{len(differ)} differ: {', '.join(differ)}"
    return text + (f" ({len(new)} new, not in the old file: {', '.join(new)})" if new else "")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
