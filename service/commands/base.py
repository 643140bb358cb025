"""Shared typing for the subcommand modules."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    Sub = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Sub = argparse._SubParsersAction
