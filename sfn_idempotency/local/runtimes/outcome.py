"""What one invocation answers, whichever runtime ran it."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass
class Outcome:
    """The payload (bytes), whether it is a function error, and the invocation's log lines."""

    payload: bytes
    errored: bool
    log: str = ""

    @classmethod
    def error(cls, error_type: str, message: str, **extra: object) -> Outcome:
        return cls(json.dumps({"errorType": error_type, "errorMessage": message, **extra}).encode(), True)


def timed_out(request_id: str, timeout_seconds: float) -> Outcome:
    """Lambda's answer past a function's timeout (its environment is then thrown away)."""
    message = f"RequestId: {request_id} Error: Task timed out after {float(timeout_seconds):.2f} seconds"
    return Outcome.error("Sandbox.Timedout", message)


def log_lines(request_id: str, version: str, memory_mb: int, duration_ms: float, printed: str = "") -> str:
    """The lines the runtime writes around every invocation (what ``LogType: Tail`` returns), with
    what the function printed between them."""
    return (
        f"START RequestId: {request_id} Version: {version}\n"
        f"{printed}"
        f"END RequestId: {request_id}\n"
        f"REPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\t"
        f"Memory Size: {memory_mb} MB\n"
    )
