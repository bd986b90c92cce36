"""Each failed Task attempt, as it happens: the execution, the state, the error and the cause, for
whoever listens (``serve`` prints one line per attempt). The attempt's history event is the source,
so a retried failure is reported at each attempt, a caught one too, as the history shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability

_EVENT_MANAGER = "moto.stepfunctions.parser.asl.eval.event.event_manager:EventManager"
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment:Environment"
_EXECUTION = "sfn_execution_arn"
# The history events of a Task attempt that failed, of every kind of Task.
FAILURE_EVENTS = frozenset(
    {
        "TaskFailed",
        "TaskTimedOut",
        "TaskStartFailed",
        "TaskSubmitFailed",
        "LambdaFunctionFailed",
        "LambdaFunctionTimedOut",
        "LambdaFunctionStartFailed",
        "LambdaFunctionScheduleFailed",
        "ActivityFailed",
        "ActivityTimedOut",
        "ActivityScheduleFailed",
    }
)


@dataclass(frozen=True)
class TaskFailure:
    execution_arn: str  # empty for a Distributed Map's child history
    state: str
    error: str
    cause: str

    def line(self, limit: int = 300) -> str:
        """One line: the execution's name, the state, the error, the cause's start."""
        name = self.execution_arn.rsplit(":", 1)[-1] or "-"
        return f"{name} {self.state}: {failure_words(self.error, self.cause, limit)}"


def failure_words(error: str, cause: str, limit: int = 300) -> str:
    """``error: cause`` on one line, the cause's whitespace folded and cut to ``limit`` characters."""
    cause = " ".join(cause.split())
    if len(cause) > limit:
        cause = cause[: limit - 1] + "…"
    return f"{error or 'failed'}" + (f": {cause}" if cause else "")


listeners: list[Callable[[TaskFailure], None]] = []


def _state_of(manager: Any, event_id: int) -> str:
    """The state whose entry the event follows, walking its previous events."""
    events = manager._history_event_list
    while 0 < event_id <= len(events):
        event = events[event_id - 1]
        if str(getattr(event["type"], "value", event["type"])).endswith("StateEntered"):
            return str(event.get("stateEnteredEventDetails", {}).get("name", ""))
        event_id = event.get("previousEventId", 0)
    return ""


def _reported(original: Callable[..., None]) -> Callable[..., None]:
    def publish_history_event(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        kind = kwargs.get("event_type")
        if not listeners or str(getattr(kind, "value", kind)) not in FAILURE_EVENTS:
            return
        details: dict[str, Any] = next(
            (
                value
                for key, value in (kwargs.get("event_details") or {}).items()
                if key.endswith("EventDetails")
            ),
            {},
        )
        failure = TaskFailure(
            execution_arn=getattr(self, _EXECUTION, ""),
            state=_state_of(self, int(kwargs.get("source_event_id") or 0)),
            error=str(details.get("error") or ""),
            cause=str(details.get("cause") or ""),
        )
        for listener in list(listeners):
            listener(failure)

    return publish_history_event


def _execution_named(original: Callable[..., None]) -> Callable[..., None]:
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        context = kwargs.get("context") or {}
        setattr(self.event_manager, _EXECUTION, str(context.get("Execution", {}).get("Id", "")))

    return init


PATCHES: tuple[Patch, ...] = (
    Patch(CAPABILITY, _EVENT_MANAGER, "_publish_history_event", _reported),
    Patch(CAPABILITY, _ENVIRONMENT, "__init__", _execution_named),
)


def install() -> None:
    apply_capability("task failure reports", PATCHES)
