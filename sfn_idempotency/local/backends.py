"""Where moto's services live: in this process behind botocore (tests), or behind an HTTP endpoint
that the AWS CLI and any SDK can reach (``sfn-idempotency serve``). Both run the same interpreter."""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Protocol

from moto import mock_aws
from moto.core.config import default_user_config
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

from sfn_idempotency.console import ConsoleSettings, check_assets, with_console


class PortInUseError(OSError):
    """The endpoint's port is taken."""


class Backend(Protocol):
    @property
    def endpoint_url(self) -> str | None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class InProcessBackend:
    """moto intercepts every botocore call in this process."""

    endpoint_url = None

    def __init__(self) -> None:
        self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})

    def start(self) -> None:
        self._mock.start()

    def stop(self) -> None:
        self._mock.stop()


class ServerBackend:
    """moto's server on ``host:port``; the interpreter calls back into it for DynamoDB. With
    ``console`` settings it also serves the console's page at the endpoint's root."""

    def __init__(self, host: str, port: int, console: ConsoleSettings | None = None) -> None:
        self.host = host
        self.port = port
        self.endpoint_url = f"http://{host}:{port}"
        self.console = console
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
        app = DomainDispatcherApplication(create_backend_app)
        wsgi = app if self.console is None else with_console(app, self.console)
        # As moto's ThreadedMotoServer does, with the console's files in front of moto's dispatch.
        self._server = make_server(self.host, self.port, wsgi, True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        default_user_config["stepfunctions"]["execute_state_machine"] = bool(self._saved_execute)
        if self._saved_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = self._saved_port


def _ensure_free(host: str, port: int) -> None:
    # moto's server thread would die silently on a taken port and leave start() waiting forever.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as error:
            raise PortInUseError(f"cannot listen on {host}:{port}: {error.strerror}") from None
