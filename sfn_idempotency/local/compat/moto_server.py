"""moto's server, which ``serve`` runs (fixes 112 to 115, 123, 125, 131 and 134, speed: no answer
changes; fixes 144 and 154, answers for requests that name no service, are described where they
are made).

112. moto's server (werkzeug's) closed the connection after every answer, so every request paid for
     a new connection: the accept, a thread, the client's connect. Connections are kept, as AWS's
     endpoints keep them, for every request whose body is framed by its Content-Length (a chunked
     body is still answered and closed). Each request reads exactly its own body, and werkzeug's
     drain of what a closing connection has left unread, which would read the client's next
     request, finds nothing on a kept connection. A stopped server ends the connections it kept.
113. Each request's header block was parsed by the email package's generic message parser, a
     quarter of ``serve``'s time on a DescribeExecution. A block of plain ``Name: value`` lines
     becomes the same ``HTTPMessage`` directly; any other block (a folded line, a malformed line,
     a multipart or message content type) still goes to the email parser.
114. To route a request, moto matched ``http://<host>`` against every service's URL patterns in
     turn, for every request. The answer for a host depends only on the installed moto, so each
     host's service is matched once.
115. A StartExecution's execution began inside the request, and under the one interpreter lock it
     ran before the answer was written (up to the lock's 5 ms turn). An execution a request starts
     now begins once that request is answered, as on AWS, where StartExecution answers at once and
     the execution runs on. An execution started elsewhere (a ``.sync`` child, an in-process call)
     begins at once, as before.
123. werkzeug wrote each request's access-log line (the path decoded, escaped, colored and dated)
     before its logger was asked whether it takes INFO lines; ``serve`` sets it to WARNING. The
     line is written when the logger would take it (or has no level yet: werkzeug sets INFO then).
125. moto's Flask apps run in debug mode, where every request's ``files`` got a class built for it,
     whose ``KeyError`` for a missing file names the form field of that name. A request without
     form fields (every JSON request) cannot have such a field, and its error is the plain
     ``KeyError`` either way, so it keeps its class.
131. Every request went through Flask's request machinery (a request context pushed and popped, its
     URL matched against the service's rules, the answer finalized): 5 % of the instructions
     ``serve`` spent on a StartExecution, ten Pass states and a DescribeExecution. An SDK's request to a JSON service (a POST with ``X-Amz-Target``, no
     Origin or Referer: no web page's) goes to the view its path matched the first time, as
     Flask would call it, and its answer gets the headers Flask's after-request functions (moto's
     CORS) add to such a request, learnt once for that path. Any other request, and any app with
     other request hooks, still goes through Flask.
134. moto's request handler keeps the spelling of S3 metadata header names that have an
     underscore (WSGI folds ``_`` and ``-`` alike), and for that built every header's WSGI name
     at every request. A request none of whose header names has an underscore (every SDK's but
     S3 metadata's) keeps none: its map of kept names is empty at once.
"""

from __future__ import annotations

import contextlib
import email.parser
import functools
import http.client
import io
import json
import logging
import re
import socket
import threading
import types
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, kept_on

_DISCARD_CHUNK_BYTES = 1 << 20
_KEPT_CONNECTIONS: weakref.WeakSet[Any] = weakref.WeakSet()  # their bodies are framed: no drain
_OPEN_CONNECTIONS: weakref.WeakKeyDictionary[Any, weakref.WeakSet[Any]] = weakref.WeakKeyDictionary()
_OPEN_LOCK = threading.Lock()


class _Body(io.RawIOBase):
    """One request's body on a kept connection: exactly its Content-Length, then end of stream, so
    that neither the application nor werkzeug's drain can read into the next request."""

    def __init__(self, stream: Any, length: int) -> None:
        super().__init__()
        self._stream = stream
        self.remaining = length

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.remaining <= 0:
            return 0
        view = memoryview(buffer)[: self.remaining]
        data = self._stream.read(len(view))
        view[: len(data)] = data
        self.remaining -= len(data)
        if not data:
            self.remaining = 0  # the client went away mid-body
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        limit = self.remaining if size is None or size < 0 else min(size, self.remaining)
        line = self._stream.readline(limit) if limit > 0 else b""
        self.remaining -= len(line)
        return bytes(line)

    def discard_rest(self) -> None:
        while self.remaining > 0 and self.read(min(self.remaining, _DISCARD_CHUNK_BYTES)):
            pass


def _framed_length(headers: Any) -> int | None:
    """The body's length when the request frames it by Content-Length (or has none); ``None`` for a
    chunked or malformed body, whose end only werkzeug's drain finds."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return None
    length = headers.get("Content-Length")
    if length is None:
        return 0
    return int(length) if length.strip().isdigit() else None


def _connections_kept(original: Any) -> Any:
    class KeptConnectionHandler(original):  # type: ignore[misc]
        protocol_version = "HTTP/1.1"
        MessageClass = _PlainHeaders  # fix 113 parses its header blocks
        rfile: Any

        def setup(self) -> None:
            super().setup()
            # A small answer goes out at once, not after the client's delayed acknowledgement.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with _OPEN_LOCK:
                _OPEN_CONNECTIONS.setdefault(self.server, weakref.WeakSet()).add(self.connection)

        def run_wsgi(self) -> None:
            _answering.starts = []
            try:
                self._answer()
            finally:
                starts, _answering.starts = _answering.starts, None
                for start in starts:  # fix 115: the executions this request started, now answered
                    start()

        def _answer(self) -> None:
            length = _framed_length(self.headers)
            if length is None or self.close_connection:
                super().run_wsgi()  # werkzeug's way: answer, drain, close
                return
            stream, body = self.rfile, _Body(self.rfile, length)
            self.rfile = body
            _KEPT_CONNECTIONS.add(self.connection)
            try:
                super().run_wsgi()
            finally:
                _KEPT_CONNECTIONS.discard(self.connection)
                self.rfile = stream
                body.discard_rest()  # what the application left unread, and nothing after it

        def send_header(self, keyword: str, value: str) -> None:
            if (
                keyword.lower() == "connection"
                and value.lower() == "close"
                and self.connection in _KEPT_CONNECTIONS
            ):
                return  # werkzeug's "close", on a connection whose every request is framed
            super().send_header(keyword, value)

    KeptConnectionHandler.__name__ = KeptConnectionHandler.__qualname__ = original.__name__
    return KeptConnectionHandler


_answering = threading.local()  # .starts: the executions a request started, while it answers


def _started_once_answered(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def start(self: Any) -> None:
        starts = getattr(_answering, "starts", None)
        if starts is None:
            original(self)  # not a request's: an interpreter's .sync child, an in-process call
        else:
            starts.append(functools.partial(original, self))

    return start


def close_connections(server: Any) -> None:
    """End the connections a stopped server kept: a client's next request on one fails and is made
    again on a new connection, to whatever listens then, never answered by the stopped server."""
    with _OPEN_LOCK:
        connections = list(_OPEN_CONNECTIONS.pop(server, ()))
    for connection in connections:
        with contextlib.suppress(OSError):  # the client closed it first
            connection.shutdown(socket.SHUT_RDWR)


def _no_drain_on_kept_connections(original: Any) -> Any:
    """werkzeug's ``selectors``, but a kept connection's drain finds nothing to read: its body was
    read to its length, and what is readable now is the client's next request."""

    class _NothingToDrain:
        def __init__(self) -> None:
            self._real: Any = None

        def register(self, fileobj: Any, events: int, data: Any = None) -> Any:
            if fileobj not in _KEPT_CONNECTIONS:
                self._real = original.DefaultSelector()
                return self._real.register(fileobj, events, data)
            return None

        def select(self, timeout: float | None = None) -> list[Any]:
            return [] if self._real is None else self._real.select(timeout)

        def close(self) -> None:
            if self._real is not None:
                self._real.close()

    return types.SimpleNamespace(DefaultSelector=_NothingToDrain, EVENT_READ=original.EVENT_READ)


class _PlainHeaders(http.client.HTTPMessage):
    """The header block of a request that fix 112's handler reads (fix 113 knows it by this class)."""


# A block of the email parser's plain header lines (its ``headerRE``, less what it treats specially:
# an envelope ``From `` line, a continuation), each a name of at least one printable character and
# its colon, then the empty line that ends the block.
_PLAIN_BLOCK = re.compile(r"(?:(?!From )[\041-\071\073-\176]+:[^\r\n]*\r?\n)*\r?\n\Z")
_PARSED_BODY_TYPES = ("multipart/", "message/")  # the email parser reads a body for these


def _plain_header_block(original: Callable[..., Any]) -> Callable[..., Any]:
    def parse_headers(fp: Any, _class: Any = http.client.HTTPMessage) -> Any:
        if _class is not _PlainHeaders:
            return original(fp, _class=_class)
        block = b"".join(http.client._read_headers(fp)).decode("iso-8859-1")  # type: ignore[attr-defined]
        return _plain_message(block) or email.parser.Parser(_class=_class).parsestr(block)

    return parse_headers


def _plain_message(block: str) -> _PlainHeaders | None:
    """What the email parser makes of ``block`` when each line is ``Name: value``; else ``None``."""
    if not _PLAIN_BLOCK.match(block):
        return None
    headers = []
    for line in block.split("\n")[:-2]:  # str.splitlines would split at more than the parser does
        name, _, value = line.partition(":")
        headers.append((name, value.lstrip(" \t").rstrip("\r\n")))  # compat32's header_source_parse
    content_type = next((value for name, value in headers if name.lower() == "content-type"), "")
    if content_type.partition(";")[0].strip().lower().startswith(_PARSED_BODY_TYPES):
        return None
    message = _PlainHeaders()
    message._headers = headers  # type: ignore[attr-defined]
    message.set_payload("")
    return message


_MATCHED = "_sfn_local_matched_hosts"  # on a dispatcher: each host's service, as its patterns said


def _hosts_matched_once(original: Callable[[Any, str | None], Any]) -> Callable[[Any, str | None], Any]:
    def get_backend_for_host(self: Any, host: str | None) -> Any:
        matched: dict[str, Any] = kept_on(self, _MATCHED)
        if host is not None and host in matched:
            return matched[host]
        backend = original(self, host)
        if host is not None and backend is not None:  # an unknown host is asked (and told) again
            matched[host] = backend
        return backend

    return get_backend_for_host


def _request_line_when_taken(original: Callable[..., None]) -> Callable[..., None]:
    logger = logging.getLogger("werkzeug")

    def log_request(self: Any, code: int | str = "-", size: int | str = "-") -> None:
        if logger.level == logging.NOTSET or logger.isEnabledFor(logging.INFO):
            original(self, code, size)

    return log_request


def _files_error_for_forms(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def attach_enctype_error_multidict(request: Any) -> None:
        if request.form:  # the only requests whose missing file can be named in a form field
            original(request)

    return attach_enctype_error_multidict


# -- fix 131: an SDK's request to a JSON service, answered without Flask's request machinery ---------
# Headers that make a request one for Flask: a browser's (CORS answers depend on them).
_BROWSER_HEADERS = ("HTTP_ORIGIN", "HTTP_REFERER", "HTTP_ACCESS_CONTROL_REQUEST_PRIVATE_NETWORK")
_ROUTES = "_sfn_local_sdk_routes"  # on a Flask app: each path's route, or None (Flask answers it)
_PREFLIGHT_HEADER = "HTTP_ACCESS_CONTROL_REQUEST_METHOD"
_ROUTES_KEPT = 64  # paths remembered an app; an SDK's requests to a JSON service all go to "/"


@dataclass(frozen=True)
class _Route:
    view: Any  # moto's convert_to_flask_response around the service's dispatch
    added_headers: tuple[tuple[str, str], ...]  # what the app's after-request functions add


def _sdk_requests_dispatched(original: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    def __call__(self: Any, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not _is_an_sdk_request(environ):
            return original(self, environ, start_response)
        app = self.get_application(environ)
        route = _route(app, environ.get("PATH_INFO", ""))
        if route is None:
            return app(environ, start_response)  # type: ignore[no-any-return]
        return _answer(app, route, environ)(environ, start_response)  # type: ignore[no-any-return]

    return __call__


def _is_an_sdk_request(environ: dict[str, Any]) -> bool:
    return (
        environ.get("REQUEST_METHOD") == "POST"
        and "HTTP_X_AMZ_TARGET" in environ
        and not any(header in environ for header in _BROWSER_HEADERS)
    )


def _route(app: Any, path: str) -> _Route | None:
    routes = kept_on(app, _ROUTES)
    if path in routes:
        return routes[path]  # type: ignore[no-any-return]
    route = _learnt_route(app, path)
    if len(routes) < _ROUTES_KEPT:
        routes[path] = route
    return route


def _learnt_route(app: Any, path: str) -> _Route | None:
    """The view Flask would call for a POST to ``path``, and the headers its after-request functions
    add to the answer; ``None`` when Flask would do more (another hook, a redirect, no match)."""
    from moto.core.utils import convert_to_flask_response
    from werkzeug.exceptions import HTTPException

    hooks = (
        app.blueprints,
        app.before_request_funcs,
        app.url_value_preprocessors,
        app.teardown_request_funcs,
        app.error_handler_spec,
    )
    if any(hooks):
        return None
    try:
        endpoint, arguments = app.url_map.bind("localhost").match(path, "POST")
    except HTTPException:  # no rule (404), a redirect: Flask's answer
        return None
    view = app.view_functions.get(endpoint)
    if arguments or not isinstance(view, convert_to_flask_response):
        return None
    # moto's CORS answers a request without an Origin the same whatever it asks: learnt once.
    with app.test_request_context(path, method="POST"):
        bare = app.response_class()
        before = list(bare.headers.items())
        after = list(app.process_response(bare).headers.items())
    return _Route(view, tuple(header for header in after if header not in before))


def _answer(app: Any, route: _Route, environ: dict[str, Any]) -> Any:
    from moto.core.request import normalize_request
    from werkzeug.exceptions import HTTPException

    request = normalize_request(app.request_class(environ))
    try:
        response = _moto_answer(app, route.view.callback, request)
    except HTTPException as error:  # out of moto's view: Flask answers with the exception's response
        response = app.response_class.force_type(error, environ)
    # As moto's CORS does: an answer that already says its CORS headers keeps them.
    if not any(name in response.headers for name, _ in route.added_headers):
        for name, value in route.added_headers:
            response.headers.add(name, value)
    return response


def _moto_answer(app: Any, callback: Callable[..., Any], request: Any) -> Any:
    """What moto's ``convert_to_flask_response`` answers (a POST), given Flask's request."""
    from botocore.exceptions import ClientError
    from moto.moto_api import recorder

    try:
        recorder._record_request(request)
        result = callback(request, request.raw_url, dict(request.headers))
    except ClientError as error:
        result = 400, {}, error.response["Error"]["Message"]
    status, headers, content = result if len(result) == 3 else (200, {}, result)
    return app.response_class(response=content, status=status, headers=headers)


def _preflights_answered(original: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """Fix 144: a browser's CORS preflight (an OPTIONS with ``Access-Control-Request-Method``) names
    no service, so moto gave it to S3's bucket listing, which moto 5.2.6 fails with an
    AssertionError (HTTP 500). It is answered as an AWS endpoint answers one: 200, no body, with the
    CORS headers moto's server adds (its after-request functions, run in the request's context)."""

    def __call__(self: Any, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "OPTIONS" or _PREFLIGHT_HEADER not in environ:
            return original(self, environ, start_response)
        app = self.get_application(environ)
        with app.request_context(environ):
            response = app.process_response(app.response_class(status=200))
        return response(environ, start_response)  # type: ignore[no-any-return]

    return __call__


# Fix 154: AWS's common error for a request without credentials (every API reference's "Common
# Errors": MissingAuthenticationToken, HTTP 403).
_NO_CREDENTIALS = json.dumps(
    {
        "__type": "MissingAuthenticationToken",
        "message": "The request must contain either a valid (registered) AWS access key ID or X.509 certificate.",
    }
)
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


def _unnamed_services_refused(original: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """Fix 154: a request to ``/`` that names no service (not signed, no ``X-Amz-Target``, no query
    protocol ``Action``: ``curl -X POST``) went to S3's bucket listing, which moto fails with an
    AssertionError (500 ``InternalFailure``). It is answered as AWS answers a request without
    credentials. A read of ``/`` is still S3's, or the console's."""

    def __call__(self: Any, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if (
            environ.get("REQUEST_METHOD") in _READS
            or environ.get("PATH_INFO") != "/"
            or "HTTP_X_AMZ_TARGET" in environ  # it names its service, one moto may not know
            or self.infer_service_region_host(environ, "/") is not None
        ):
            return original(self, environ, start_response)
        from werkzeug.wrappers import Response

        answer = Response(_NO_CREDENTIALS, status=403, content_type="application/x-amz-json-1.0")
        return answer(environ, start_response)

    return __call__


def _names_kept_only_when_underscored(original: Callable[[Any], dict[str, Any]]) -> Any:
    """Fix 134: moto's ``make_environ``, for a request with an underscore in a header name."""
    from moto.core.request import PRESERVED_HEADER_NAMES_ENVIRON_KEY
    from werkzeug.serving import WSGIRequestHandler

    def make_environ(self: Any) -> dict[str, Any]:
        if any("_" in name for name in self.headers):  # the header names, as keys() lists them
            return original(self)
        environ: dict[str, Any] = WSGIRequestHandler.make_environ(self)
        environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = {}  # what moto keeps when no name has one
        return environ

    return make_environ


PATCHES: tuple[Patch, ...] = (
    Patch(112, "moto.moto_server.werkzeug_app", "MotoRequestHandler", _connections_kept),
    Patch(112, "werkzeug.serving", "selectors", _no_drain_on_kept_connections),
    Patch(113, "http.client", "parse_headers", _plain_header_block),
    Patch(
        114,
        "moto.moto_server.werkzeug_app:DomainDispatcherApplication",
        "get_backend_for_host",
        _hosts_matched_once,
    ),
    Patch(
        115,
        "moto.stepfunctions.parser.backend.execution_worker:ExecutionWorker",
        "start",
        _started_once_answered,
    ),
    Patch(123, "werkzeug.serving:WSGIRequestHandler", "log_request", _request_line_when_taken),
    Patch(125, "flask.debughelpers", "attach_enctype_error_multidict", _files_error_for_forms),
    Patch(
        131, "moto.moto_server.werkzeug_app:DomainDispatcherApplication", "__call__", _sdk_requests_dispatched
    ),
    Patch(144, "moto.moto_server.werkzeug_app:DomainDispatcherApplication", "__call__", _preflights_answered),
    Patch(
        154,
        "moto.moto_server.werkzeug_app:DomainDispatcherApplication",
        "__call__",
        _unnamed_services_refused,
    ),
    Patch(
        134,
        "moto.moto_server.werkzeug_app:MotoRequestHandler",
        "make_environ",
        _names_kept_only_when_underscored,
    ),
)
