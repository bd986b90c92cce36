"""The engine's long-lived objects, kept out of the cyclic garbage collector's full passes.

moto's modules and backends, botocore's service models (ordered dicts of each service's whole API)
and the engine's own modules live as long as the process, and every full pass of the collector
walked them all again. In ``make bench``'s throughput run (400 idempotent executions at 8 in
flight, four rounds) a full pass took 170 ms and the collector 15 % of the CPU; with them frozen, a
full pass takes 90 ms (more of them run: fewer objects are counted as old) and the collector 12 %.
Once per process, when the first engine has started, the young generations are collected and what
is alive is frozen (``gc.freeze``). (A full collection there found nothing to free, and took 77 ms.)

Frozen objects are still freed when their last reference goes; only a reference cycle among them
that later becomes garbage is never collected, which bounds what can stay to what the first engine
and its process held when it started.
"""

from __future__ import annotations

import gc
import threading

_YOUNG_GENERATIONS = 1  # gc.collect(1): generations 0 and 1, the objects made since the last passes
_lock = threading.Lock()
_settled = False


def settle() -> None:
    """Collect the young generations, then freeze what is alive, the first time an engine of this
    process starts."""
    global _settled
    with _lock:
        if _settled:
            return
        _settled = True
        gc.collect(_YOUNG_GENERATIONS)
        gc.freeze()
