"""Subcommands of the CLI; each module registers its own parsers."""

from __future__ import annotations

import argparse

from service.commands import attest, cite, digest, ingest, keys, logcmds, reruns, serve, views
from service.commands.base import Sub


def register_all(sub: Sub, common: argparse.ArgumentParser) -> None:
    """Add every subcommand to ``sub``; ``common`` carries the options every command takes."""
    for module in (digest, logcmds, ingest, views, serve, keys, attest, reruns, cite):
        module.register(sub, common)
