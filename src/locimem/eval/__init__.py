"""Scoring a tracker against ground truth: pure functions over per-frame arrays.

- :mod:`locimem.eval.mot` — CLEAR-MOT (MOTA, MOTP, ID switches) and identity metrics (IDF1,
  IDP, IDR), with the exact semantics of the ``motmetrics`` reference implementation.
- :mod:`locimem.eval.memory_metrics` — what matters for a *memory*: duplicate identities,
  phantoms, coverage, label accuracy, move and removal latencies, wrongful losses, recall
  answers.

This package depends on numpy and scipy only (no other locimem module), so a score never
depends on the code it scores. :mod:`locimem.eval.run` is the one adapter that plays a
simulated scenario through a memory and turns the result into these inputs.
"""

from locimem.eval.mot import MotAccumulator, MotSummary, clear_mot, distance_matrix

__all__ = ["MotAccumulator", "MotSummary", "clear_mot", "distance_matrix"]
