"""One injectable clock, so the local engine and tests can move time instead of sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


_current: Clock = SystemClock()


def current() -> Clock:
    return _current


def install(clock: Clock) -> Clock:
    """Make ``clock`` the time source of every later computation; returns the one it replaced."""
    global _current
    previous, _current = _current, clock
    return previous
