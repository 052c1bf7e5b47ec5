"""One robot of a simulated fleet, as its own process (``python -m tests.fleet_worker``): it
opens a shared PostgreSQL store and observes its part of a scene of ``THINGS`` objects a
metre apart, overlapping the other robots' parts, then waits for the whole fleet, catches up
and prints its state as JSON. With ``--forever`` it scans until killed."""

from __future__ import annotations

import argparse
import json
import sys
import time

from locimem import Detection, ObjectMemory

THINGS = ("cup", "book", "plate", "lamp", "vase", "clock")
SEEN = 4  # each robot sees this many things, starting at its own index


def scene(writer: int, scan: int) -> list[Detection]:
    """What robot ``writer`` sees in scan ``scan``: its things, with a centimetre of jitter."""
    out = []
    for j in range(SEEN):
        k = (writer + j) % len(THINGS)
        jitter = ((scan * 7 + writer * 3 + j) % 5 - 2) * 0.005
        out.append(Detection(THINGS[k], 0.9, (float(k) + jitter, 0.0, 0.8), (0.1, 0.1, 0.1)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--writer", type=int, required=True)
    ap.add_argument("--writers", type=int, required=True)
    ap.add_argument("--scans", type=int, default=15)
    ap.add_argument("--start-at", type=float, default=0.0)
    ap.add_argument("--forever", action="store_true")
    args = ap.parse_args()
    with ObjectMemory.open(args.url, scope="fleet", durable=False) as mem:
        while time.time() < args.start_at:  # every robot starts at once
            time.sleep(0.001)
        scan = 0
        while args.forever or scan < args.scans:
            mem.observe(scan * 0.2 + args.writer * 0.01, scene(args.writer, scan),
                        source=f"robot{args.writer}")
            scan += 1
            if args.forever:
                print(scan, flush=True)
        total = args.writers * args.scans
        while mem._live.store.count("commits", "fleet") < total:  # the rest of the fleet
            time.sleep(0.01)
        mem.refresh()
        json.dump(mem.snapshot(), sys.stdout, sort_keys=True, default=str)


if __name__ == "__main__":
    main()
