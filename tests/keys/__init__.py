"""Tests of keys/: Ed25519, DSSE envelopes, C2SP signed notes and key files."""
