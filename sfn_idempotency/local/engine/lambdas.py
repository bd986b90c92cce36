"""Lambda functions run in-process: our real handlers, a real-looking context, Lambda's error payloads."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from moto.moto_api._internal import mock_random

from sfn_idempotency.flow.resources import LAMBDAS_DIR
from sfn_idempotency.local.controls.calls import Reply
from sfn_idempotency.local.controls.faults import FaultPlan, FunctionResult
from sfn_idempotency.local.observability import function_logs
from sfn_idempotency.local.runtimes import python_interface
from sfn_idempotency.local.runtimes.python_interface import HandlerNotFoundError, marshalled

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


@dataclass
class LocalFunction:
    """A function the engine created (``cloud.add_function``): its ``arn`` goes into a definition's
    substitutions; its ``handler`` runs in this process when a Task invokes it."""

    name: str
    arn: str
    handler: Handler
    timeout_seconds: int


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


class LambdaRuntime:
    """Answers ``lambda.Invoke`` for the functions added to it; other names fall through to moto."""

    def __init__(self, region: str, account: str, faults: FaultPlan) -> None:
        self._region = region
        self._account = account
        self._faults = faults
        self._functions: dict[str, LocalFunction] = {}
        self._invocations: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, name: str, handler: Handler, timeout_seconds: int) -> LocalFunction:
        arn = f"arn:aws:lambda:{self._region}:{self._account}:function:{name}"
        function = LocalFunction(name, arn, handler, timeout_seconds)
        self._functions[name] = function
        self._invocations[name] = 0
        return function

    def invocations(self, name: str) -> int:
        """How many times the function's code was entered (failed runs included)."""
        with self._lock:
            return self._invocations[name]

    def hook(self, service: str, operation: str, params: dict[str, Any]) -> Reply | None:
        if (service, operation) != ("lambda", "Invoke"):
            return None
        reference = str(params.get("FunctionName", ""))
        function = self._functions.get(function_name_of(reference))
        if function is None:
            return None
        qualifier = params.get("Qualifier") or qualifier_of(reference)
        return self.invoke(function, params.get("Payload"), qualifier)

    def invoke(self, function: LocalFunction, payload: Any, qualifier: str | None = None) -> Reply:
        event = _decode(payload)
        # The context says the ARN the function was invoked by: with its qualifier, if it had one.
        invoked_arn = f"{function.arn}:{qualifier}" if qualifier else function.arn
        context = LocalLambdaContext(function.name, invoked_arn, function.timeout_seconds)
        with self._lock:
            self._invocations[function.name] += 1
        return self._faults.call_function(
            function.name,
            event,
            lambda: self._run(function, event, context),
            lambda answer: "FunctionError" in answer.body,
            lambda instead: (
                Reply.lambda_payload(marshalled(instead.value), request_id=context.aws_request_id)
                if isinstance(instead, FunctionResult)
                else Reply.lambda_payload(
                    {"errorMessage": instead.message, "errorType": instead.error_type, "stackTrace": []},
                    function_error="Unhandled",
                )
            ),
        )

    def _run(self, function: LocalFunction, event: Any, context: LocalLambdaContext) -> Reply:
        try:
            result = function.handler(event, context)
        except Exception as error:
            payload = error_payload(error, context)
            function_logs.log_error(self._account, self._region, function.name, _HANDLER_RUNTIME, payload)
            return Reply.lambda_payload(
                payload, function_error="Unhandled", request_id=context.aws_request_id
            )
        except SystemExit as error:  # the runtime's process ends: Lambda answers at once
            return Reply.lambda_payload(
                exit_payload(error, context.aws_request_id),
                function_error="Unhandled",
                request_id=context.aws_request_id,
            )
        try:
            data = marshalled(result)
        except (TypeError, ValueError) as error:
            payload = {
                "errorMessage": f"Unable to marshal response: {error}",
                "errorType": "Runtime.MarshalError",
            }
            return Reply.lambda_payload(
                payload, function_error="Unhandled", request_id=context.aws_request_id
            )
        # Lambda's answer carries the invocation's own request id, the one the function saw.
        return Reply.lambda_payload(data, request_id=context.aws_request_id)


# The engine's own functions are Python handlers: their records are Python's.
_HANDLER_RUNTIME = "python"


def function_name_of(reference: str) -> str:
    """A name, a partial or full ARN, with or without qualifier: the function's name."""
    parts = unquote(reference).split(":")
    return parts[parts.index("function") + 1] if "function" in parts else parts[0]


def qualifier_of(reference: str) -> str | None:
    """The version or alias a function reference names (``name:qualifier``, or a qualified ARN)."""
    parts = unquote(reference).split(":")
    after = parts[parts.index("function") + 2 :] if "function" in parts else parts[1:]
    return after[0] if after else None


def _decode(payload: Any) -> Any:
    if payload is None or payload == b"":
        return None
    if isinstance(payload, bytes | bytearray):
        payload = payload.decode()
    return json.loads(payload) if isinstance(payload, str) else payload


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


def error_payload(error: Exception, context: LocalLambdaContext) -> dict[str, Any]:
    return python_interface.error_payload(error, context.aws_request_id)
