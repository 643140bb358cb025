"""structlog, configured once: JSON lines on stdout, ``request_id`` bound per request, secrets
redacted."""

from __future__ import annotations

import logging
import sys
from typing import Any

import msgspec
import structlog
from structlog.typing import EventDict

__all__ = ["configure_logging", "get_logger"]

_SECRET_KEYS = frozenset({"private_key", "token", "authorization", "seed", "signature_raw"})
_encoder = msgspec.json.Encoder(enc_hook=repr)


def _dumps(obj: Any, **_: Any) -> bytes:
    # structlog passes default=...; msgspec takes an enc_hook instead.
    return _encoder.encode(obj)


def redact_secrets(_logger: object, _name: str, event_dict: EventDict) -> EventDict:
    for key in _SECRET_KEYS & event_dict.keys():
        event_dict[key] = "[redacted]"
    return event_dict


_configured = False


def configure_logging(level: int = logging.INFO) -> None:
    """Configure structlog (idempotent)."""
    global _configured
    if _configured:
        return
    structlog.configure(
        cache_logger_on_first_use=True,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            redact_secrets,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
        logger_factory=structlog.BytesLoggerFactory(file=sys.stdout.buffer),
    )
    _configured = True


def get_logger(name: str = "benchproof") -> Any:
    return structlog.get_logger(name)
