"""What Lambda's Python runtime interface client (awslambdaric) answers: a handler's result as it
marshals it, and a handler that cannot be loaded or raises in its words (``_get_handler``, its
error payloads), the code's folder written as ``/var/task``.

The standard library and simplejson (which the runtime carries) only, and no import of this
package: the engine's Python runs it in process (``python``), and the bootstrap of a function on
another Python (``python_bootstrap.py``) runs this very file there, on Python 3.9 and later.
"""

from __future__ import annotations

import decimal
import math
import sys
import traceback
from pathlib import Path
from typing import Any

import simplejson

TASK_ROOT = "/var/task"  # where AWS unpacks the code: the stack trace names it, not a local folder


# The runtime of a function given as a callable: it runs on the engine's own Python.
ENGINE_RUNTIME = f"python{sys.version_info.major}.{sys.version_info.minor}"
# The runtimes whose interface client writes characters as they are, not as \u escapes.
_UNESCAPED_RUNTIMES = frozenset({"python3.12", "python3.13", "python3.14", "python3.15"})


def marshalled(value: Any, run_time: str = ENGINE_RUNTIME) -> bytes:
    """A handler's result as Lambda's Python runtime writes it (awslambdaric 4.2.2's marshaller, which
    uses simplejson): a ``Decimal`` (what boto3 reads from DynamoDB) as the number it holds, digits
    as written; NaN and Infinity as JavaScript writes them, which is not JSON (Step Functions then
    reads the answer as a string: compat fix 148)."""
    if isinstance(value, (bytes, bytearray)):  # answered as they are, as Lambda answers bytes
        return bytes(value)
    text = simplejson.dumps(
        value,
        default=_decimal_as_written,
        use_decimal=False,
        allow_nan=True,
        ensure_ascii=run_time not in _UNESCAPED_RUNTIMES,
    )
    return str(text).encode()


def _decimal_as_written(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return math.nan if value.is_nan() else simplejson.RawJSON(str(value))
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class HandlerNotFoundError(AttributeError):
    """A handler string names a function its module does not have (AWS: Runtime.HandlerNotFound)."""


def load_failure(error: BaseException, handler: str, folder: Path, request_id: str) -> dict[str, Any]:
    """The payload of a handler that could not be loaded: a module that cannot be imported, or has a
    syntax error, or lacks the handler; a module that raised as it was imported answers that
    exception."""
    module_path, _, function_name = handler.rpartition(".")
    module = module_path.replace("/", ".")
    if isinstance(error, HandlerNotFoundError):
        return runtime_fault(
            request_id, "Runtime.HandlerNotFound", f"Handler '{function_name}' missing on module '{module}'"
        )
    if isinstance(error, SyntaxError):
        where = str(error.filename or "").replace(str(folder), TASK_ROOT)
        message = str(error).replace(str(folder), TASK_ROOT)
        trace = [f'  File "{where}" Line {error.lineno}\n    {error.text}']
        return runtime_fault(
            request_id, "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module}': {message}", trace
        )
    if isinstance(error, (ImportError, FileNotFoundError)):
        # (a handler file that is not there: Python would say no such module)
        why = str(error) if isinstance(error, ImportError) else f"No module named '{module}'"
        return runtime_fault(
            request_id, "Runtime.ImportModuleError", f"Unable to import module '{module}': {why}"
        )
    # its module's own frames (the loader is not the runtime's)
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(str(folder))]
    return {**error_payload(error, request_id), "stackTrace": stack(frames, folder)}


def function_error(error: BaseException, request_id: str, folder: Path) -> dict[str, Any]:
    """Lambda's payload for an exception the handler raised: the handler's frames only (the
    runner's first frame is dropped), under the folder AWS unpacks the code to."""
    frames = traceback.extract_tb(error.__traceback__)[1:]
    return {**error_payload(error, request_id), "stackTrace": stack(frames, folder)}


def error_payload(error: BaseException, request_id: str) -> dict[str, Any]:
    return {
        "errorMessage": str(error),
        "errorType": type(error).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_tb(error.__traceback__),
    }


def runtime_fault(
    request_id: str, error_type: str, message: str, trace: list[str] | None = None
) -> dict[str, Any]:
    return {
        "errorMessage": message,
        "errorType": error_type,
        "requestId": request_id,
        "stackTrace": trace or [],
    }


def stack(frames: list[traceback.FrameSummary], folder: Path) -> list[str]:
    """Frames as Lambda lists them, under the folder AWS unpacks the code to."""
    return [line.replace(str(folder), TASK_ROOT) for line in traceback.format_list(frames)]
