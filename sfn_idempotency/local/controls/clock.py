"""The engine's clock: real time plus an offset that tests move forward instead of sleeping."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MILLISECONDS_PER_SECOND = 1000


class MovableClock:
    """The time the key Lambda and a state's entry read (``cloud.clock``): leases and expiries are
    judged by it, so a test moves it past a lease instead of sleeping."""

    def __init__(self) -> None:
        self._offset_ms = 0
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def on_advance(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` after every ``advance`` (what waits for a deadline on this clock wakes
        to look again); the answer removes it."""
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def now_ms(self) -> int:
        """Epoch milliseconds: the real time plus every ``advance`` so far."""
        return time.time_ns() // 1_000_000 + self._offset_ms

    def now_seconds(self) -> float:
        """Epoch seconds, the same time (what the interpreter's own clocks read)."""
        return self.now_ms() / MILLISECONDS_PER_SECOND

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward (never back)."""
        if seconds < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._offset_ms += round(seconds * MILLISECONDS_PER_SECOND)
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
