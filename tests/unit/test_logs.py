"""The log lines: JSON, request-scoped, secrets redacted, and the direct per-request line
identical in shape to the structlog chain's."""

from __future__ import annotations

import io
import json

import structlog

from service.web import logs


def _capture() -> io.BytesIO:
    logs.configure_logging()
    assert logs._sink is not None
    logs.flush_logs()
    buffer = io.BytesIO()
    logs._sink._file = buffer
    return buffer


def _lines(buffer: io.BytesIO) -> list[dict[str, object]]:
    logs.flush_logs()
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_request_line_matches_the_structlog_chain() -> None:
    buffer = _capture()
    fields = {"method": "GET", "path": "/v1/runs/x", "status": 200, "bytes": 12, "ms": 0.5}
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id="r-1")
    try:
        logs.get_logger("benchproof.http").info("http.request", **fields)
        logs.log_request("r-1", dict(fields))
    finally:
        structlog.contextvars.clear_contextvars()
    via_chain, direct = _lines(buffer)
    assert list(via_chain) == list(direct)  # same keys, same order
    for line in (via_chain, direct):
        assert str(line.pop("timestamp")).endswith("Z")  # ISO 8601, UTC
    assert via_chain == direct
    assert direct["event"] == "http.request" and direct["level"] == "info"


def test_secrets_are_redacted() -> None:
    buffer = _capture()
    logs.get_logger("t").info("key.loaded", private_key="AAAA", token="t0k", kid="abc")
    (line,) = _lines(buffer)
    assert line["private_key"] == "[redacted]" and line["token"] == "[redacted]"
    assert line["kid"] == "abc"


def test_buffered_lines_are_written_in_order_on_flush() -> None:
    buffer = io.BytesIO()
    sink = logs.BufferedLines(buffer, interval=60)
    for n in range(3):
        sink.msg(f'{{"n":{n}}}'.encode())
    assert buffer.getvalue() == b""  # nothing written before the flush
    sink.flush()
    assert [json.loads(x)["n"] for x in buffer.getvalue().splitlines()] == [0, 1, 2]


def test_a_5xx_is_logged_with_its_traceback_and_no_secret_in_it() -> None:
    from service.web import problems

    token = "bp_" + "Q" * 43
    note_key = "PRIVATE+KEY+bench.example+0a1b2c3d+AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefgh="
    pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----"
    buffer = _capture()
    try:
        raise RuntimeError(f"boom with {token} and {note_key} and {pem}")
    except RuntimeError as exc:
        problem = problems.to_problem(exc)
    assert problem.status_code == 500
    assert "boom" not in str(problem.detail)  # the client learns only the request id
    (line,) = _lines(buffer)
    text = json.dumps(line)
    assert line["event"] == "request.failed" and "RuntimeError" in text  # the traceback
    for secret in (token, note_key, "MC4CAQAwBQYDK2VwBCIEIA=="):
        assert secret not in text
    assert text.count("[redacted]") >= 3
