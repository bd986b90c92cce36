"""A Python handler as Lambda's Python runtime holds it: loaded from its code folder as a cold start
imports it, called with the context the runtime gives, and its end of the runtime's process
answered as Lambda answers it. The engine's own functions (``engine.lambdas``) and the in-process
runtime (``python``) both load and call handlers this way."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moto.moto_api._internal import mock_random

from sfn_idempotency.flow.resources import LAMBDAS_DIR
from sfn_idempotency.local.runtimes.python_interface import HandlerNotFoundError

Handler = Callable[[Any, Any], Any]


_cold_start_lock = threading.Lock()
_module_numbers = itertools.count(1)


@dataclass
class LocalLambdaContext:
    """The attributes of ``awslambdaric``'s LambdaContext that handlers and Powertools read."""

    function_name: str
    invoked_function_arn: str
    timeout_seconds: int
    memory_limit_in_mb: int = 128
    function_version: str = "$LATEST"
    # Drawn as moto draws its identifiers, as the Task's trace id is (compat.integrations.sdk_metadata)
    aws_request_id: str = field(default_factory=lambda: str(mock_random.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"
    identity: Any = None
    client_context: Any = None
    _started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.log_group_name = self.log_group_name or f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        """What the Lambda runtime answers: the time left before the function's timeout."""
        elapsed = time.monotonic() - self._started
        return max(0, int((self.timeout_seconds - elapsed) * 1000))


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cold_start(code_dir: Path, handler: str, environment: Mapping[str, str]) -> Handler:
    """Load ``package.module.function`` from ``code_dir`` with the function's environment, as a
    Lambda cold start imports it from the asset root.

    The handler module is loaded fresh for every function: module-level configuration is read
    again, and two functions built from one file keep separate settings. Its package is imported
    once, like any library, so relative imports (``from .settings import ...``) resolve: for the
    handlers this package ships that is ``sfn_idempotency.lambdas.<package>``, for a user's
    ``code_dir`` the top-level package found on ``sys.path``.
    """
    module_path, _, function_name = handler.rpartition(".")
    source = code_dir / Path(*module_path.split(".")).with_suffix(".py")
    if not source.is_file():
        raise FileNotFoundError(f"handler {handler!r}: no file {source}")
    package, _, leaf = module_path.rpartition(".")
    with _cold_start_lock, _environment(environment):
        prefix = _import_prefix(code_dir)
        parent = f"{prefix}{package}" if package else ""
        if parent:
            importlib.import_module(parent)
        fresh_name = f"{leaf}__cold_start_{next(_module_numbers)}"
        spec = importlib.util.spec_from_file_location(
            f"{parent}.{fresh_name}" if parent else fresh_name, source
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {source}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    function = getattr(module, function_name, None)
    if not callable(function):
        raise HandlerNotFoundError(
            f"Handler '{function_name}' missing on module '{module_path}': handler {handler!r} "
            f"names a function that {source.relative_to(code_dir).as_posix()} does not define"
        )
    return function  # type: ignore[no-any-return]


def _import_prefix(code_dir: Path) -> str:
    """How the packages in ``code_dir`` are imported: through this package for its own handlers,
    else as top-level packages from ``code_dir`` put on ``sys.path``."""
    if code_dir.resolve() == LAMBDAS_DIR.resolve():
        return "sfn_idempotency.lambdas."
    if str(code_dir) not in sys.path:
        sys.path.append(str(code_dir))
    return ""


def exit_payload(error: SystemExit, request_id: str) -> dict[str, str]:
    """Lambda's answer when a function ends its runtime's process (``sys.exit``, ``exit()``): the
    exit status as a process reports it (a message, as Python prints it, exits 1)."""
    code = error.code
    status = 0 if code is None else code & 0xFF if isinstance(code, int) else 1
    reason = (
        f"Runtime exited with error: exit status {status}"
        if status
        else "Runtime exited without providing a reason"
    )
    return {"errorType": "Runtime.ExitError", "errorMessage": f"RequestId: {request_id} Error: {reason}"}
