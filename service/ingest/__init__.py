"""Importers: what sources publish, turned into signed events (one module per source)."""
