"""Warm execution environments in processes of their own, as Lambda keeps one per concurrent
invocation: a bootstrap that loaded the handler once, serving one invocation at a time. A second
call while the first runs starts a second environment. An environment that timed out is thrown
away; one that crashed is restarted at the next call. Node.js functions run this way (``node``),
and Python functions declared for another Python than the engine's (``python_process``).

A bootstrap reads one invocation per line on stdin (``Request.line``) and writes one answer per
line to the result pipe (fd in ``SFN_LOCAL_RESULT_FD``): ``{"payload": <JSON text>}`` or
``{"error": {...}}``, the runtime's error payload. What the function prints (stdout, stderr) stays
its log: it goes to the engine's stderr and into the invocation's ``LogType: Tail``; the
bootstrap ends an invocation's log with ``END_OF_LOG`` and the request id.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sfn_idempotency.local.runtimes import code_folders
from sfn_idempotency.local.runtimes.outcome import Outcome, log_lines, timed_out

# The line a bootstrap prints after an invocation's log (then the request id): never a log line,
# which starts with a timestamp or the function's own text.
END_OF_LOG = "\x1eend-of-log "
_LOG_GRACE_SECONDS = 1.0
_EXIT_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class Request:
    """One invocation, as a bootstrap reads it."""

    event: Any
    invoked_arn: str
    function_name: str
    function_version: str
    memory_mb: int
    timeout_seconds: float
    request_id: str = ""

    def __post_init__(self) -> None:
        if not self.request_id:
            object.__setattr__(self, "request_id", str(uuid.uuid4()))

    @classmethod
    def of(cls, function: Any, event: Any, invoked_arn: str) -> Request:
        """The invocation of ``function`` (a moto ``LambdaFunction``)."""
        return cls(
            event=event,
            invoked_arn=invoked_arn,
            function_name=function.function_name,
            function_version=str(function.version),
            memory_mb=int(function.memory_size),
            timeout_seconds=float(function.timeout),
        )

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
    """One warm process of one function's code and configuration."""

    def __init__(self, command: Sequence[str], folder: Path, variables: dict[str, str]) -> None:
        self.key = _key(folder, variables)
        read_end, write_end = os.pipe()
        self._process = subprocess.Popen(
            list(command),
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
        self._logged = threading.Condition(threading.Lock())
        self._ended: set[str] = set()  # the request ids whose log has been read to its end
        self._relay = threading.Thread(target=self._relay_log, name=f"log-{folder.name}", daemon=True)
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


def _key(folder: Path, variables: dict[str, str]) -> _Key:
    return folder, tuple(sorted(variables.items()))


def _forget(folder: Path) -> None:
    with _lock:
        environments = [e for key in [k for k in _idle if k[0] == folder] for e in _idle.pop(key)]
    for environment in environments:
        environment.stop()


code_folders.on_forget(_forget)


def _acquire(command: Callable[[], Sequence[str]], folder: Path, variables: dict[str, str]) -> _Environment:
    with _lock:
        idle = _idle.setdefault(_key(folder, variables), [])
        while idle:
            environment = idle.pop()
            if environment.alive():
                return environment
            environment.stop()  # crashed since its last call: a new one below
    return _Environment(command(), folder, variables)


def _release(environment: _Environment) -> None:
    with _lock:
        if environment.key in _idle:  # else its code went (deleted or replaced) meanwhile
            _idle[environment.key].append(environment)
            return
    environment.stop()


def run(
    command: Callable[[], Sequence[str]], folder: Path, variables: dict[str, str], request: Request
) -> Outcome:
    """One invocation in a warm environment of the code in ``folder`` with ``variables``; a new
    environment runs ``command()`` (which may raise OSError, or an error of its runtime's, when
    there is nothing to run it on)."""
    started = time.monotonic()
    environment = _acquire(command, folder, variables)
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
