"""Where moto's services live: in this process behind botocore (tests), or behind an HTTP endpoint
that the AWS CLI and any SDK can reach (``sfn-idempotency serve``). Both run the same interpreter."""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Protocol

from moto import mock_aws
from moto.core.base_backend import BackendDict
from moto.core.config import default_user_config
from moto.core.model_instances import reset_model_data
from moto.moto_server import werkzeug_app
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from sfn_idempotency.console import ConsoleSettings, check_assets, with_console
from sfn_idempotency.local import compat
from sfn_idempotency.local.http.request_guard import AccessPolicy, guarded
from sfn_idempotency.local.http.server import SHUTDOWN_POLL_SECONDS
from sfn_idempotency.local.http.server_errors import answered_in_json, with_json_errors


class PortInUseError(OSError):
    """The endpoint's port is taken."""


class Backend(Protocol):
    @property
    def endpoint_url(self) -> str | None: ...

    @property
    def access_policy(self) -> AccessPolicy: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class InProcessBackend:
    """moto intercepts every botocore call in this process."""

    endpoint_url = None
    # No page is served here; a loopback server the engine starts (the HTTP front door) still
    # answers loopback host names only, and no web origin.
    access_policy = AccessPolicy()

    def __init__(self) -> None:
        self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})

    def start(self) -> None:
        self._mock.start()

    def stop(self) -> None:
        self._mock.stop()


class ServerBackend:
    """moto's server on ``host:port``; the interpreter calls back into it for DynamoDB. With
    ``console`` settings it also serves the console's page at the endpoint's root. Every request
    passes ``access_policy`` first (default: loopback host names, and the console's own origins)."""

    def __init__(
        self,
        host: str,
        port: int,
        console: ConsoleSettings | None = None,
        access_policy: AccessPolicy | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.endpoint_url = f"http://{host}:{port}"
        self.console = console
        self.access_policy = access_policy or AccessPolicy.build(host, [port])
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._saved_execute: bool | None = None
        self._saved_port: str | None = None

    def start(self) -> None:
        _ensure_free(self.host, self.port)
        if self.console is not None:
            check_assets()
        stepfunctions = default_user_config["stepfunctions"]
        self._saved_execute = stepfunctions.get("execute_state_machine", False)
        stepfunctions["execute_state_machine"] = True
        # moto's interpreter reaches the other services at localhost:$MOTO_PORT.
        self._saved_port = os.environ.get("MOTO_PORT")
        os.environ["MOTO_PORT"] = str(self.port)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log line per request
        app = answered_in_json(DomainDispatcherApplication(create_backend_app))
        wsgi = guarded(app if self.console is None else with_console(app, self.console), self.access_policy)
        # As moto's ThreadedMotoServer does, with the request guard, then the console's files, in
        # front of moto's dispatch, whose errors are JSON. The handler is looked up now: fix 112 keeps
        # its connections.
        self._server = make_server(
            self.host,
            self.port,
            wsgi,
            True,
            request_handler=with_json_errors(werkzeug_app.MotoRequestHandler),
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._server.server_close()
            compat.moto_server.close_connections(self._server)
        # As mock_aws does when it stops: the next cloud in this process starts empty.
        BackendDict.reset()
        reset_model_data()
        default_user_config["stepfunctions"]["execute_state_machine"] = bool(self._saved_execute)
        if self._saved_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = self._saved_port


def _ensure_free(host: str, port: int) -> None:
    # moto's server thread would die silently on a taken port and leave start() waiting forever.
    # The probe binds as the server will (werkzeug's, like every socketserver HTTP server, reuses
    # the address): a port whose last connection is in TIME-WAIT is free to it, not taken.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise PortInUseError(f"cannot listen on {host}:{port}: {error.strerror}") from None
