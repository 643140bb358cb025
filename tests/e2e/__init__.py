"""End-to-end scenarios (ingest, attest, rerun, cite, audit) through the public surface only,
on whichever store the run is for: the same tests pass unchanged on SQLite and PostgreSQL."""
