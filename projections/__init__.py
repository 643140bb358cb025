"""What it means now (or as of then): pure folds from events to views, materialised in SQLite."""
