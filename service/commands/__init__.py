"""Subcommands of the CLI; each module registers its own parsers."""

from __future__ import annotations

import argparse

from service.commands import digest


def register_all(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add every subcommand to ``sub``; ``common`` carries the options every command takes."""
    for module in (digest,):
        module.register(sub, common)
