"""The read model the edges present: the run dossier, and ``asOf``."""
