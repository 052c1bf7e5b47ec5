"""Interchange: a memory written to (and read from) other tools' file formats.

Each format lives in its own module and imports its optional dependency only when used.
"""
