"""A small JSON client of a Benchproof server, for the commands that talk to one (``keys
register``, ``keys revoke``, ``keys grant``, ``attest``, ``withdraw``, ``hide``, ``report``,
``resolve``); an operator's commands send their token as ``Authorization: Bearer``.

A refusal (any status from 300 on) becomes the error the CLI already maps to an exit code: 404 is
:class:`NotFound` (exit 3), anything else :class:`UsageError` (exit 2), with a one-line message
naming the problem's title and detail (RFC 9457) and the status. A server that cannot be reached,
or that answers something other than a JSON object, is a :class:`UsageError` naming its URL.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx
import msgspec

from service.errors import NotFound, UsageError

__all__ = [
    "DEFAULT_SERVER",
    "SERVER_ENV",
    "Answer",
    "Client",
    "Fetched",
    "default_server",
    "run_path",
]

DEFAULT_SERVER = "http://127.0.0.1:8000"
SERVER_ENV = "BENCHPROOF_SERVER"
"""The variable that names the server the commands talk to."""
_TIMEOUT = 30.0
_JSON = "application/json"
_DECODER = msgspec.json.Decoder()


def default_server() -> str:
    """The server commands talk to unless told: ``$BENCHPROOF_SERVER``, else the address
    ``benchproof serve`` binds by default."""
    return os.environ.get(SERVER_ENV, DEFAULT_SERVER)


def run_path(ref: str, *rest: str) -> str:
    """The API path of the run ``ref`` names, and of its sub-resources ``rest``.

    ``ref`` keeps its ``:`` and ``/`` (``sol-execbench:165``, ``kernelbot:submission/7``: the
    route takes the rest of the path); anything that would end the path (``?``, ``#``) is quoted.
    """
    return "/".join(("/v1/runs", quote(ref, safe=":/@"), *rest))


class Answer(msgspec.Struct, frozen=True):
    """A successful answer: its status and its JSON object."""

    status: int
    body: dict[str, Any]

    def text(self, name: str) -> str:
        """The string member ``name`` of the answer.

        Raises:
            UsageError: the server left it out or sent something else (not the API we speak).
        """
        value = self.body.get(name)
        if not isinstance(value, str):
            raise UsageError(f"the server's answer has no {name!r}", status=self.status)
        return value


class Fetched(msgspec.Struct, frozen=True):
    """A successful answer as received: its status, exact body bytes and headers, and the
    request target as sent (path, then ``?`` and the query, percent-encoded as on the wire)."""

    status: int
    content: bytes
    headers: dict[str, str]
    target: str


class Client:
    """JSON requests to one server (``base_url``, e.g. ``http://127.0.0.1:8000``); a context
    manager that closes its connections."""

    def __init__(
        self, base_url: str, *, timeout: float = _TIMEOUT, token: str | None = None
    ) -> None:
        """Raises :class:`UsageError` when ``base_url`` is not an http(s) URL with a host.
        ``token``: an operator token, sent with every request."""
        url = _server_url(base_url)
        self.base_url = str(url).rstrip("/")
        headers = {"accept": f"{_JSON}, application/problem+json"}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=url, timeout=timeout, headers=headers)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def get(self, path: str) -> Answer:
        """``GET path``; see :meth:`post` for what it raises."""
        return self._send("GET", path, None)

    def fetch(self, path: str) -> Fetched:
        """``GET path``, the answer kept byte for byte with its headers (names lower-case): what
        a signed answer is checked against (``verifier.answers``).

        Raises:
            NotFound: the server answered 404.
            UsageError: any other status from 300 on, or no answer at all.
        """
        response = self._request("GET", path, None)
        return Fetched(
            response.status_code,
            response.content,
            {name.lower(): value for name, value in response.headers.items()},
            response.request.url.raw_path.decode("ascii"),
        )

    def post(self, path: str, body: object = None, *, content: bytes | None = None) -> Answer:
        """``POST path`` with ``body`` encoded as JSON, or with ``content``: JSON bytes sent as
        they are (a signed envelope must reach the server byte for byte).

        Raises:
            NotFound: the server answered 404.
            UsageError: any other status from 300 on, no answer at all, or an answer that is
                not a JSON object.
        """
        data = content if content is not None else msgspec.json.encode(body)
        return self._send("POST", path, data)

    def _request(self, method: str, path: str, content: bytes | None) -> httpx.Response:
        headers = {"content-type": _JSON} if content is not None else None
        try:
            response = self._http.request(method, path, content=content, headers=headers)
        except httpx.HTTPError as exc:
            raise UsageError(
                f"cannot reach {self.base_url}: {str(exc) or type(exc).__name__}", url=self.base_url
            ) from None
        if response.status_code >= 300:
            raise _refusal(response)
        return response

    def _send(self, method: str, path: str, content: bytes | None) -> Answer:
        response = self._request(method, path, content)
        body = _json_object(response.content)
        if body is None:
            raise UsageError(
                f"{self.base_url} answered {method} {path} with something other than a JSON "
                "object; is it a Benchproof server?",
                status=response.status_code,
            )
        return Answer(response.status_code, body)


def _server_url(text: str) -> httpx.URL:
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise UsageError(f"--server {text!r} is not a URL: {exc}") from None
    if url.scheme not in {"http", "https"} or not url.host:
        raise UsageError(f"--server {text!r} is not an http(s) URL such as {DEFAULT_SERVER}")
    return url


def _json_object(content: bytes) -> dict[str, Any] | None:
    try:
        value = _DECODER.decode(content)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _refusal(response: httpx.Response) -> UsageError | NotFound:
    """The error for a refusal: the problem's title and detail (and an ambiguous reference's
    candidates) on one line, with the status; its problem ``type`` kept in ``details``."""
    status = response.status_code
    problem = _json_object(response.content) or {}
    title = problem.get("title") or response.reason_phrase or "refused"
    parts = [str(title)]
    detail = problem.get("detail")
    if detail and detail != title:
        parts.append(str(detail))
    candidates = problem.get("candidates")
    if isinstance(candidates, list) and candidates:
        parts.append("candidates " + ", ".join(map(str, candidates)))
    message = " ".join(f"{': '.join(parts)} (HTTP {status})".split())
    kind = NotFound if status == 404 else UsageError
    return kind(message, status=status, type=problem.get("type"))
