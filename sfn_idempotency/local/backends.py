"""Where moto's services live: in this process behind botocore (tests), or behind an HTTP endpoint
that the AWS CLI and any SDK can reach (``sfn-idempotency serve``). Both run the same interpreter."""

from __future__ import annotations

import os
import socket
from typing import Protocol

from moto import mock_aws
from moto.core.config import default_user_config
from moto.server import ThreadedMotoServer


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
    """moto's server on ``host:port``; the interpreter calls back into it for DynamoDB."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.endpoint_url = f"http://{host}:{port}"
        self._server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
        self._saved_execute: bool | None = None
        self._saved_port: str | None = None

    def start(self) -> None:
        _ensure_free(self.host, self.port)
        stepfunctions = default_user_config["stepfunctions"]
        self._saved_execute = stepfunctions.get("execute_state_machine", False)
        stepfunctions["execute_state_machine"] = True
        # moto's interpreter reaches the other services at localhost:$MOTO_PORT.
        self._saved_port = os.environ.get("MOTO_PORT")
        os.environ["MOTO_PORT"] = str(self.port)
        self._server.start()

    def stop(self) -> None:
        self._server.stop()
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
