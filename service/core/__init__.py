"""The write core: the ledger (log store, signing keys and projections wired together), the
group commit, the signers, the data directory and its settings, ``init``."""
