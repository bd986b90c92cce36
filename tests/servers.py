"""Helpers for tests that start `sfn-idempotency serve` as a subprocess on a loopback port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

READY_DEADLINE_SECONDS = 60
CLI = str(Path(sys.executable).parent / "sfn-idempotency")


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


def clean_environment() -> dict[str, str]:
    """No IDEMPOTENCY_* overrides, fake credentials, no user AWS config."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("IDEMPOTENCY_", "AWS_"))}
    return {
        **environment,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }


def start_server(
    *arguments: str, environment: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    """``serve`` on a free port with ``arguments``, run in ``cwd``; ``environment`` adds to the clean one."""
    return subprocess.Popen(
        [CLI, "serve", "--port", str(free_port()), *arguments],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**clean_environment(), **(environment or {})},
    )
