"""The engine's Python runtime on another Python: one warm execution environment of one function,
run by the Python its runtime names (``python3.12`` for ``python3.12``). It loads the handler once,
then reads one invocation per line on stdin and writes one answer per line to the result pipe (fd
in SFN_LOCAL_RESULT_FD): ``{"payload": <JSON text>}`` or ``{"error": <Lambda's error payload>}``.
What the function prints stays its log (stdout and stderr).

It runs as a script (``python -s -u python_bootstrap.py``), never imported by the engine: the
standard library only, Python 3.9 and later. The function's code, its layers and the SDK the
runtime carries come first on ``sys.path`` through PYTHONPATH, as Lambda's runtime orders them.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_HERE = Path(sys.path.pop(0))  # this folder, which the function must not import from


def _interface() -> Any:
    """The answers Lambda's runtime gives, shared with the engine's in-process runtime (under a
    name of its own: the function's ``import python_interface`` is never this)."""
    spec = importlib.util.spec_from_file_location(
        "_sfn_local_python_interface", _HERE / "python_interface.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


interface = _interface()
_TASK = Path(os.environ["LAMBDA_TASK_ROOT"])
_RESULTS = os.fdopen(int(os.environ["SFN_LOCAL_RESULT_FD"]), "w", encoding="utf-8")
_END_OF_LOG = os.environ["SFN_LOCAL_END_OF_LOG"]
_RUN_TIME = os.environ["AWS_EXECUTION_ENV"].removeprefix("AWS_Lambda_")


class LambdaContext:
    """The attributes of awslambdaric's LambdaContext."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.function_name = request["functionName"]
        self.function_version = request["functionVersion"]
        self.invoked_function_arn = request["invokedFunctionArn"]
        self.memory_limit_in_mb = int(request["memoryLimitInMB"])
        self.aws_request_id = request["requestId"]
        self.log_group_name = os.environ["AWS_LAMBDA_LOG_GROUP_NAME"]
        self.log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
        self.identity = None
        self.client_context = None
        self._deadline_ms = int(request["deadlineMs"])

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _handler() -> Any:
    """``package/module.function``, imported as Lambda's runtime imports it."""
    module_path, _, function_name = os.environ["_HANDLER"].rpartition(".")
    module = importlib.import_module(module_path.replace("/", "."))
    handler = getattr(module, function_name, None)
    if not callable(handler):
        raise interface.HandlerNotFoundError(function_name)
    return handler


def _answer(value: dict[str, Any], request_id: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    print(f"{_END_OF_LOG}{request_id}", flush=True)
    _RESULTS.write(json.dumps(value) + "\n")
    _RESULTS.flush()


def _invoke(handler: Any, request: dict[str, Any]) -> dict[str, Any]:
    try:
        result = handler(request["event"], LambdaContext(request))
    except Exception as error:
        return {"error": interface.function_error(error, request["requestId"], _TASK)}
    try:
        return {"payload": interface.marshalled(result, _RUN_TIME).decode()}
    except (TypeError, ValueError) as error:
        return {
            "error": {
                "errorType": "Runtime.MarshalError",
                "errorMessage": f"Unable to marshal response: {error}",
            }
        }


def main() -> None:
    handler, load_error = None, None
    try:
        handler = _handler()
    except Exception as error:
        load_error = error
    for line in sys.stdin:
        request = json.loads(line)
        request_id = request["requestId"]
        if load_error is not None:
            failure = interface.load_failure(load_error, os.environ["_HANDLER"], _TASK, request_id)
            _answer({"error": failure}, request_id)
        else:
            _answer(_invoke(handler, request), request_id)


if __name__ == "__main__":
    main()
