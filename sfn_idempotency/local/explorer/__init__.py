"""The exactly-once explorer: runs a state machine on the local engine under many schedules of
duplicates, faults, stops, time-outs, redrives, a moving clock and late release workflows, and
checks that each watched side effect happens at most once per request (sfn_idempotency.testing:
``explore``; the command: ``sfn-idempotency check``).

- ``schedules``: what a schedule is, and how hypothesis draws and shrinks them;
- ``target``: what is checked; ``surface``: what its definition lets a schedule vary;
- ``runs``: the calls a schedule sees; ``director``: runs one schedule, step by step;
- ``invariants``: what must hold; ``report``: the answer (text, JSON, an SVG timeline).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, Verbosity, assume, given, settings
from hypothesis import seed as with_seed
from hypothesis.errors import Flaky
from hypothesis.strategies import SearchStrategy

from sfn_idempotency.local import compat
from sfn_idempotency.local.controls import task_deadlines
from sfn_idempotency.local.explorer import invariants
from sfn_idempotency.local.explorer.director import Director, ExplorerError
from sfn_idempotency.local.explorer.outcome import ScheduleOutcome
from sfn_idempotency.local.explorer.report import Counterexample, ExactlyOnceViolation, Report
from sfn_idempotency.local.explorer.schedules import Schedule, canonical, schedules
from sfn_idempotency.local.explorer.surface import surface_of
from sfn_idempotency.local.explorer.target import EventBridgeDelivery, Target, TargetError

DEFAULT_SCHEDULES = 200
DEFAULT_MAX_STEPS = 6
ROUND_SCHEDULES = 25  # with a time budget, schedules are drawn in rounds of this many, each seeded anew

__all__ = [
    "DEFAULT_SCHEDULES",
    "Counterexample",
    "EventBridgeDelivery",
    "ExactlyOnceViolation",
    "ExplorerError",
    "Report",
    "ScheduleOutcome",
    "Target",
    "TargetError",
    "explore",
]


class _Stuck(BaseException):
    """The engine did not settle: ends the search at once (hypothesis neither retries nor shrinks
    what is not an Exception)."""

    def __init__(self, error: ExplorerError, schedule: Schedule) -> None:
        super().__init__(str(error))
        self.error, self.schedule = error, schedule


class _Found(Exception):
    def __init__(self, outcome: ScheduleOutcome) -> None:
        super().__init__(outcome.violations[0].message)
        self.outcome = outcome


@dataclass
class _Tally:
    ran: int = 0
    first_found: int | None = None
    at_least_once: int = 0
    example_note: str = ""
    covered: Counter[str] | None = None


def explore(
    target: Target,
    *,
    schedules_to_run: int = DEFAULT_SCHEDULES,
    seed: int = 0,
    budget_seconds: float | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    replay: str | None = None,
    sweep: bool = True,
) -> Report:
    """Run ``target`` under ``schedules_to_run`` schedules: first the sweep of every moment and
    story (schedules.canonical, unless ``sweep`` is off), then random schedules drawn by hypothesis
    from ``seed``; with
    ``budget_seconds``, as many as fit instead. With ``replay``, exactly the schedule of a
    counterexample's token. Answers a Report: ``report.assert_exactly_once()`` fails a test with
    the shortest counterexample found."""
    director = Director(target)
    name = target.state_machine_arn.rsplit(":", 1)[-1]
    started = time.monotonic()
    deadline = None if budget_seconds is None else started + budget_seconds
    tally = _Tally(covered=Counter())

    def more(ran: int) -> bool:
        if deadline is not None:
            return time.monotonic() < deadline
        return ran < schedules_to_run

    with _exploring(target, director), _stuck_reported():
        if replay is not None:
            outcome = _run(director, target, Schedule.from_token(replay), tally)
            found = outcome if outcome.violations else None
        else:
            surface = surface_of(target, max_steps)
            found = _sweep(director, target, canonical(surface) if sweep else [], tally, more)
            strategy = schedules(surface)
            round_number = 0
            while found is None and more(tally.ran):
                size = ROUND_SCHEDULES if deadline is not None else schedules_to_run - tally.ran
                found = _search(director, target, strategy, size, seed + round_number, tally, deadline)
                round_number += 1
    return Report(
        target=name,
        seed=seed,
        schedules=tally.ran,
        seconds=time.monotonic() - started,
        covered=tally.covered or Counter(),
        counterexample=None if found is None else Counterexample(found, found.schedule.token()),
        schedules_to_find=tally.first_found,
        at_least_once=tally.at_least_once,
        example_note=tally.example_note,
    )


def _sweep(
    director: Director,
    target: Target,
    sweep: list[Schedule],
    tally: _Tally,
    more: Callable[[int], bool],
) -> ScheduleOutcome | None:
    """The canonical schedules in order; the first that breaks an invariant, shrunk."""
    for schedule in sweep:
        if not more(tally.ran):
            return None
        outcome = _run(director, target, schedule, tally)
        if outcome.violations:
            return _shrunk(director, target, outcome, tally)
    return None


def _shrunk(director: Director, target: Target, outcome: ScheduleOutcome, tally: _Tally) -> ScheduleOutcome:
    """Greedy, as hypothesis shrinks: drop each step, then what each step holds or injects, while
    the same invariant stays broken."""
    broken = {v.invariant for v in outcome.violations}
    improved = True
    while improved:
        improved = False
        for candidate in _simpler(outcome.schedule):
            attempt = _run(director, target, candidate, tally)
            if broken & {v.invariant for v in attempt.violations}:
                outcome, improved = attempt, True
                break
    return outcome


def _simpler(schedule: Schedule) -> Iterator[Schedule]:
    steps = schedule.steps
    for index in range(1, len(steps)):  # the first start stays
        yield Schedule(steps[:index] + steps[index + 1 :])
    for index, step in enumerate(steps):
        for simpler in (
            dataclasses.replace(step, hold=None) if step.hold is not None else None,
            dataclasses.replace(step, faults=()) if step.faults else None,
            dataclasses.replace(step, hold_helpers=False) if step.hold_helpers else None,
        ):
            if simpler is not None:
                yield Schedule((*steps[:index], simpler, *steps[index + 1 :]))


def _search(
    director: Director,
    target: Target,
    strategy: SearchStrategy[Schedule],
    size: int,
    seed: int,
    tally: _Tally,
    deadline: float | None,
) -> ScheduleOutcome | None:
    """One hypothesis search of ``size`` schedules; the shrunk counterexample, if one was found."""

    @settings(
        max_examples=size,
        derandomize=False,  # the seed decides, whatever profile a test run loaded
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
    )
    @with_seed(seed)
    @given(strategy)
    def search(schedule: Schedule) -> None:
        if tally.first_found is None:
            assume(deadline is None or time.monotonic() < deadline)
        outcome = _run(director, target, schedule, tally)
        if outcome.violations:
            raise _Found(outcome)

    try:
        search()
    except _Found as found:
        return found.outcome
    except Flaky as flaky:  # it broke once, and not when hypothesis ran it again
        raise ExplorerError(
            f"a schedule broke an invariant once but not again, so a step is not deterministic: {flaky}"
        ) from None
    return None


def _run(director: Director, target: Target, schedule: Schedule, tally: _Tally) -> ScheduleOutcome:
    try:
        outcome = director.run(schedule)
    except ExplorerError as error:
        raise _Stuck(error, schedule) from None
    invariants.check(outcome, target)
    if tally.first_found is None:
        tally.ran += 1
        assert tally.covered is not None
        tally.covered.update(outcome.covered)
        if outcome.notes and not outcome.violations:
            tally.at_least_once += 1
            tally.example_note = tally.example_note or outcome.notes[0].message
        if outcome.violations:
            tally.first_found = tally.ran
    return outcome


@contextlib.contextmanager
def _stuck_reported() -> Iterator[None]:
    try:
        yield
    except _Stuck as stuck:
        raise ExplorerError(f"{stuck.error}; its schedule replays with {stuck.schedule.token()}") from None


@contextlib.contextmanager
def _exploring(target: Target, director: Director) -> Iterator[None]:
    """While exploring: Retry waits take no time, and Task time-outs follow the engine's clock.
    After: the tables are as they were before (the clock stays where the schedules moved it)."""
    cloud = target.cloud
    scale, clock = compat.retry_time.scale, task_deadlines.active.clock
    compat.retry_time.scale = 0
    task_deadlines.active.clock = cloud.clock
    try:
        yield
    finally:
        compat.retry_time.scale = scale
        task_deadlines.active.clock = clock
        director.restore_tables()
