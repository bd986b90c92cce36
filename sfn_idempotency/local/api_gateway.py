"""API Gateway's REST integration, locally: the same Velocity templates (apis/*.vtl) rendered with
LocalStack's airspeed, and ``$input``, ``$util``, ``$context``, ``$stageVariables`` as API Gateway
documents them (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html),
only what the templates use; a reference they do not use is refused by name, not guessed."""

from __future__ import annotations

import base64
import functools
import json
import re
import socket
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import airspeed

from sfn_idempotency.local.request_guard import AccessPolicy

ROOT = "$"
# Java's StringEscapeUtils.escapeJavaScript, which $util.escapeJavaScript is.
_JAVASCRIPT_ESCAPES = {'"': '\\"', "'": "\\'", "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f"}
_JAVASCRIPT_ESCAPES |= {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class UnsupportedTemplateFeature(NotImplementedError):
    """A template uses something of API Gateway's template language this renderer does not provide."""


class JavaString(str):
    """A string with the Java String methods templates call on it."""

    def replaceAll(self, regex: str, replacement: str) -> JavaString:
        return JavaString(re.sub(regex, replacement.replace("\\", "\\\\"), self))


class Util:
    """``$util``."""

    def base64Encode(self, text: str) -> str:
        return base64.b64encode(str(text or "").encode("utf-8")).decode("ascii")

    def escapeJavaScript(self, text: str) -> JavaString:
        escaped = "".join(_JAVASCRIPT_ESCAPES.get(char, _unicode_escape(char)) for char in str(text))
        return JavaString(escaped)

    def parseJson(self, text: str) -> Any:
        return json.loads(text)


def _unicode_escape(char: str) -> str:
    return char if " " <= char < "\x7f" else f"\\u{ord(char):04x}"


class Input:
    """``$input`` of one request: its body and its parameters (headers only; no path or query here)."""

    def __init__(self, body: str, headers: Mapping[str, str]) -> None:
        self.body = body
        # API Gateway matches header names without regard to case.
        self._headers = {name.lower(): value for name, value in headers.items()}

    def params(self, name: str) -> str:
        """A parameter by name (path, query string, then header: here there are only headers)."""
        return self._headers.get(name.lower(), "")

    def json(self, path: str) -> str:
        _only_root(path)
        return self.body if self.body.strip() else "{}"

    def path(self, path: str) -> Any:
        _only_root(path)
        return json.loads(self.body) if self.body.strip() else {}


def _only_root(path: str) -> None:
    if path != ROOT:
        raise UnsupportedTemplateFeature(f"$input paths other than '$' (got {path!r})")


@dataclass
class Rendered:
    """What a template produced: its text, and the status and headers it overrode."""

    text: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


def render(
    template: str, *, body: str, headers: Mapping[str, str], stage_variables: Mapping[str, str]
) -> Rendered:
    override: dict[str, Any] = {"status": None, "header": {}}
    context = {"requestId": str(uuid.uuid4()), "responseOverride": override}
    namespace = {
        "input": Input(body, headers),
        "util": Util(),
        "context": context,
        "stageVariables": dict(stage_variables),
    }
    text = _compiled(template).merge(namespace)
    status = override["status"]
    return Rendered(
        text=text.strip(),
        status=int(status) if status is not None else None,
        headers={name: str(value) for name, value in override["header"].items() if value is not None},
    )


@functools.lru_cache(maxsize=16)
def _compiled(template: str) -> Any:
    """Each template parsed once (a compiled template holds no request's values)."""
    return airspeed.Template(template)


# -- the HTTP side ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Route:
    """``POST /<path>``: StartSyncExecution through the request and response templates."""

    path: str
    request_template: str
    response_template: str
    stage_variables: Mapping[str, str]


StartSyncExecution = Callable[[dict[str, Any]], dict[str, Any]]


def answer(
    route: Route, start_sync_execution: StartSyncExecution, body: str, headers: Mapping[str, str]
) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of one request, as API Gateway's AWS integration would answer it."""
    request = render(
        route.request_template, body=body, headers=headers, stage_variables=route.stage_variables
    )
    try:
        call = json.loads(request.text)
    except json.JSONDecodeError:
        # API Gateway cannot place a body that is not JSON into the template's JSON either.
        problem = {
            "type": "about:blank",
            "title": "Bad Request",
            "status": 400,
            "detail": "The request body is not JSON.",
        }
        return 400, {"Content-Type": "application/problem+json"}, json.dumps(problem)
    execution = start_sync_execution(call)
    response = render(
        route.response_template,
        body=json.dumps(execution, default=str),
        headers={},
        stage_variables=route.stage_variables,
    )
    return response.status or 200, {"Content-Type": "application/json", **response.headers}, response.text


class LocalRestApi:
    """A loopback HTTP server for its routes; ``start()`` returns its endpoint. Every request passes
    ``access_policy`` first, as every request to ``serve`` does. ``routes`` may be replaced while
    it serves (a stack was deployed again): the port stays."""

    def __init__(
        self,
        routes: Sequence[Route],
        start_sync_execution: StartSyncExecution,
        host: str = "127.0.0.1",
        access_policy: AccessPolicy | None = None,
        state_machine_arn: str | None = None,
    ) -> None:
        self.routes = tuple(routes)
        self.state_machine_arn = state_machine_arn
        handler = _handler(self, start_sync_execution, access_policy or AccessPolicy(listen_host=host))
        self._server = _Server((host, 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="local-rest-api", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def route(self, path: str) -> Route | None:
        wanted = path.split("?", 1)[0].strip("/")
        return next((route for route in self.routes if route.path.strip("/") == wanted), None)

    def start(self) -> str:
        self._thread.start()
        return self.endpoint

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default (5) resets connections under a burst of retries


def _handler(
    api: LocalRestApi, start_sync_execution: StartSyncExecution, access_policy: AccessPolicy
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def parse_request(self) -> bool:
            """Refuse, whatever the method, a request the access policy does not admit."""
            if not super().parse_request():
                return False
            headers = {name.lower(): value for name, value in self.headers.items()}
            refusal = access_policy.refusal(headers)
            if refusal is None:
                return True
            self.close_connection = True  # the refused request's body is never read
            self.send_response(refusal.status)
            for name, value in [*refusal.headers, ("Connection", "close")]:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(refusal.body)
            return False

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without this, Nagle's algorithm and the client's
            # delayed ACK hold the body back ~40 ms on a kept-alive connection.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", errors="replace")
            route = api.route(self.path)
            if route is None:
                self._send(404, {"Content-Type": "application/json"}, '{"message":"Not Found"}')
                return
            status, headers, text = answer(route, start_sync_execution, body, dict(self.headers.items()))
            self._send(status, headers, text)

        def _send(self, status: int, headers: Mapping[str, str], text: str) -> None:
            payload = text.encode("utf-8")
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return  # no access log line per request

    return Handler
