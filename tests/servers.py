"""Helpers for tests that start `sfn-idempotency serve` as a subprocess on a loopback port."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from typing import Any

READY_DEADLINE_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def read_ready_line(
    process: subprocess.Popen[str], deadline: float = READY_DEADLINE_SECONDS
) -> dict[str, Any]:
    """The JSON line serve prints once it listens; the process is killed if none comes in time."""
    lines: list[str] = []
    assert process.stdout is not None
    assert process.stderr is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(deadline)
    if not lines or not lines[0]:
        process.kill()
        raise AssertionError(f"serve printed no ready line within {deadline} s: {process.stderr.read()}")
    return dict(json.loads(lines[0]))
