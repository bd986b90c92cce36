"""Lambda functions created through the Lambda API (any deploy tool, ``aws lambda create-function``)
run in process, as AWS's Python runtime runs them (fix 22). moto runs function code only in Docker,
which the local engine does not need or have.

Each invocation loads nothing twice: the zip is unpacked once per code hash and its handler loaded
once, as a warm container would keep it; the function's environment is applied during the call.
The unpacked code lives in one folder per process, under the system's temporary folder: a
function's part goes when the function is deleted, the whole when the cloud closes (or, at the
latest, when the process exits).
"""

from __future__ import annotations

import atexit
import base64
import io
import json
import shutil
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sfn_idempotency.local.compat.patching import Patch
from sfn_idempotency.local.lambdas import (
    Handler,
    HandlerNotFoundError,
    LocalLambdaContext,
    cold_start,
    error_payload,
    function_name_of,
    qualifier_of,
)

_MODELS = "moto.awslambda.models"
_LATEST = "$LATEST"
_UNQUALIFIED_ARN_COLONS = 6  # arn:aws:lambda:<region>:<account>:function:<name>
_environment_lock = threading.Lock()
_loading_lock = threading.Lock()
_handlers: dict[tuple[str, str], tuple[Handler, Path]] = {}
_code_root: Path | None = None  # this process's folder of unpacked code, made at the first need
_TASK_ROOT = "/var/task"  # where AWS unpacks the code: the stack trace names it, not a local folder


class _Outcome:
    """What one invocation ended with: a payload (bytes), and whether it is a function error."""

    def __init__(self, payload: bytes, errored: bool, log: str = "") -> None:
        self.payload = payload
        self.errored = errored
        self.log = log


def _runs_here(function: Any) -> bool:
    return str(function.run_time or "").startswith("python") and function.package_type == "Zip"


def _handler(function: Any) -> tuple[Handler, Path]:
    key = (function.function_arn, function.code_sha_256)
    with _loading_lock:
        loaded = _handlers.get(key)
        if loaded is None:
            # New code for the same function (UpdateFunctionCode): the old folder has no more use.
            _remove_where(lambda arn, sha: arn == function.function_arn)
            task_dir = Path(tempfile.mkdtemp(prefix=f"{function.function_name}-", dir=_root()))
            zipfile.ZipFile(io.BytesIO(function.code_bytes)).extractall(task_dir)
            loaded = cold_start(task_dir, function.handler, _environment(function)), task_dir
            _handlers[key] = loaded
    return loaded


def _root() -> Path:
    global _code_root
    if _code_root is None:
        _code_root = Path(tempfile.mkdtemp(prefix="sfn-local-"))
        atexit.register(remove_code_folders)
    return _code_root


def _remove_where(condition: Callable[[str, str], bool]) -> None:
    """Forget the loaded handlers the condition names, and remove their folders (lock held)."""
    for key in [key for key in _handlers if condition(*key)]:
        _, task_dir = _handlers.pop(key)
        if str(task_dir) in sys.path:  # cold_start put it there for the handler's own imports
            sys.path.remove(str(task_dir))
        shutil.rmtree(task_dir, ignore_errors=True)


def remove_code_folders() -> None:
    """Every function's unpacked code, and the process's folder for it (the cloud is closing)."""
    global _code_root
    with _loading_lock:
        _remove_where(lambda arn, sha: True)
        if _code_root is not None:
            shutil.rmtree(_code_root, ignore_errors=True)
            _code_root = None


def _environment(function: Any) -> dict[str, str]:
    """The variables the runtime sets, then the function's own."""
    return {
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_VERSION": str(function.version),
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "AWS_REGION": function.region,
        "_HANDLER": function.handler,
        **{name: str(value) for name, value in (function.environment_vars or {}).items()},
    }


@contextmanager
def _applied(variables: Mapping[str, str]) -> Iterator[None]:
    import os

    with _environment_lock:
        saved = {name: os.environ.get(name) for name in variables}
        os.environ.update(variables)
    try:
        yield
    finally:
        with _environment_lock:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def run(function: Any, event: Any) -> _Outcome:
    """One invocation: the handler's JSON result (``bytes`` as they are), or Lambda's error payload;
    past the function's timeout, ``Sandbox.Timedout`` as on AWS."""
    qualifier = getattr(_invoked, "qualifier", None)
    _invoked.qualifier = None
    invoked_arn = function.function_arn
    if qualifier and not invoked_arn.endswith(f":{qualifier}"):
        invoked_arn = f"{invoked_arn}:{qualifier}"  # the ARN it was invoked by, as Lambda says it
    context = LocalLambdaContext(
        function.function_name,
        invoked_arn,
        int(function.timeout),
        memory_limit_in_mb=int(function.memory_size),
        function_version=str(function.version),
    )
    try:
        handler, task_dir = _handler(function)
    except HandlerNotFoundError as error:
        payload = {**error_payload(error, context), "errorType": "Runtime.HandlerNotFound"}
        return _Outcome(json.dumps(payload).encode(), errored=True)
    except Exception as error:  # an import error is the runtime's Runtime.ImportModuleError
        payload = {**error_payload(error, context), "errorType": "Runtime.ImportModuleError"}
        return _Outcome(json.dumps(payload).encode(), errored=True)
    result: dict[str, Any] = {}

    def call() -> None:
        with _applied(_environment(function)):
            try:
                result["value"] = handler(event, context)
            except Exception as error:
                result["error"] = error

    worker = threading.Thread(target=call, name=f"lambda-{function.function_name}", daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(int(function.timeout))
    outcome = _outcome(result, worker.is_alive(), context, task_dir, function)
    outcome.log = _log_lines(context, (time.monotonic() - started) * 1000)
    return outcome


def _log_lines(context: LocalLambdaContext, duration_ms: float) -> str:
    """The lines the runtime writes around every invocation (what ``LogType: Tail`` returns)."""
    request = context.aws_request_id
    return (
        f"START RequestId: {request} Version: {context.function_version}\n"
        f"END RequestId: {request}\n"
        f"REPORT RequestId: {request}\tDuration: {duration_ms:.2f} ms\t"
        f"Memory Size: {context.memory_limit_in_mb} MB\n"
    )


def _outcome(
    result: dict[str, Any], timed_out: bool, context: LocalLambdaContext, task_dir: Path, function: Any
) -> _Outcome:
    if timed_out:
        message = f"RequestId: {context.aws_request_id} Error: Task timed out after {float(function.timeout):.2f} seconds"
        return _Outcome(json.dumps({"errorType": "Sandbox.Timedout", "errorMessage": message}).encode(), True)
    if "error" in result:
        return _Outcome(
            json.dumps(_function_error(result["error"], context, task_dir)).encode(), errored=True
        )
    value = result.get("value")
    if isinstance(value, bytes | bytearray):
        return _Outcome(bytes(value), errored=False)
    try:
        return _Outcome(json.dumps(value).encode(), errored=False)
    except (TypeError, ValueError) as error:
        payload = {
            "errorMessage": f"Unable to marshal response: {error}",
            "errorType": "Runtime.MarshalError",
        }
        return _Outcome(json.dumps(payload).encode(), errored=True)


def _function_error(error: Exception, context: LocalLambdaContext, task_dir: Path) -> dict[str, Any]:
    """Lambda's payload for an exception: the handler's frames only (this runner's first frame is
    dropped), under the folder AWS unpacks the code to."""
    frames = traceback.extract_tb(error.__traceback__)[1:]
    stack = [line.replace(str(task_dir), _TASK_ROOT) for line in traceback.format_list(frames)]
    return {**error_payload(error, context), "stackTrace": stack}


def _invoke_in_process(original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaFunction.invoke``: a Python zip runs here; the answer names the version that ran
    (``X-Amz-Executed-Version``, which the Step Functions result carries as ``ExecutedVersion``)
    and an exception as an ``Unhandled`` function error, as AWS's Python runtime does."""

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> Any:
        response_headers["x-amz-executed-version"] = str(self.version)
        if not _runs_here(self):
            return original(self, body, request_headers, response_headers)
        outcome = run(self, json.loads(body) if body else {})
        if outcome.errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        if request_headers.get("x-amz-log-type") == "Tail":
            response_headers["x-amz-log-result"] = base64.b64encode(outcome.log.encode()[-4096:]).decode()
        return outcome.payload

    return invoke


def _run_lambda_in_process(original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaFunction._invoke_lambda``, which moto's other services call (event source mappings,
    destinations): the same runtime, in its ``(payload, errored, logs)`` form."""

    def invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        if not _runs_here(self):
            return original(self, event)  # type: ignore[no-any-return]
        outcome = run(self, {} if event is None else event)
        return outcome.payload.decode("utf-8", errors="replace"), outcome.errored, outcome.log

    return invoke_lambda


class _Invoked(threading.local):
    qualifier: str | None = None  # the version or alias this thread's Invoke named, if any


_invoked = _Invoked()


def _qualified_not_found(original: Callable[..., Any]) -> Callable[..., Any]:
    """Invoking a function that does not exist names its ``$LATEST`` qualifier (recorded); one that
    does is run with the qualifier it was invoked by (its context's ``invoked_function_arn``)."""

    def invoke(self: Any, function_name: str, qualifier: str | None, *args: Any, **kwargs: Any) -> Any:
        from moto.awslambda.exceptions import UnknownFunctionException

        _invoked.qualifier = qualifier or qualifier_of(function_name)
        try:
            return original(self, function_name, qualifier, *args, **kwargs)
        except UnknownFunctionException as error:
            arn = str(error.message).removeprefix("Function not found: ")
            if qualifier is None and arn.count(":") == _UNQUALIFIED_ARN_COLONS:
                raise UnknownFunctionException(f"{arn}:{_LATEST}") from None
            raise

    return invoke


def _remove_deleted_code(original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaBackend.delete_function``: a deleted function (or version) leaves no code behind."""

    def delete_function(self: Any, function_name: str, qualifier: str | None = None) -> None:
        original(self, function_name, qualifier)
        name = function_name_of(function_name)
        with _loading_lock:
            _remove_where(
                lambda arn, sha: (
                    function_name_of(arn) == name and (qualifier is None or arn.endswith(f":{qualifier}"))
                )
            )

    return delete_function


PATCHES: tuple[Patch, ...] = (
    Patch(22, f"{_MODELS}:LambdaFunction", "invoke", _invoke_in_process),
    Patch(22, f"{_MODELS}:LambdaFunction", "_invoke_lambda", _run_lambda_in_process),
    Patch(22, f"{_MODELS}:LambdaBackend", "invoke", _qualified_not_found),
    Patch(22, f"{_MODELS}:LambdaBackend", "delete_function", _remove_deleted_code),
)
