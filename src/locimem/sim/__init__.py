"""Scripted and simulated scan streams with ground truth (no I/O, seeded, deterministic)."""
