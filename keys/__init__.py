"""Who said it: Ed25519 keys and key ids, DSSE envelopes, C2SP signed notes, key files.

The only package that touches ``cryptography.hazmat``. Imports nothing else of ours."""
