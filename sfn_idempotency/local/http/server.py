"""REST API stages served on loopback: one port a stage, every verb, at ``/<stage>/<path>`` as
API Gateway's invoke URL has it (sfn_idempotency.local.http.integrations answers each request).
Every request passes the access policy first, as every request to ``serve`` does."""

from __future__ import annotations

import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sfn_idempotency.local.http.integrations import (
    HttpAnswer,
    HttpRequest,
    Services,
    answer,
    gateway_error,
    missing_authentication_token,
)
from sfn_idempotency.local.http.request_guard import AccessPolicy
from sfn_idempotency.local.http.rest_apis import Stage, stages_of

# The stage that the SAM transform adds to every AWS::Serverless::Api beside its StageName (for
# the OpenAPI 2 default of OpenApiVersion).
SAM_EXTRA_STAGE = "Stage"
# How often an idle server looks for a shutdown: at the standard library's 0.5 s, stopping a
# server (every cloud that served an API, every test of one) waited up to half a second.
SHUTDOWN_POLL_SECONDS = 0.02
_VERBS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


class LocalRestApi:
    """A loopback HTTP server for one stage; ``start()`` returns its base URL. ``stage`` may be
    replaced while it serves (the stack was deployed again): the port stays. ``stage_in_path``:
    the stage's name is the first segment of every path (API Gateway's invoke URL); without it
    the methods are at the root (the example's front door)."""

    def __init__(
        self,
        stage: Stage,
        services: Services,
        *,
        account: str,
        region: str,
        host: str = "127.0.0.1",
        port: int = 0,
        access_policy: AccessPolicy | None = None,
        stage_in_path: bool = True,
        state_machine_arn: str | None = None,
    ) -> None:
        self.stage = stage
        self.stage_in_path = stage_in_path
        self.state_machine_arn = state_machine_arn
        self._services = services
        self._account, self._region = account, region
        handler = _handler(self, access_policy or AccessPolicy(listen_host=host))
        self._server = _Server((host, port), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            name="local-rest-api",
            daemon=True,
        )

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def url(self) -> str:
        """The stage's base URL, as the stack's output names it on AWS (ending in ``/``)."""
        return f"{self.endpoint}/{self.stage.name}/" if self.stage_in_path else f"{self.endpoint}/"

    def start(self) -> str:
        self._thread.start()
        return self.endpoint

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, request: HttpRequest) -> HttpAnswer:
        stage = self.stage
        if self.stage_in_path:
            name, _, below = request.path.lstrip("/").partition("/")
            if name != stage.name:
                return missing_authentication_token()
            request = HttpRequest(
                request.verb, f"/{below}", request.query, request.headers, request.body, request.source_ip
            )
        try:
            return answer(stage, request, self._services, self._account, self._region)
        except Exception:  # an integration the engine failed to run: API Gateway's 500, never a page
            return gateway_error(500, "InternalServerErrorException", "Internal server error")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default (5) resets connections under a burst of retries


def _handler(api: LocalRestApi, access_policy: AccessPolicy) -> type[BaseHTTPRequestHandler]:
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

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = urllib.parse.urlsplit(self.path)
            request = HttpRequest(
                verb=self.command,
                path=url.path,  # as sent: a path parameter is decoded once matched
                query=urllib.parse.parse_qs(url.query, keep_blank_values=True),
                headers=dict(self.headers.items()),
                body=body,
                source_ip=str(self.client_address[0]),
            )
            self._send(api.answer(request), with_body=self.command != "HEAD")

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            """Python's HTML error page never: an unknown verb or a bad request line is API Gateway's JSON."""
            self.close_connection = True
            error = (
                missing_authentication_token()
                if code == 501
                else gateway_error(code, "BadRequestException", message or "Bad Request")
            )
            self._send(error, with_body=True)

        def _send(self, reply: HttpAnswer, *, with_body: bool) -> None:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if with_body:
                self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # no access log line per request

    return Handler


class RestApiServers:
    """One LocalRestApi per API stage, kept across deployments (the port stays), stopped on close.
    ``first_port``: the first stage served takes it, each next one the port after (0: any free)."""

    def __init__(
        self,
        client: Callable[..., Any],
        services: Services,
        access_policy: AccessPolicy,
        *,
        account: str,
        region: str,
        first_port: int = 0,
    ) -> None:
        self._client = client
        self._services = services
        self._access_policy = access_policy
        self._account, self._region = account, region
        self._next_port = first_port
        self._servers: dict[tuple[str, str], LocalRestApi] = {}
        self._lock = threading.Lock()

    def serve(self, rest_api_ids: Iterable[str]) -> tuple[dict[tuple[str, str], str], list[str]]:
        """Serve these APIs' stages: each one's local base URL by (rest api id, stage), and what is
        not served. A stage or API that no longer exists stops being served."""
        apigateway = self._client("apigateway")
        ids = list(dict.fromkeys(rest_api_ids))
        wanted = {
            (stage.rest_api_id, stage.name): stage for api in ids for stage in stages_of(apigateway, api)
        }
        existing = {api["id"] for api in apigateway.get_rest_apis()["items"]}
        with self._lock:
            gone = [
                key
                for key in self._servers
                if key[0] not in existing or (key[0] in ids and key not in wanted)
            ]
            for key in gone:
                self._servers.pop(key).stop()
            endpoints: dict[tuple[str, str], str] = {}
            unserved: list[str] = []
            # The app's own stages take the first ports: SAM's extra "Stage" stage comes last.
            for key, stage in sorted(wanted.items(), key=lambda item: item[0][1] == SAM_EXTRA_STAGE):
                server = self._servers.get(key) or self._started(stage)
                server.stage = stage
                endpoints[key] = server.url
                unserved.extend(f"{stage.rest_api_id}/{stage.name} {line}" for line in stage.unserved)
        return endpoints, unserved

    def _started(self, stage: Stage) -> LocalRestApi:
        server = LocalRestApi(
            stage,
            self._services,
            account=self._account,
            region=self._region,
            port=self._next_port,
            access_policy=self._access_policy,
        )
        server.start()
        if self._next_port:
            self._next_port += 1
        self._servers[(stage.rest_api_id, stage.name)] = server
        return server

    def close(self) -> None:
        with self._lock:
            for server in self._servers.values():
                server.stop()
            self._servers.clear()


def stage_urls(endpoints: Mapping[tuple[str, str], str], rest_api_id: str) -> dict[str, str]:
    """An API's served stages: base URL by stage name."""
    return {stage: url for (api_id, stage), url in endpoints.items() if api_id == rest_api_id}
