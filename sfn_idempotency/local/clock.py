"""The engine's clock: real time plus an offset that tests move forward instead of sleeping."""

from __future__ import annotations

import threading
import time

MILLISECONDS_PER_SECOND = 1000


class MovableClock:
    def __init__(self) -> None:
        self._offset_ms = 0
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self._offset_ms

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._offset_ms += round(seconds * MILLISECONDS_PER_SECOND)
