"""Activities and callbacks: the Tasks that wait for someone else's answer.

34. [L27] An activity whose worker stops sending heartbeats (``HeartbeatSeconds``) fails with
    ``States.HeartbeatTimeout``, as documented (moto: ``States.Timeout``); an activity task no worker
    took within ``TimeoutSeconds`` times out with ``States.Timeout`` (moto failed on an outcome it
    never set). A ``.waitForTaskToken`` Task's missed heartbeat stays ``States.Timeout``: so AWS was
    recorded answering it, against its docs.
    Docs: https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
35. [L28] ``CreateActivity`` is idempotent: the same name answers the same activity (moto refused
    it with ActivityAlreadyExists, which the API does not have).
    Docs: https://docs.aws.amazon.com/step-functions/latest/apireference/API_CreateActivity.html
36. [L29] ``SendTaskFailure`` carries its ``cause`` to the Task (moto dropped it; recorded).
37. [L28] An activity that does not exist is ``Activity Does Not Exist: '<arn>'`` (recorded; moto
    said the ARN alone).
164. [L28] An activity created without an encryption configuration describes AWS's default,
    ``{"type": "AWS_OWNED_KEY"}`` (recorded; moto answered null, as it does not for a state machine).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_STATE_TASK = "moto.stepfunctions.parser.asl.component.state.exec.state_task"
_CALLBACK = "moto.stepfunctions.parser.asl.eval.callback.callback"
_HEARTBEAT = "States.HeartbeatTimeout"
_AWS_OWNED_KEY = "AWS_OWNED_KEY"


def _activity_heartbeat_named(original: Callable[..., Any]) -> Callable[..., Any]:
    """``StateTaskActivity._from_error``: a missed heartbeat is its own error, in the same event."""

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
            StatesErrorName,
        )
        from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
            StatesErrorNameType,
        )
        from moto.stepfunctions.parser.asl.eval.callback.callback import HeartbeatTimeoutError

        event = original(self, env, ex)
        if isinstance(ex, HeartbeatTimeoutError):
            event.error_name = StatesErrorName(typ=StatesErrorNameType.StatesHeartbeatTimeout)
            event.event_details["activityTimedOutEventDetails"]["error"] = _HEARTBEAT
        return event

    return from_error


def _no_worker_yet(original: Callable[[Any], None]) -> Callable[[Any], None]:
    """``ActivityTaskStartEndpoint.__init__``: no outcome until a worker takes the task."""

    def init(self: Any) -> None:
        original(self)
        self._outcome = None

    return init


def _failure_with_cause(_original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def send_task_failure(self: Any) -> Any:
        from moto.core.responses import EmptyResult

        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return EmptyResult()

    return send_task_failure


def _described_or_named_missing(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    def describe_activity(self: Any, activity_arn: str) -> Any:
        from moto.stepfunctions.exceptions import ActivityDoesNotExist

        self._validate_activity_arn(activity_arn)
        if activity_arn not in self.activities:
            raise ActivityDoesNotExist(f"Activity Does Not Exist: '{activity_arn}'")
        return original(self, activity_arn)

    return describe_activity


def _encrypted_by_default(original: Callable[..., None]) -> Callable[..., None]:
    """``Activity.__init__``: no configuration is AWS's own key, as DescribeActivity answers it."""

    def init(self: Any, arn: str, name: str, encryption_configuration: Any = None) -> None:
        original(self, arn, name, encryption_configuration or {"type": _AWS_OWNED_KEY})

    return init


def _same_name_same_activity(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_activity(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        existing = next((activity for activity in self.activities.values() if activity.name == name), None)
        return existing if existing is not None else original(self, name, *args, **kwargs)

    return create_activity


PATCHES: tuple[Patch, ...] = (
    Patch(
        34,
        f"{_STATE_TASK}.state_task_activitiy:StateTaskActivity",
        "_from_error",
        _activity_heartbeat_named,
    ),
    Patch(34, f"{_CALLBACK}:ActivityTaskStartEndpoint", "__init__", _no_worker_yet),
    Patch(35, "moto.stepfunctions.models:StepFunctionBackend", "create_activity", _same_name_same_activity),
    Patch(36, "moto.stepfunctions.responses:StepFunctionResponse", "send_task_failure", _failure_with_cause),
    Patch(164, "moto.stepfunctions.models:Activity", "__init__", _encrypted_by_default),
    Patch(
        37, "moto.stepfunctions.models:StepFunctionBackend", "describe_activity", _described_or_named_missing
    ),
)
