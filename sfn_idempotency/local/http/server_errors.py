"""What ``serve`` answers when a request never reaches a service's own error handling: an AWS
client reads a JSON error, never an HTML page, and the terminal gets one line, never a traceback.

- A request the HTTP layer cannot read (a request line that is not one, a TLS handshake on the
  plain port, a header line past 64 KiB) is answered with a JSON error of its HTTP status, as an
  AWS endpoint's front answers it, instead of Python's HTML error page and an access-log line.
- An exception that escapes moto's WSGI application (outside a service's own handling: moto's
  routing, a path no service has) is a 500 ``InternalFailure`` in JSON, with AWS's words for it
  (each service's own failures are answered in its protocol by compat fix 150), and a web
  framework's HTML error page (Flask's 404 for a path no route matches) is a JSON error of its
  status.
"""

from __future__ import annotations

import http
import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.serving import WSGIRequestHandler

from sfn_idempotency.local.compat.moto_core import INTERNAL_FAILURE_MESSAGE

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_LOG = logging.getLogger("sfn_idempotency.local")
INTERNAL_FAILURE = "InternalFailure"


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"__type": code, "message": message}).encode("utf-8")


def answered_in_json(app: WsgiApp) -> WsgiApp:
    """``app``, whose escaping exceptions are answered as AWS's InternalFailure (the body is
    produced before the answer starts, so a failure midway cannot follow a started answer)."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started: list[tuple[str, list[tuple[str, str]]]] = []

        def recording_start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [(status, headers)]
            return lambda data: None  # (moto never writes through it)

        try:
            result = app(environ, recording_start)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except Exception as error:
            _LOG.warning(
                "serve: %s %s failed: %s: %s",
                environ.get("REQUEST_METHOD"),
                environ.get("PATH_INFO"),
                type(error).__name__,
                error,
            )
            body = error_body(INTERNAL_FAILURE, INTERNAL_FAILURE_MESSAGE)
            started[:] = [
                (
                    "500 Internal Server Error",
                    [
                        ("Content-Type", "application/json"),
                        ("x-amzn-ErrorType", INTERNAL_FAILURE),
                        ("Content-Length", str(len(body))),
                    ],
                )
            ]
        status, headers = started[0]
        if _is_an_html_error_page(status, headers, body):
            status, headers, body = _html_page_in_json(status, environ)
            headers.append(("Content-Length", str(len(body))))
        start_response(status, headers)
        return [body]

    return application


def _is_an_html_error_page(status: str, headers: list[tuple[str, str]], body: bytes) -> bool:
    """An error whose body is a page (moto's own answers may say text/html of a JSON body: Flask's
    default type, which Lambda's ListFunctions keeps)."""
    html = any(name.lower() == "content-type" and "html" in value for name, value in headers)
    return html and int(status.split(" ", 1)[0]) >= http.HTTPStatus.BAD_REQUEST and body.lstrip()[:1] == b"<"


def _html_page_in_json(status: str, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """A web framework's error page (Flask's 404 for a path no service routes) as a JSON error."""
    code = int(status.split(" ", 1)[0])
    if code == http.HTTPStatus.NOT_FOUND:
        error = "UnknownOperationException"
        message = (
            f"No operation of this service is {environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}"
        )
    else:
        phrase = http.HTTPStatus(code).phrase
        error, message = f"{phrase.replace(' ', '')}Exception", phrase
    headers = [("Content-Type", "application/json"), ("x-amzn-ErrorType", error)]
    return status, headers, error_body(error, message)


def with_json_errors(handler: type[WSGIRequestHandler]) -> type[WSGIRequestHandler]:
    """``handler``, whose own errors (what it cannot read as HTTP) are JSON, not an HTML page, and
    leave no line on the terminal."""

    class JsonErrors(handler):  # type: ignore[valid-type,misc]
        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            status = http.HTTPStatus(code)
            body = error_body(f"{status.phrase.replace(' ', '')}Exception", message or status.phrase)
            self.close_connection = True
            self.send_response(code, message)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_error(self, format: str, *args: Any) -> None:
            return  # the answer says it; the line repeated the request's bytes on the terminal

    return JsonErrors
