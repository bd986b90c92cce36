"""An execution's history: which event each event follows (``previousEventId``), fix 74.

moto links every event to the last one its context published. AWS links two kinds otherwise
(recorded, every recording that has them):

- an ``EvaluationFailed`` event follows what its state's ``…StateEntered`` event followed (23 of 23
  recordings: the first state's failure follows event 0);
- a Distributed Map's ``MapStateExited`` follows its ``MapRunStarted`` (every recording since
  November 2024; the recordings before it, which link it to ``MapRunSucceeded``, are superseded).

A runtime error's cause says where its state was "entered at the event id #N": N is that state's
``…StateEntered`` event (63 of 63 recordings); moto wrote the last event before the failure, which
differs once the state published more (a Task whose ResultSelector fails after TaskSucceeded).

147. [L49] A cause is cut to its first 32,768 characters, the most every cause of Step Functions' API
     holds (its reference: ``ExecutionFailedEventDetails``, ``TaskFailedEventDetails``,
     ``LambdaFunctionFailedEventDetails``, ``DescribeExecution``…), in every history event (and so
     every execution log) and in the execution's own cause. moto kept a cause whole: a business
     step's 100 KB error message became a 100,497-character cause. A state's error output (what a
     Catch passes on) keeps its cause whole: no document or recording says it is cut.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_EVENT_MANAGER = "moto.stepfunctions.parser.asl.eval.event.event_manager:EventManager"
_ENTERED_FROM = "_sfn_local_entered_from"  # on a context: what its state's entered event followed
_ENTERED_AT = "_sfn_local_entered_at"  # on a context: its state's entered event
# On an event manager: per thread, the MapRunStarted of each Map state it is in (a Map state enters,
# starts its run and exits in one thread; its run publishes in another context than its exit).
_MAP_RUNS = "_sfn_local_map_runs"
_FAILURE_EVENT = "moto.stepfunctions.parser.asl.component.common.error_name.failure_event:FailureEvent"
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment:Environment"

CAUSE_LIMIT_CHARACTERS = 32_768


_MAP_KINDS = frozenset(
    {"MapStateEntered", "MapRunStarted", "MapStateExited", "MapStateFailed", "MapStateAborted"}
)


def _map_runs(manager: Any) -> list[int | None]:
    """This thread's stack of the Map states it is in, each with its MapRunStarted once there is one."""
    stacks: dict[int, list[int | None]] = manager.__dict__.setdefault(_MAP_RUNS, {})
    return stacks.setdefault(threading.get_ident(), [])


def _linked_as_recorded(original: Callable[..., int]) -> Callable[..., int]:
    def add_event(self: Any, context: Any, event_type: Any, *args: Any, **kwargs: Any) -> int:
        kind = str(getattr(event_type, "value", event_type))
        map_runs = _map_runs(self) if kind in _MAP_KINDS else []  # only Map events touch it
        follows = None
        if kind == "EvaluationFailed":
            follows = getattr(context, _ENTERED_FROM, None)
        elif kind == "MapStateExited" and map_runs:
            follows = map_runs.pop()
        if kind.endswith("StateEntered"):
            setattr(context, _ENTERED_FROM, context.source_event_id)
        if kind == "MapStateEntered":
            map_runs.append(None)
        elif kind in ("MapStateFailed", "MapStateAborted") and map_runs:
            map_runs.pop()  # a Map state that does not exit
        if follows is not None:
            context.source_event_id = follows
        event_id = original(self, context, event_type, *args, **kwargs)
        if kind == "MapRunStarted" and map_runs:
            map_runs[-1] = event_id
        elif kind.endswith("StateEntered"):
            setattr(context, _ENTERED_AT, event_id)
        return event_id

    return add_event


def _entered_at_its_state(original: Callable[..., None]) -> Callable[..., None]:
    def init(self: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        original(self, env, *args, **kwargs)
        entered_at = getattr(env.event_history_context, _ENTERED_AT, None)
        if entered_at is not None:
            self.source_event_id = entered_at

    return init


def _with_cause_cut(error: Any) -> Any:
    """The same failure, its cause cut to the limit; anything else as it is."""
    cause = error.get("cause") if isinstance(error, dict) else None
    if not isinstance(cause, str) or len(cause) <= CAUSE_LIMIT_CHARACTERS:
        return error
    return {**error, "cause": cause[:CAUSE_LIMIT_CHARACTERS]}


def _event_causes_cut(original: Callable[..., int]) -> Callable[..., int]:
    def add_event(
        self: Any, context: Any, event_type: Any, event_details: Any = None, *args: Any, **kwargs: Any
    ) -> int:
        if event_details:  # one member, '<kind>EventDetails'; copied, never changed where it came from
            event_details = {kind: _with_cause_cut(details) for kind, details in event_details.items()}
        return original(self, context, event_type, event_details, *args, **kwargs)

    return add_event


def _execution_cause_cut(original: Callable[..., None]) -> Callable[..., None]:
    def set_error(self: Any, error: Any) -> None:
        original(self, _with_cause_cut(error))

    return set_error


PATCHES: tuple[Patch, ...] = (
    Patch(74, _EVENT_MANAGER, "add_event", _linked_as_recorded),
    Patch(74, _FAILURE_EVENT, "__init__", _entered_at_its_state),
    Patch(147, _EVENT_MANAGER, "add_event", _event_causes_cut),
    Patch(147, _ENVIRONMENT, "set_error", _execution_cause_cut),
)
