"""What the explorer varies: a schedule is a short list of steps, drawn and shrunk by hypothesis.

Time passes only in calls: an execution is held *before* a state (a moment, to interleave another
execution there) or *inside* a function call (where time may pass: the clock may move past a lease
only while every held execution waits in a call). Each step moves one execution on until every
execution has ended or is held again, so a schedule runs the same way every time.
"""

from __future__ import annotations

import base64
import itertools
import json
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hypothesis import strategies as st

TOKEN_PREFIX = "sfnx1."
# DynamoDB faults: (error code, HTTP status, whether the write landed before the error answered).
DYNAMODB_FAULTS = {
    "throttled": ("ProvisionedThroughputExceededException", 400, False),
    "5xx": ("InternalServerError", 500, False),
    "5xx after the write landed": ("InternalServerError", 500, True),
}
# Function faults: the error the invocation answers, and whether the code ran first.
FUNCTION_FAULTS = {
    "error": ("InjectedFailure", False),
    "throttled": ("Lambda.TooManyRequestsException", False),
    "timed out": ("Sandbox.Timedout", False),
    "timed out after its effect": ("Sandbox.Timedout", True),
}
# Results a schedule may give a watched function (a business step) instead of its own, after its
# code ran: the size of its JSON text, near Step Functions' 256 KiB quota for a state's data; one
# fits, the other does not (the flow keeps its key as RESULT_TOO_LARGE).
LARGE_RESULTS = {"answered 250 KB": 250_000, "answered 300 KB": 300_000}
INJECTED_ERRORS = frozenset(
    {
        *(code for code, _, _ in DYNAMODB_FAULTS.values()),
        *(error for error, _ in FUNCTION_FAULTS.values()),
    }
)
MAX_CONSECUTIVE_FAULTS = 2  # transient faults: an outage that outlasts every Retry is not explored


def large_result(kind: str) -> dict[str, str]:
    """The result of ``LARGE_RESULTS[kind]`` bytes of JSON text (compact, as Step Functions counts it)."""
    return {"explorer": "x" * (LARGE_RESULTS[kind] - len('{"explorer":""}'))}


def fault_kinds(operation: str, surface: Surface) -> list[str]:
    """What a call of ``operation`` (``lambda:<function>``, ``dynamodb:<action>``) may be given: a
    DynamoDB fault; any function an error; a watched one a large result when the target says its
    flow takes them."""
    service, _, name = operation.partition(":")
    if service != "lambda":
        return sorted(DYNAMODB_FAULTS)
    sized = surface.large_results and name in surface.watched
    return sorted(FUNCTION_FAULTS) + (sorted(LARGE_RESULTS) if sized else [])


@dataclass(frozen=True)
class Hold:
    """Where the moved execution is held next: before a state, or inside a call of a function."""

    state: str = ""
    function: str = ""

    def describe(self) -> str:
        return f"before {self.state}" if self.state else f"inside a call of {self.function}"


@dataclass(frozen=True)
class Fault:
    """The next ``calls`` calls of ``operation`` (``dynamodb:PutItem``, ``lambda:<function>``)
    during a step fail with ``kind``."""

    operation: str
    kind: str
    calls: int = 1

    @property
    def service(self) -> str:
        return self.operation.partition(":")[0]

    @property
    def name(self) -> str:
        return self.operation.partition(":")[2]

    def describe(self) -> str:
        times = "" if self.calls == 1 else f" ({self.calls} calls)"
        return f"{self.name} {self.kind}{times}"


@dataclass(frozen=True)
class Step:
    """One step. ``action``: ``start`` a duplicate, ``resume``, ``stop``, ``time out`` or
    ``redrive`` execution ``execution`` (counted from 0, in start order), move the ``clock`` past
    the ``lease`` or the record's ``expiry``, or ``release`` the helper workflows held so far.
    ``hold``, ``faults`` and ``hold_helpers`` apply while the step runs."""

    action: str
    execution: int = 0
    request: int = 0
    hold: Hold | None = None
    faults: tuple[Fault, ...] = ()
    past: str = ""
    hold_helpers: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {name: value for name, value in data.items() if value not in (None, (), [], "", False, 0)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        hold = data.get("hold")
        return cls(
            action=data["action"],
            execution=int(data.get("execution", 0)),
            request=int(data.get("request", 0)),
            hold=Hold(**hold) if hold else None,
            faults=tuple(Fault(**fault) for fault in data.get("faults", ())),
            past=str(data.get("past", "")),
            hold_helpers=bool(data.get("hold_helpers", False)),
        )


@dataclass(frozen=True)
class Schedule:
    steps: tuple[Step, ...] = field(default_factory=tuple)

    def token(self) -> str:
        """The schedule as text that replays it exactly (``explore(..., replay=token)``)."""
        text = json.dumps([step.to_json() for step in self.steps], separators=(",", ":"))
        return TOKEN_PREFIX + base64.urlsafe_b64encode(zlib.compress(text.encode())).decode()

    @classmethod
    def from_token(cls, token: str) -> Schedule:
        if not token.startswith(TOKEN_PREFIX):
            raise ValueError(f"a replay token begins with {TOKEN_PREFIX!r}")
        try:
            data = json.loads(zlib.decompress(base64.urlsafe_b64decode(token[len(TOKEN_PREFIX) :])))
            return cls(tuple(Step.from_json(step) for step in data))
        except (ValueError, KeyError, TypeError, zlib.error) as error:
            raise ValueError(f"not a replay token: {error}") from None


@dataclass(frozen=True)
class Surface:
    """What a target lets a schedule vary: its Task states (to hold an execution before one), the
    functions and DynamoDB operations its Tasks call, how many inputs make one request, and what
    its executions allow."""

    states: tuple[str, ...]
    functions: tuple[str, ...]
    dynamodb_operations: tuple[str, ...]
    watched: tuple[str, ...] = ()
    requests: int = 1
    redrivable: bool = True  # Standard executions: stopped and redriven
    helpers: bool = False  # other workflows that react to its executions (the release workflow)
    large_results: bool = False  # its watched functions may answer results near the 256 KiB quota
    max_steps: int = 7


def schedules(surface: Surface) -> st.SearchStrategy[Schedule]:
    """Schedules over ``surface``: a first request, then steps. The first alternatives shrink
    best: a schedule shrinks towards starts of the same request with nothing held and no fault."""
    first = _steps(surface, starts_only=True)
    rest = st.lists(_steps(surface), max_size=surface.max_steps - 1)
    return st.tuples(first, rest).map(lambda steps: Schedule((steps[0], *steps[1])))


def _steps(surface: Surface, *, starts_only: bool = False) -> st.SearchStrategy[Step]:
    execution = st.integers(min_value=0, max_value=surface.max_steps - 1)
    holds = _holds(surface)
    faults = st.lists(_faults(surface), max_size=1).map(tuple) if _fault_points(surface) else st.just(())
    helpers = st.booleans() if surface.helpers else st.just(False)
    moving = {"hold": holds, "faults": faults, "hold_helpers": helpers}
    start = st.builds(Step, action=st.just("start"), request=st.integers(0, surface.requests - 1), **moving)
    if starts_only:
        return start
    # Weights, by repetition: duplicates, the moving clock and operators' stops and redrives are
    # what breaks protocols; a resume only lets go of what an earlier step held.
    alternatives = [
        start,
        start,
        st.builds(Step, action=st.just("resume"), execution=execution, **moving),
        st.builds(Step, action=st.just("clock"), past=st.sampled_from(["lease", "expiry"])),
        st.builds(Step, action=st.just("clock"), past=st.just("lease")),
        st.builds(Step, action=st.just("time out"), execution=execution, hold_helpers=helpers),
    ]
    if surface.redrivable:
        stop = st.builds(Step, action=st.just("stop"), execution=execution, hold_helpers=helpers)
        redrive = st.builds(Step, action=st.just("redrive"), execution=execution, **moving)
        alternatives += [stop, stop, redrive, redrive]
    if surface.helpers:
        alternatives.append(st.just(Step(action="release")))
    return st.one_of(alternatives)


def _holds(surface: Surface) -> st.SearchStrategy[Hold | None]:
    """Nothing held, or (as often) inside a watched call, or inside any call, or before a Task:
    the moments between two Tasks are all "before the next Task"."""
    options: list[st.SearchStrategy[Hold | None]] = [st.none()]
    if surface.watched:
        options.append(st.builds(Hold, function=st.sampled_from(surface.watched)))
    if surface.functions:
        options.append(st.builds(Hold, function=st.sampled_from(surface.functions)))
    if surface.states:
        options += [st.builds(Hold, state=st.sampled_from(surface.states))] * 2
    return st.one_of(options)


def _fault_points(surface: Surface) -> list[str]:
    return [f"lambda:{name}" for name in surface.functions] + [
        f"dynamodb:{operation}" for operation in surface.dynamodb_operations
    ]


def _faults(surface: Surface) -> st.SearchStrategy[Fault]:
    def fault_for(operation: str) -> st.SearchStrategy[Fault]:
        kinds = fault_kinds(operation, surface)
        return st.builds(
            Fault,
            operation=st.just(operation),
            kind=st.sampled_from(kinds),
            calls=st.integers(1, MAX_CONSECUTIVE_FAULTS),
        )

    points = st.sampled_from(_fault_points(surface))
    if surface.watched:  # half the faults hit a watched side effect: the calls that matter most
        points = st.one_of(st.sampled_from([f"lambda:{name}" for name in surface.watched]), points)
    return points.flatmap(fault_for)


def canonical(surface: Surface) -> list[Schedule]:
    """The sweep that runs before any random schedule: for every moment an execution can be held
    at (inside each call, before each Task), the stories that break protocols: a duplicate then,
    an operator's stop or a time-out then, followed by a duplicate, a redrive or both (in either
    order), a release workflow that comes late, the clock past the lease; and every fault (and
    large result) at the first run. The stories take turns, so that any part of the sweep holds
    every kind."""
    held = [Hold(function=name) for name in surface.watched] + [
        Hold(function=name) for name in surface.functions if name not in surface.watched
    ]
    held += [Hold(state=name) for name in surface.states]
    start = Step("start")
    families: list[list[Schedule]] = []

    def family(make: Callable[[Hold], list[Step] | None]) -> None:
        stories = [make(hold) for hold in held]
        families.append([Schedule(tuple(story)) for story in stories if story])

    family(lambda hold: [Step("start", hold=hold), start])
    family(
        lambda hold: [Step("start", hold=hold), Step("clock", past="lease"), start] if hold.function else None
    )
    family(lambda hold: [Step("start", hold=hold), Step("time out"), start])
    if surface.redrivable:
        family(lambda hold: [Step("start", hold=hold), Step("stop"), start])
        family(lambda hold: [Step("start", hold=hold), Step("stop"), Step("redrive")])
        family(lambda hold: [Step("start", hold=hold), Step("stop"), start, Step("redrive")])
        family(lambda hold: [Step("start", hold=hold), Step("stop"), Step("redrive", hold=hold), start])
        if surface.helpers:
            family(
                lambda hold: [
                    Step("start", hold=hold),
                    Step("stop", hold_helpers=True),
                    Step("redrive"),
                    start,
                    Step("release"),
                ]
            )
    faults: list[Schedule] = []
    large: list[Schedule] = []  # a family of their own: every part of the sweep has both sizes
    for operation in _fault_points(surface):
        kinds = fault_kinds(operation, surface)
        for kind in kinds:
            faulty = Step("start", faults=(Fault(operation, kind),), hold_helpers=surface.helpers)
            (large if kind in LARGE_RESULTS else faults).append(Schedule((faulty, start)))
    families += [faults, large]
    families.append([Schedule((start, Step("clock", past="expiry"), start))])
    turns = itertools.zip_longest(*families)
    return [schedule for turn in turns for schedule in turn if schedule is not None]
