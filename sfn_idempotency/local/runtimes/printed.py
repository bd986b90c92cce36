"""What a Python function running in the engine's process prints, kept for its invocation's log (its
``LogType: Tail``, its log group) as Lambda keeps a function's stdout and stderr, and written to the
engine's stderr, where ``serve`` writes every function's log (its stdout holds the ready line only).

``sys.stdout`` and ``sys.stderr`` are stood in for while functions run here: what an invocation's
own thread writes is its log; what any other thread writes passes through unchanged. A stand-in is
put back in place whenever something else (pytest's capture, a redirect) replaced it, over whatever
replaced it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_lock = threading.Lock()
_logs: dict[int, list[str]] = {}  # by the invocation thread's ident


class _Stream:
    """Stands in for one of ``sys.stdout``, ``sys.stderr``."""

    def __init__(self, through: TextIO) -> None:
        self.through = through

    def write(self, text: str) -> int:
        log = _logs.get(threading.get_ident())
        if log is None:
            return self.through.write(text)
        log.append(text)
        stderr = sys.stderr
        return (stderr.through if isinstance(stderr, _Stream) else stderr).write(text)

    def flush(self) -> None:
        self.through.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.through, name)


def stand_in() -> None:
    """Put the stand-ins in place (before a handler loads: a logger it makes binds the stream)."""
    with _lock:
        if not isinstance(sys.stdout, _Stream):
            sys.stdout = _Stream(sys.stdout)
        if not isinstance(sys.stderr, _Stream):
            sys.stderr = _Stream(sys.stderr)


@contextmanager
def kept(log: list[str]) -> Iterator[None]:
    """In an invocation's thread: what it prints meanwhile goes into ``log``, in order."""
    stand_in()
    _logs[threading.get_ident()] = log
    try:
        yield
    finally:
        _logs.pop(threading.get_ident(), None)
