"""State checks: the part of a write's checks that reads the log's state at the entry's own
position (the key still valid, the lease still held, the name still free, the attestation not
withdrawn), run by the writer inside the append's transaction, in log order.

Everything else about a write (body limits, strict decoding, DSSE and in-toto shape, the
signature against the claimed key, proof of possession, rate limits) is checked before, in
whichever process took the request. What is left for the writer must travel to it: with
``serve --workers N`` the writer is another process (``service.core.writer``), so a state check
is a value, not a closure: the name of a module-level function marked ``@state_check`` and its
arguments (msgspec-encodable). The writer calls ``function(ledger, session, *args)``; only
functions so marked, in the service's own modules, are ever called.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from events.port import Session

__all__ = ["StateCheck", "bind", "check_of", "state_check"]

F = TypeVar("F", bound=Callable[..., None])
_MARK = "__benchproof_state_check__"


class StateCheck(msgspec.Struct, frozen=True, array_like=True):
    """``function`` (``"module:name"``) applied to ``args`` in the writer's transaction."""

    function: str
    args: tuple[Any, ...] = ()


def state_check(fn: F) -> F:
    """Mark ``fn(ledger, session, *args)`` as a state check the writer may call by name."""
    setattr(fn, _MARK, True)
    return fn


def check_of(fn: Callable[..., None], *args: Any) -> StateCheck:
    """The state check that calls ``fn`` (marked ``@state_check``) with ``args``."""
    if not getattr(fn, _MARK, False):
        raise TypeError(f"{fn.__qualname__} is not marked @state_check")
    return StateCheck(f"{fn.__module__}:{fn.__qualname__}", args)


def bind(ledger: object, check: StateCheck) -> Callable[[Session], None]:
    """The check as the group commit runs it: on the transaction's session, for ``ledger``.

    Raises:
        ValueError: ``check`` names no marked function of the service.
    """
    fn = _marked(check.function)
    args = check.args
    return lambda session: fn(ledger, session, *args)


@functools.cache
def _marked(function: str) -> Callable[..., None]:
    """The marked function ``function`` (``"module:name"``) names, looked up once.

    Raises:
        ValueError: it names no marked function of the service (not cached: raised again).
    """
    module, _, name = function.partition(":")
    if not module.startswith("service.") or not name.isidentifier():
        raise ValueError(f"not a state check of the service: {function!r}")
    fn = getattr(importlib.import_module(module), name, None)
    if fn is None or not getattr(fn, _MARK, False):
        raise ValueError(f"not a state check of the service: {function!r}")
    return fn  # type: ignore[no-any-return]
