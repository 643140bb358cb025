"""Adapters of the log port (``events.port``): the only code that writes SQL on the log tables.

``sqlite`` is the embedded default (one SQLite file in WAL mode)."""
