"""Tests that need a real PostgreSQL server; ``make test-postgres`` runs them on a throwaway one."""
