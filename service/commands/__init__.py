"""Subcommands of the CLI; each module registers its own parsers."""

from __future__ import annotations

import argparse

from service.commands import (
    attest,
    audit,
    cite,
    digest,
    ingest,
    keys,
    logcmds,
    mirror,
    reruns,
    serve,
    verifierpage,
    views,
    witness,
)
from service.commands.base import Sub


def register_all(sub: Sub, common: argparse.ArgumentParser) -> None:
    """Add every subcommand to ``sub``; ``common`` carries the options every command takes."""
    modules = (
        digest,
        logcmds,
        ingest,
        views,
        serve,
        keys,
        attest,
        reruns,
        cite,
        audit,
        mirror,
        witness,
        verifierpage,
    )
    for module in modules:
        module.register(sub, common)
