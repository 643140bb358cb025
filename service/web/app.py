"""The composition root: ``create_app(settings)`` builds the real parts when not handed in."""

from __future__ import annotations

import gc
import html
import os
from pathlib import Path
from typing import Any

import msgspec
from litestar import Litestar, Request, Response
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.routes import HTTPRoute
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from service.core.config import DataDir, Settings
from service.core.ledger import Ledger, open_log
from service.core.logs import Clock, OpenedLog, utcnow
from service.core.witnesses import start_cosigner
from service.core.writer import WriterClient
from service.shared.limits import RateLimiter
from service.web import openapi, problems
from service.web.api import API_HANDLERS
from service.web.auth import TokenStore
from service.web.deps import Services
from service.web.limiting import Gate
from service.web.logs import configure_logging
from service.web.middleware import RequestLog, head_as_get
from service.web.pages import PAGE_HANDLERS, error_page
from service.web.reads import Reader
from service.web.refs import Routes
from service.web.responder import Answers, Responder
from verifier.answers import AnswerSigner

__all__ = ["SETTINGS_VARIABLE", "app_from_environment", "create_app"]

SETTINGS_VARIABLE = "BENCHPROOF_SERVE_SETTINGS"
"""The environment variable through which ``benchproof serve --workers N`` hands its settings
(JSON) to each worker process."""

HERE = Path(__file__).parent


_API_PATHS = ("/v1/", "/v1", "/healthz", "/schema", "/static/", "/checkpoint", "/tile/")


def _http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    """Litestar's own HTTP errors (no such path, method not allowed, body too large...): a
    problem+json under the API, an HTML error page elsewhere (where people browse). Under
    ``/schema`` (the API docs, which people browse too) the page goes to whoever asks for HTML
    first, as browsers do. A 405 names ``HEAD`` where it names ``GET`` (``_allow_head``)."""
    _allow_head(exc)
    if _answers_problems(request):
        return problems.http_problem(exc).to_response(request)
    return error_page(request, exc)


def _unhandled(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A failure nothing else handles (a bug): logged at error level with its traceback
    (``problems.to_problem``), answered as a 500 problem+json under the API and the site's error
    page elsewhere. Handlers of the errors the app knows are more specific, and win."""
    if _answers_problems(request):
        return problems.to_problem(exc).to_response(request)
    return error_page(request, exc)


def _answers_problems(request: Request[Any, Any, Any]) -> bool:
    """Whether an error on ``request``'s path is a problem+json (the API) rather than the
    site's error page: ``/schema`` answers a page to whoever asks for HTML first."""
    path = request.url.path
    return path.startswith(_API_PATHS) and not (path.startswith("/schema") and _wants_html(request))


def _wants_html(request: Request[Any, Any, Any]) -> bool:
    return request.accept.best_match(["application/problem+json", "text/html"]) == "text/html"


def _allow_head(exc: HTTPException) -> None:
    """Add ``HEAD`` to the ``Allow`` header of a 405 that allows ``GET``: ``head_as_get`` answers
    HEAD on every GET route before routing, so the router never lists it."""
    headers = dict(exc.headers or {})
    name = next((key for key in headers if key.lower() == "allow"), None)
    if name is None:
        return
    methods = [m.strip() for m in headers[name].split(",") if m.strip()]
    if "GET" in methods and "HEAD" not in methods:
        methods.insert(methods.index("GET") + 1, "HEAD")
        exc.headers = {**headers, name: ", ".join(methods)}


DOCS_JS = "/static/openapi/docs.js"
"""Set before Scalar's script runs: its validation library (zod) compiles no code, which the
CSP would refuse (``static/openapi/docs.js``)."""


class ScalarPage(ScalarRenderPlugin):
    """Scalar's page at ``/schema`` with no inline script or style, so that it works under the
    site's Content-Security-Policy (scripts from its own files only): the options go in the
    ``data-configuration`` attribute of the ``api-reference`` element, which Scalar reads
    (litestar's page sets it from an inline script), the body's margin is in ``docs.css``, and
    ``DOCS_JS`` tells Scalar's validation library not to probe for ``eval``."""

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        title = html.escape(str(openapi_schema["info"]["title"]))
        url = html.escape(self.get_openapi_json_route(request))
        # In a single-quoted attribute: the JSON's double quotes stay as they are.
        options = msgspec.json.encode(self.options or {}).decode()
        options = options.replace("&", "&amp;").replace("'", "&#39;").replace("<", "&lt;")
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n'
            f"<title>{title}</title>\n"
            '<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<link rel="stylesheet" type="text/css" href="{html.escape(self.css_url)}">\n'
            "</head>\n<body>\n"
            "<noscript>The API reference needs JavaScript; the document itself is at "
            f"<code>{url}</code>.</noscript>\n"
            f'<script id="api-reference" data-url="{url}" data-configuration=\'{options}\'>'
            "</script>\n"
            f'<script src="{DOCS_JS}"></script>\n'
            f'<script src="{html.escape(self.js_url)}"></script>\n'
            "</body>\n</html>\n"
        ).encode()


def _docs_without_inline_script(config: OpenAPIConfig) -> OpenAPIConfig:
    """``config`` with its Scalar page rendered by ``ScalarPage``."""
    plugins = [
        ScalarPage(
            js_url=plugin.js_url,
            css_url=plugin.css_url,
            path=plugin.paths,
            options=plugin.options,
            favicon="",
        )
        if type(plugin) is ScalarRenderPlugin
        else plugin
        for plugin in config.render_plugins
    ]
    # Set in place: ``dataclasses.replace`` would pass on the deprecated fields that
    # ``__post_init__`` filled in, and warn. The default plugin is chosen as litestar does.
    config.render_plugins = plugins
    config.default_plugin = next((p for p in plugins if p.has_path("/")), plugins[0])
    return config


class BenchproofApp(Litestar):
    """The litestar app, answering ``HEAD`` on every ``GET`` route, routing a run reference as
    one path segment (``service.web.refs``: ``routes``, read from the route table), answering
    its reads through one responder (``answers``: ``service.web.responder``), and logging every
    request (``RequestLog``, outside the router: its 404s and 405s are logged and carry the
    security headers too)."""

    answers: Answers
    _run_paths: Routes | None = None
    _logged: RequestLog | None = None

    @property
    def run_paths(self) -> Routes:
        """The resources of a run in the route table (made once, when first asked)."""
        if self._run_paths is None:
            http = [r for r in self.routes if isinstance(r, HTTPRoute)]
            self._run_paths = Routes((route.path, route.methods) for route in http)
        return self._run_paths

    async def _route(self, scope: Any, receive: Any, send: Any) -> None:
        await super().__call__(self.run_paths.routed(scope), receive, send)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        scope, send = head_as_get(scope, send)
        if self._logged is None:
            self._logged = RequestLog(self._route)
        await self._logged(scope, receive, send)


def create_app(
    settings: Settings, *, ledger: OpenedLog | None = None, clock: Clock | None = None
) -> Litestar:
    """The litestar app over the data directory of ``settings`` (initialised beforehand). The
    operator's routes check tokens against ``state.tokens`` (``service.web.guards``); the public
    writes count against ``settings.limits`` in the directory's database, on the ledger's clock
    (the ``gate`` dependency)."""
    configure_logging()
    own = ledger is None
    ledger = ledger if ledger is not None else open_log(settings.data, clock=clock or utcnow)
    if settings.writer and isinstance(ledger, Ledger):
        # A worker of ``serve --workers N``: its writes go to the writer process.
        ledger.remote = WriterClient(Path(settings.writer))
    reader = Reader(ledger.data.store)
    limiter = RateLimiter(
        ledger.data.limits,
        settings.limits,
        clock=lambda: ledger.clock().timestamp(),
        store=ledger.data.store,
    )
    gate = Gate(limiter, settings.trusted_proxies)
    services = Services(ledger, reader, gate, settings.public_url)

    # The process that writes the log itself (not a worker of ``serve --workers N``, whose
    # writer process does this) asks the witnesses in the background.
    halt_cosigner = (
        start_cosigner(ledger.store, settings.data, ledger.data.store)
        if not settings.writer and isinstance(ledger, Ledger) and ledger.note_signer is not None
        else lambda: None
    )

    def on_shutdown() -> None:
        halt_cosigner()
        limiter.close()
        reader.close()
        if own:
            ledger.close()

    # The log key signs the JSON answers of reads (``verifier.answers``) as the log's origin; a
    # mirror holds no key, and its answers say their tree size unsigned.
    note_signer = ledger.note_signer
    signer = None if note_signer is None else AnswerSigner(note_signer, ledger.store.origin)
    answers = Answers(reader, signer)
    deps: dict[str, Any] = {
        "reader": Provide(lambda: reader, use_cache=True, sync_to_thread=False),
        "ledger": Provide(lambda: ledger, use_cache=True, sync_to_thread=False),
        "settings": Provide(lambda: settings, use_cache=True, sync_to_thread=False),
        "gate": Provide(lambda: gate, use_cache=True, sync_to_thread=False),
        "services": Provide(lambda: services, use_cache=True, sync_to_thread=False),
    }
    app = BenchproofApp(
        route_handlers=[
            *API_HANDLERS,
            *PAGE_HANDLERS,
            create_static_files_router("/static", [HERE / "static"]),
        ],
        dependencies=deps,
        state=State({"tokens": TokenStore(DataDir(settings.data).tokens)}),
        plugins=[problems.plugin()],
        exception_handlers={HTTPException: _http_error, Exception: _unhandled},
        request_max_body_size=settings.max_body_bytes,
        template_config=TemplateConfig(directory=HERE / "templates", engine=JinjaTemplateEngine),
        openapi_config=_docs_without_inline_script(openapi.config()),
        on_shutdown=[on_shutdown],
        response_class=Responder,
        signature_namespace={
            "Reader": Reader,
            "OpenedLog": OpenedLog,
            "Settings": Settings,
            "Gate": Gate,
            "Services": Services,
        },
    )
    app.answers = answers
    app.run_paths  # noqa: B018 - read from the route table now, not on the first request
    # Built once here (litestar keeps it until a route is added, and none is after this).
    app.openapi_schema  # noqa: B018 - the document from the routes, made now
    return app


def app_from_environment() -> Litestar:
    """The app of one worker process of ``benchproof serve --workers N``, built from the
    settings in ``SETTINGS_VARIABLE``."""
    settings = msgspec.json.decode(
        os.environ[SETTINGS_VARIABLE], type=Settings, dec_hook=lambda _type, value: Path(value)
    )
    app = create_app(settings)
    gc.freeze()  # as ``benchproof serve`` does: what lives now lives as long as the process
    return app
