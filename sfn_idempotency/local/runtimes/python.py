"""Python functions, in this process, as AWS's Python runtime runs them: the handler is loaded once
per code hash, as a warm environment keeps it; the function's environment is applied during the
call; past its timeout the call answers ``Sandbox.Timedout``. They run on the engine's own Python,
whatever Python they declare: one whose code that Python cannot load (a newer syntax) answers as
Lambda's runtime answers a handler it cannot load (``Runtime.UserCodeSyntaxError``,
``Runtime.ImportModuleError``), with one ``PythonVersionWarning`` naming both Pythons."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sfn_idempotency.flow.resources import COMPUTE_KEY_HANDLER
from sfn_idempotency.lambdas.compute_key import clock as engine_key_clock
from sfn_idempotency.local import runtimes
from sfn_idempotency.local.engine.lambdas import (
    Handler,
    HandlerNotFoundError,
    LocalLambdaContext,
    cold_start,
    error_payload,
    exit_payload,
    marshalled,
)
from sfn_idempotency.local.runtimes import code_folders
from sfn_idempotency.local.runtimes.outcome import Outcome, log_lines, timed_out

_TASK_ROOT = "/var/task"  # where AWS unpacks the code: the stack trace names it, not a local folder
_environment_lock = threading.Lock()
_loading_lock = threading.Lock()
_handlers: dict[Path, Handler] = {}  # by code folder


def _forget(folder: Path) -> None:
    with _loading_lock:
        _handlers.pop(folder, None)
        # cold_start put the code there for the handler's own imports, and _handler its layers
        for path in [str(folder), *map(str, _layer_paths(folder.with_name(f"{folder.name}.opt")))]:
            if path in sys.path:
                sys.path.remove(path)


def _layer_paths(opt: Path | None) -> list[Path]:
    """Where Lambda's Python runtime finds a layer's packages: ``/opt/python`` and its
    ``lib/python3.x/site-packages``."""
    if opt is None:
        return []
    return [opt / "python", *sorted((opt / "python" / "lib").glob("python3*/site-packages"))]


code_folders.on_forget(_forget)


def _handler(function: Any, folder: Path) -> Handler:
    with _loading_lock:
        handler = _handlers.get(folder)
        if handler is None:
            for path in _layer_paths(code_folders.layers_folder(function)):
                if str(path) not in sys.path:
                    sys.path.append(str(path))
            handler = _handlers[folder] = cold_start(folder, function.handler, environment(function))
            if function.handler == COMPUTE_KEY_HANDLER:
                _on_the_engine_clock(handler)
    return handler


class _EngineKeyClock:
    """The time the engine's own key Lambda reads when it is asked: a LocalCloud's clock while one
    runs (the one ``$$.State.EnteredTime`` follows), else the system's."""

    def now_ms(self) -> int:
        return int(engine_key_clock.current().now_ms())


def _on_the_engine_clock(handler: Handler) -> None:
    """Make an app's own copy of sfn-idempotency's key Lambda (a cdk.out asset, a SAM CodeUri) read
    the engine's clock. Its ``clock`` module is a copy too, on the system's time: after a test or
    the explorer moved the engine's clock past a lease, a Claim (on the engine's clock) would find
    a claim this copy made already expired and take it over while its business step still ran."""
    package = handler.__module__.rpartition(".")[0]
    clock_module = sys.modules.get(f"{package}.clock")
    if clock_module is not None and clock_module is not engine_key_clock:
        install = getattr(clock_module, "install", None)
        if callable(install):
            install(_EngineKeyClock())


def environment(function: Any) -> dict[str, str]:
    """The variables the runtime sets, then the function's own."""
    return {
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_VERSION": str(function.version),
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "AWS_REGION": function.region,
        "AWS_DEFAULT_REGION": function.region,  # Lambda sets both; boto3 reads this one
        "_HANDLER": function.handler,
        **runtimes.sdk_variables(),
        **{name: str(value) for name, value in (function.environment_vars or {}).items()},
    }


@contextmanager
def _applied(variables: Mapping[str, str]) -> Iterator[None]:
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


def run(function: Any, event: Any, invoked_arn: str) -> Outcome:
    """One invocation: the handler's JSON result (``bytes`` as they are), or Lambda's error payload."""
    context = LocalLambdaContext(
        function.function_name,
        invoked_arn,
        int(function.timeout),
        memory_limit_in_mb=int(function.memory_size),
        function_version=str(function.version),
    )
    folder = Path(_TASK_ROOT)  # until its code is unpacked
    try:
        folder = code_folders.unpacked(function)
        handler = _handler(function, folder)
    except Exception as error:
        if not isinstance(error, HandlerNotFoundError):
            _warn_of_version(function, error)
        payload = _load_failure(error, function.handler, folder, context)
        return Outcome(json.dumps(payload).encode(), errored=True)
    result: dict[str, Any] = {}

    def call() -> None:
        with _applied(environment(function)):
            try:
                result["value"] = handler(event, context)
            except Exception as error:
                result["error"] = error
            except SystemExit as error:  # the runtime's process ends (a thread would end silently)
                result["exit"] = error

    worker = threading.Thread(target=call, name=f"lambda-{function.function_name}", daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(int(function.timeout))
    if worker.is_alive():
        outcome = timed_out(context.aws_request_id, function.timeout)
    else:
        outcome = _outcome(result, context, folder, str(function.run_time))
    duration_ms = (time.monotonic() - started) * 1000
    outcome.log = log_lines(
        context.aws_request_id, context.function_version, context.memory_limit_in_mb, duration_ms
    )
    return outcome


class PythonVersionWarning(UserWarning):
    """A function declared for another Python failed to load on the engine's Python."""


_warned: set[str] = set()


def _warn_of_version(function: Any, error: Exception) -> None:
    """Python functions run in the engine's own process, on its Python: a function declared for
    another one (``python3.13``, newer syntax) may fail to load where Lambda's runtime loads it.
    That failure is the function's ``Runtime.ImportModuleError``, and once a line that says why.
    An exception of a class of its own (a configuration check at cold start) is its own, whatever
    Python it runs on: no line then."""
    declared = str(function.run_time)
    running = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python_s_own = type(error).__module__ == "builtins"
    if declared != running and python_s_own and function.function_arn not in _warned:
        _warned.add(function.function_arn)
        warnings.warn(
            f"{function.function_name} declares {declared} and could not be loaded on the engine's "
            f"Python {sys.version.split()[0]}: {type(error).__name__}: {error}",
            PythonVersionWarning,
            stacklevel=3,
        )


def _load_failure(
    error: Exception, handler: str, folder: Path, context: LocalLambdaContext
) -> dict[str, Any]:
    """The payload of a handler that could not be loaded, in the words of AWS's Python runtime
    (awslambdaric's ``_get_handler``): a module that cannot be imported, or has a syntax error, or
    lacks the handler; a module that raised as it was imported answers that exception."""
    module_path, _, function_name = handler.rpartition(".")
    module = module_path.replace("/", ".")
    if isinstance(error, HandlerNotFoundError):
        return _runtime_fault(
            context, "Runtime.HandlerNotFound", f"Handler '{function_name}' missing on module '{module}'"
        )
    if isinstance(error, SyntaxError):
        where = str(error.filename or "").replace(str(folder), _TASK_ROOT)
        message = str(error).replace(str(folder), _TASK_ROOT)
        trace = [f'  File "{where}" Line {error.lineno}\n    {error.text}']
        return _runtime_fault(
            context, "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module}': {message}", trace
        )
    if isinstance(error, ImportError | FileNotFoundError):
        # (cold_start names a handler file that is not there; Python would say no such module)
        why = str(error) if isinstance(error, ImportError) else f"No module named '{module}'"
        return _runtime_fault(
            context, "Runtime.ImportModuleError", f"Unable to import module '{module}': {why}"
        )
    # its module's own frames (the engine's loader is not the runtime's)
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(str(folder))]
    return {**error_payload(error, context), "stackTrace": _stack(frames, folder)}


def _runtime_fault(
    context: LocalLambdaContext, error_type: str, message: str, trace: list[str] | None = None
) -> dict[str, Any]:
    return {
        "errorMessage": message,
        "errorType": error_type,
        "requestId": context.aws_request_id,
        "stackTrace": trace or [],
    }


def _outcome(result: dict[str, Any], context: LocalLambdaContext, folder: Path, run_time: str) -> Outcome:
    if "exit" in result:
        return Outcome(
            json.dumps(exit_payload(result["exit"], context.aws_request_id)).encode(), errored=True
        )
    if "error" in result:
        return Outcome(json.dumps(_function_error(result["error"], context, folder)).encode(), errored=True)
    try:
        return Outcome(marshalled(result.get("value"), run_time), errored=False)
    except (TypeError, ValueError) as error:
        return Outcome.error("Runtime.MarshalError", f"Unable to marshal response: {error}")


def _function_error(error: Exception, context: LocalLambdaContext, folder: Path) -> dict[str, Any]:
    """Lambda's payload for an exception: the handler's frames only (this runner's first frame is
    dropped), under the folder AWS unpacks the code to."""
    frames = traceback.extract_tb(error.__traceback__)[1:]
    return {**error_payload(error, context), "stackTrace": _stack(frames, folder)}


def _stack(frames: list[traceback.FrameSummary], folder: Path) -> list[str]:
    """Frames as Lambda lists them, under the folder AWS unpacks the code to."""
    return [line.replace(str(folder), _TASK_ROOT) for line in traceback.format_list(frames)]
