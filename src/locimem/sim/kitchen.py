"""The worked kitchen timeline of the tracker design, as a scripted scan stream.

A cup is seen at (0.4, 0.1, 0.9), a hand covers the camera for 14 s, the cup is seen again,
moved 70 cm at t=60, taken away at t=120; the process restarts at t=200 and recalls the cup.
Scans come every 2 s (plus one at t=25), each with the cup or with nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from locimem.model import Detection

CUP_HOME = (0.4, 0.1, 0.9)
CUP_MOVED = (1.0, 0.5, 0.9)
CUP_SIZE = (0.08, 0.08, 0.1)
RESTART_T = 200.0
RECALL_T = 205.0


@dataclass(frozen=True)
class Scan:
    t: float
    detections: tuple[Detection, ...]
    note: str | None = None  # what is happening in the kitchen, for the narrated demo


def _cup(t: float, at: tuple[float, float, float], label: str = "cup",
         confidence: float = 0.9) -> Detection:
    # A small deterministic jitter (±6 mm), as a real detector would give.
    k = round(t * 10)
    jitter = (((k * 7) % 13) - 6) / 1000.0
    center = (at[0] + jitter, at[1] - jitter, at[2])
    return Detection(label, confidence, center, CUP_SIZE)


def kitchen_timeline() -> list[Scan]:
    """Every scan from t=0 to the restart, in order."""
    scans: list[Scan] = []
    for t in range(0, 11, 2):
        scans.append(Scan(float(t), (_cup(t, CUP_HOME),),
                          "first scan sees a cup" if t == 0 else None))
    for t in range(12, 25, 2):
        scans.append(Scan(float(t), (), "a hand covers the camera" if t == 12 else None))
    scans.append(Scan(25.0, (_cup(25, CUP_HOME),), "the hand moves away: the cup again"))
    for t in range(27, 60, 2):
        label = "mug" if t == 31 else "cup"  # the detector flickers once
        scans.append(Scan(float(t), (_cup(t, CUP_HOME, label, 0.6 if label == "mug" else 0.9),),
                          "the detector calls it a mug once" if t == 31 else None))
    for t in range(60, 119, 2):
        scans.append(Scan(float(t), (_cup(t, CUP_MOVED),),
                          "the cup is moved 70 cm" if t == 60 else None))
    for t in range(120, int(RESTART_T), 2):
        scans.append(Scan(float(t), (), "the cup is taken away" if t == 120 else None))
    return scans
