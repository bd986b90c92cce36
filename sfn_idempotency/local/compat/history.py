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
153. [L12] A value that is still the execution's input, whole and unchanged, is written as the
     text it was sent as, spaces included: in each state's entered and exited events, a
     Parallel's output (which splices its branches' texts), the execution's output and
     DescribeExecution (recorded: an Inline Map, a Parallel and a Pass, 2024). A value that holds
     the input or a selection of it (a Map's ``Parameters`` with ``"fromInput.$": "$"``) is
     written again, compact, and a Distributed Map is entered with the input written again
     (recorded since 20-07-2024). moto parsed the input and wrote every value again, compact.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

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


# -- fix 153: the input's text as sent ----------------------------------------------------------------
_COMPACT = (",", ":")
_STATE_MAP = "moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map:StateMap"
_PARALLEL = "moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel:StateParallel"
_EXECUTION = "moto.stepfunctions.parser.backend.execution:Execution"
# Each module that writes a state's data, or the execution's, into an event or an answer; each
# imported ``to_json_str`` by name.
_DATA_WRITING_MODULES = (
    "moto.stepfunctions.parser.asl.component.state.state",
    "moto.stepfunctions.parser.asl.component.program.program",
    "moto.stepfunctions.parser.backend.execution",
    "moto.stepfunctions.parser.backend.execution_worker",
)


class _SentText:
    """An execution's input as read, with the text it was sent as and its compact text then. A
    copy is still the input (a Parallel's branches, a state's copy of its input)."""

    sent_text: str
    compact_text: str

    def unchanged(self) -> bool:
        return json.dumps(self, separators=_COMPACT) == self.compact_text


class _SentObject(_SentText, dict[str, Any]):
    def __deepcopy__(self, memo: dict[int, Any]) -> _SentObject:
        return _carrying(self, _SentObject(copy.deepcopy(dict(self), memo)))


class _SentArray(_SentText, list[Any]):
    def __deepcopy__(self, memo: dict[int, Any]) -> _SentArray:
        return _carrying(self, _SentArray(copy.deepcopy(list(self), memo)))


_Carrier = TypeVar("_Carrier", bound=_SentText)


def _carrying(source: _SentText, carrier: _Carrier) -> _Carrier:
    carrier.sent_text, carrier.compact_text = source.sent_text, source.compact_text
    return carrier


class _BranchOutputs(list[Any]):
    """A Parallel's output: its branches' outputs, each written as it is written alone."""


def with_sent_text(value: Any, text: str) -> Any:
    """``value`` (read from ``text``) remembering ``text``, if it is an object or an array."""
    kind: type[_SentObject | _SentArray] | None = (
        _SentObject if type(value) is dict else _SentArray if type(value) is list else None
    )
    compact_text = json.dumps(value, separators=_COMPACT)
    if kind is None or compact_text == text:
        return value
    carrier = kind(value)
    carrier.sent_text, carrier.compact_text = text, compact_text
    return carrier


def written(value: Any, write: Callable[..., str], separators: tuple[str, str] | None = None) -> str:
    """``value`` as JSON text: the input's text as sent while it is the whole value and unchanged,
    a Parallel's output spliced from its branches' texts; any other value as ``write`` writes it
    (a value that holds the input, a selection of it: written again)."""
    if isinstance(value, _SentText) and value.unchanged():
        return value.sent_text
    if isinstance(value, _BranchOutputs):
        items = (separators or (", ", ": "))[0]
        return "[" + items.join(written(item, write, separators) for item in value) + "]"
    return write(value, separators=separators)


def _writing_sent_text(original: Callable[..., str]) -> Callable[..., str]:
    def to_json_str(obj: Any, separators: tuple[str, str] | None = None) -> str:
        return written(obj, original, separators)

    return to_json_str


def _read_with_its_text(original: Callable[..., None]) -> Callable[..., None]:
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.input_data = with_sent_text(self.input_data, self.execution_input)

    return init


def _branch_outputs_spliced(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def eval_execution(self: Any, env: Any) -> None:
        original(self, env)  # its branches' outputs are left on the stack
        env.stack[-1] = _BranchOutputs(env.stack[-1])

    return eval_execution


def _distributed_map_entered_compact(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (
        DistributedIterationComponent,
    )

    def event_details(self: Any, env: Any) -> Any:
        details = original(self, env)
        if isinstance(self.iteration_component, DistributedIterationComponent):
            details["input"] = json.dumps(json.loads(details["input"]), separators=_COMPACT)
        return details

    return event_details


PATCHES: tuple[Patch, ...] = (
    Patch(74, _EVENT_MANAGER, "add_event", _linked_as_recorded),
    Patch(74, _FAILURE_EVENT, "__init__", _entered_at_its_state),
    Patch(147, _EVENT_MANAGER, "add_event", _event_causes_cut),
    Patch(147, _ENVIRONMENT, "set_error", _execution_cause_cut),
    Patch(153, _EXECUTION, "__init__", _read_with_its_text),
    *(Patch(153, module, "to_json_str", _writing_sent_text) for module in _DATA_WRITING_MODULES),
    Patch(153, _PARALLEL, "_eval_execution", _branch_outputs_spliced),
    Patch(153, _STATE_MAP, "_get_state_entered_event_details", _distributed_map_entered_compact),
)
