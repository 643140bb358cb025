"""structlog, configured once: JSON lines on stdout, ``request_id`` bound per request, secrets
redacted."""

from __future__ import annotations

import atexit
import contextlib
import logging
import re
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

import msgspec
import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict

__all__ = ["BufferedLines", "configure_logging", "flush_logs", "get_logger", "log_request"]

_SECRET_KEYS = frozenset(
    {"private_key", "token", "authorization", "seed", "signature_raw", "challenge", "cookie"}
)
# Secrets by their shape, wherever they appear in a line's text (an exception's message):
# operator tokens, PEM private keys and C2SP note signer keys (``PRIVATE+KEY+name+id+key``).
_SECRET_TEXT = re.compile(
    r"bp_[A-Za-z0-9_-]{20,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|PRIVATE\+KEY\+\S+",
    re.S,
)
_encoder = msgspec.json.Encoder(enc_hook=repr)


def _dumps(obj: Any, **_: Any) -> bytes:
    # structlog passes default=...; msgspec takes an enc_hook instead.
    return _encoder.encode(obj)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _SECRET_TEXT.sub("[redacted]", value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def redact_secrets(_logger: object, _name: str, event_dict: EventDict) -> EventDict:
    """Secret fields by name, and tokens and private keys by their shape in any text."""
    for key in _SECRET_KEYS & event_dict.keys():
        event_dict[key] = "[redacted]"
    for key, value in event_dict.items():
        event_dict[key] = _scrub(value)
    return event_dict


class BufferedLines:
    """A structlog logger that collects lines in memory and writes them out in one system call
    every ``interval`` seconds (and at exit): one write per request is the largest cost of a
    canonical log line. At most ``interval`` seconds of lines are lost if the process is killed."""

    def __init__(self, file: Any, interval: float = 0.25) -> None:
        self._file = file
        self._lines: list[bytes] = []
        self._lock = threading.Lock()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, name="log-flush", daemon=True)
        self._thread.start()
        atexit.register(self._last_flush)

    def msg(self, message: bytes) -> None:
        self._lines.append(message)  # list.append is atomic under the GIL

    log = debug = info = warn = warning = err = error = critical = exception = fatal = msg

    def flush(self) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
            if lines:
                self._file.write(b"\n".join(lines) + b"\n")
                self._file.flush()

    def _last_flush(self) -> None:
        # The stream may be closed before the exit (a test runner's capture).
        with contextlib.suppress(OSError, ValueError):
            self.flush()

    def _run(self) -> None:
        while True:
            time.sleep(self._interval)
            try:
                self.flush()
            except (OSError, ValueError):  # the stream is closed (the process is ending)
                return


_configured = False
_sink: BufferedLines | None = None
_level = logging.INFO


def configure_logging(level: int = logging.INFO) -> None:
    """Configure structlog (idempotent)."""
    global _configured, _sink, _level
    if _configured:
        return
    _sink = BufferedLines(sys.stdout.buffer)
    _level = level
    structlog.configure(
        cache_logger_on_first_use=True,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            # Tracebacks without the frames' local variables (a request's body, a key).
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            redact_secrets,
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
        logger_factory=lambda *_: _sink,
    )
    _configured = True


def get_logger(name: str = "benchproof") -> Any:
    return structlog.get_logger(name)


def flush_logs() -> None:
    """Write out the lines collected so far."""
    if _sink is not None:
        _sink.flush()


def log_request(request_id: str, fields: dict[str, Any]) -> None:
    """The canonical per-request line, rendered directly: the same JSON as the structlog chain
    above produces for ``info("http.request", **fields)`` with ``request_id`` bound, at a fifth of
    its cost (it is written once for every request served). ``fields`` must hold no secrets. An
    answer of 500 or more is logged at error level (the failure's own line, with its traceback,
    comes from the handler that made the answer)."""
    failed = int(fields.get("status") or 0) >= 500
    if _sink is None:
        log = get_logger("benchproof.http")
        (log.error if failed else log.info)("http.request", request_id=request_id, **fields)
        return
    if _level > (logging.ERROR if failed else logging.INFO):
        return
    fields["event"] = "http.request"
    fields["request_id"] = request_id
    fields["level"] = "error" if failed else "info"
    fields["timestamp"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    _sink.msg(_encoder.encode(fields))
