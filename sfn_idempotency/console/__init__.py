"""The local console: the web page that ``sfn-idempotency serve`` serves at its root (read-only
unless ``--console-actions``).

The page is a client of the AWS APIs the endpoint already answers (ListStateMachines,
ListExecutions, GetExecutionHistory, DynamoDB Scan...), called from the browser like any SDK call.
This module only hands out the static files; it adds no API of its own that could drift from them.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

ASSET_PREFIX = "/console/"
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
# No inline script and nothing from another origin: a hostile state name or record that slipped
# past the page's text-only rendering still cannot run.
_SECURITY_HEADERS = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
]


class ConsoleAssetMissingError(RuntimeError):
    """The graph library was not copied in from npm (``make console-assets``)."""


@dataclass(frozen=True)
class ConsoleSettings:
    region: str
    actions: bool = False  # starting executions and forgetting records, off unless asked for


def _static() -> Any:
    return resources.files(__package__).joinpath("static")


def asset(name: str) -> bytes | None:
    """A file of the console, or None; ``name`` is a plain file name or ``vendor/<file>``."""
    parts = name.split("/")
    if not 1 <= len(parts) <= 2 or any(not part or part.startswith(".") for part in parts):
        return None
    if len(parts) == 2 and parts[0] != "vendor":
        return None
    path = _static().joinpath(*parts)
    return path.read_bytes() if path.is_file() else None


def check_assets() -> None:
    """Fail at start, not in the browser, when the vendored graph library is missing."""
    if asset("vendor/dagre.min.js") is None:
        raise ConsoleAssetMissingError(
            "the console's graph library is missing, as in an editable install of a checkout (every "
            "built wheel carries it): run `make console-assets` (it copies @dagrejs/dagre from "
            "node_modules into sfn_idempotency/console/static/vendor)"
        )


def index_page(settings: ConsoleSettings) -> bytes:
    """index.html with the endpoint's region and whether actions are on, as meta tags."""
    page = (asset("index.html") or b"").decode("utf-8")
    meta = (
        f'<meta name="sfn-region" content="{html.escape(settings.region)}">\n'
        f'    <meta name="sfn-console-actions" content="{"on" if settings.actions else "off"}">'
    )
    return page.replace("<!-- settings -->", meta, 1).encode("utf-8")


def with_console(app: WsgiApp, settings: ConsoleSettings) -> WsgiApp:
    """Serve the console's files on GET /, GET /console/*; pass every API call on to ``app``."""

    def dispatch(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not _is_console_request(environ):
            return app(environ, start_response)
        path = environ.get("PATH_INFO", "/")
        body = index_page(settings) if path == "/" else asset(path.removeprefix(ASSET_PREFIX))
        if body is None:
            start_response("404 Not Found", [("Content-Type", "text/plain"), *_SECURITY_HEADERS])
            return [b"not found"]
        suffix = "." + path.rsplit(".", 1)[-1] if path != "/" else ".html"
        content_type = _CONTENT_TYPES.get(suffix, "application/octet-stream")
        start_response("200 OK", [("Content-Type", content_type), *_SECURITY_HEADERS])
        return [body]

    return dispatch


def _is_console_request(environ: dict[str, Any]) -> bool:
    # An SDK's GET / (S3 ListBuckets, say) is signed; the browser's page load is not.
    if environ.get("REQUEST_METHOD") != "GET" or "HTTP_AUTHORIZATION" in environ:
        return False
    path = str(environ.get("PATH_INFO", ""))
    return path == "/" or path.startswith(ASSET_PREFIX)
