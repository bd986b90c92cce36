"""The garbage collector's first threshold while an engine runs.

moto's interpreter makes and drops many small containers at every state (frames, events, copies of
JSON values), and CPython starts a young collection every 700 of them; every tenth of those also
collects the middle generation, and now and then one collects every object of the process (moto's
modules, botocore's service models: 100 to 170 ms a pass). In ``make bench``'s throughput run (400
idempotent executions at 8 in flight) the collector took 11 to 15 % of the CPU and made 4 full
passes; with a first threshold of 10,000 it takes 5 to 6 %, and made none. On ``serve``, across a
run of the peer bench: 1.2 s of collections and 7 full passes against 0.45 s and 1.

While a cloud runs the first threshold is at least 10,000 (a threshold of 0, collection switched
off, is left so); closing the cloud restores the process's own. Cyclic garbage waits for more
allocations before it is freed; nothing else changes.
"""

from __future__ import annotations

import gc

YOUNG_OBJECTS_PER_COLLECTION = 10_000

Thresholds = tuple[int, int, int]


def widen() -> Thresholds:
    """Raise the first threshold for an engine's run; the thresholds it replaced."""
    previous: Thresholds = gc.get_threshold()
    first, middle, oldest = previous
    if first:
        gc.set_threshold(max(first, YOUNG_OBJECTS_PER_COLLECTION), middle, oldest)
    return previous


def restore(previous: Thresholds) -> None:
    gc.set_threshold(*previous)
