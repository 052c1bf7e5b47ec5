"""Spatial indexes: caches over object positions, rebuildable at any time."""
