"""Python functions, in this process, as AWS's Python runtime runs them: the handler is loaded once
per code hash, as a warm environment keeps it; the function's environment is applied during the
call; past its timeout the call answers ``Sandbox.Timedout``.

While the engine serves, a function declared for another Python that is installed runs there
instead (``python_process``); one whose Python is not installed runs here, with one
``PythonVersionWarning`` that says so. In process, a function whose code the engine's Python cannot
load (a newer syntax) answers as Lambda's runtime answers a handler it cannot load
(``Runtime.UserCodeSyntaxError``, ``Runtime.ImportModuleError``), with one ``PythonVersionWarning``
naming both Pythons."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sfn_idempotency.flow.resources import COMPUTE_KEY_HANDLER
from sfn_idempotency.lambdas.compute_key import clock as engine_key_clock
from sfn_idempotency.local import runtimes
from sfn_idempotency.local.runtimes import code_folders, printed, python_interface, python_process
from sfn_idempotency.local.runtimes.outcome import Outcome, log_lines, timed_out
from sfn_idempotency.local.runtimes.python_handlers import (
    Handler,
    LocalLambdaContext,
    cold_start,
    exit_payload,
)
from sfn_idempotency.local.runtimes.python_interface import ENGINE_RUNTIME, HandlerNotFoundError, marshalled
from sfn_idempotency.local.runtimes.python_process import layer_paths

_environment_lock = threading.Lock()
_loading_lock = threading.Lock()
_handlers: dict[Path, Handler] = {}  # by code folder


def _forget(folder: Path) -> None:
    with _loading_lock:
        _handlers.pop(folder, None)
        # cold_start put the code there for the handler's own imports, and _handler its layers
        for path in [str(folder), *map(str, layer_paths(folder.with_name(f"{folder.name}.opt")))]:
            if path in sys.path:
                sys.path.remove(path)


code_folders.on_forget(_forget)


def _handler(function: Any, folder: Path) -> Handler:
    with _loading_lock:
        handler = _handlers.get(folder)
        if handler is None:
            for path in layer_paths(code_folders.layers_folder(function)):
                if str(path) not in sys.path:
                    sys.path.append(str(path))
            handler = _handlers[folder] = cold_start(folder, function.handler, environment(function))
            if function.handler == COMPUTE_KEY_HANDLER:
                _on_the_engine_clock(handler)
            elif runtimes.endpoint_url is not None:
                _warn_of_this_python(function)
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
        **runtimes.own_variables(function),
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
    """One invocation: the handler's JSON result (``bytes`` as they are), or Lambda's error payload.
    On the Python its runtime names when ``python_process`` has it (never the engine's own key
    Lambda, which reads the engine's clock), else here."""
    if function.handler != COMPUTE_KEY_HANDLER and python_process.runs_elsewhere(function):
        return python_process.run(function, event, invoked_arn)
    context = LocalLambdaContext(
        function.function_name,
        invoked_arn,
        int(function.timeout),
        memory_limit_in_mb=int(function.memory_size),
        function_version=str(function.version),
    )
    folder = Path(python_interface.TASK_ROOT)  # until its code is unpacked
    printed.stand_in()  # before the handler loads: a logger made at import binds sys.stdout then
    try:
        folder = code_folders.unpacked(function)
        handler = _handler(function, folder)
    except Exception as error:
        if not isinstance(error, HandlerNotFoundError):
            _warn_of_version(function, error)
        payload = python_interface.load_failure(error, function.handler, folder, context.aws_request_id)
        return Outcome(json.dumps(payload).encode(), errored=True)
    result: dict[str, Any] = {}
    log: list[str] = []

    def call() -> None:
        with _applied(environment(function)), printed.kept(log):
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
        context.aws_request_id,
        context.function_version,
        context.memory_limit_in_mb,
        duration_ms,
        "".join(list(log)),  # what it printed until it ended (or timed out)
    )
    return outcome


class PythonVersionWarning(UserWarning):
    """A function declared for another Python runs, or failed to load, on the engine's Python."""


_warned: set[str] = set()


def _warn_of_version(function: Any, error: Exception) -> None:
    """A function declared for another Python (``python3.13``, newer syntax) may fail to load on
    the engine's where Lambda's runtime loads it. That failure is the function's
    ``Runtime.ImportModuleError``, and once a line that says why, and what would run it on its own
    Python. An exception of a class of its own (a configuration check at cold start) is its own,
    whatever Python it runs on: no line then."""
    if type(error).__module__ == "builtins":
        why = f"could not be loaded on the engine's Python {sys.version.split()[0]}: {type(error).__name__}: {error}"
        _warn_once(function, f" and {why}")


def _warn_of_this_python(function: Any) -> None:
    """Served, a function declared for another Python than the engine's, which is not installed,
    runs on the engine's: once a line that says so, and what would run it on its own."""
    _warn_once(function, f"; it runs on the engine's Python {sys.version.split()[0]}")


def _warn_once(function: Any, words: str) -> None:
    """One line per function declared for another Python than the engine's: what happened, and
    what would run it on its own Python."""
    declared = str(function.run_time)
    if declared != ENGINE_RUNTIME and function.function_arn not in _warned:
        _warned.add(function.function_arn)
        warnings.warn(
            f"{function.function_name} declares {declared}{words} ({_remedy(declared)})",
            PythonVersionWarning,
            stacklevel=4,
        )


def _remedy(declared: str) -> str:
    """What would run the function on the Python it declares, if anything would."""
    version = declared.removeprefix("python")
    oldest = python_process.oldest_minor()
    if not version.startswith("3.") or not version[2:].isdigit() or int(version[2:]) < oldest:
        return f"serve runs a function on its own Python from python3.{oldest} on"
    if runtimes.endpoint_url is None:
        return (
            f"in process functions run on the engine's Python; under serve, on Python {version} if installed"
        )
    return f"install Python {version} (python{version} on PATH, or with pyenv) to run it there"


def _outcome(result: dict[str, Any], context: LocalLambdaContext, folder: Path, run_time: str) -> Outcome:
    if "exit" in result:
        return Outcome(
            json.dumps(exit_payload(result["exit"], context.aws_request_id)).encode(), errored=True
        )
    if "error" in result:
        return Outcome(
            json.dumps(
                python_interface.function_error(result["error"], context.aws_request_id, folder)
            ).encode(),
            errored=True,
        )
    try:
        return Outcome(marshalled(result.get("value"), run_time), errored=False)
    except (TypeError, ValueError) as error:
        return Outcome.error("Runtime.MarshalError", f"Unable to marshal response: {error}")
