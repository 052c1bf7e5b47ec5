"""Storage backends. SQLite (embedded, one file) is the default."""
