"""Service integrations: what a Task's call sends and what its result looks like (fix 6)."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import Any

import botocore.session
from moto.stepfunctions.parser.utils import snake_to_camel_case

from sfn_idempotency.local.compat.answers import epoch_ms
from sfn_idempotency.local.compat.patching import Patch, keep

_SFN_TASK_MODULE = (
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn"
)


def _operation_shapes(task: Any, action: str | None) -> Any:
    operation = snake_to_camel_case(action or task._get_boto_service_action())
    return _stepfunctions_model().operation_model(operation)


@functools.cache
def _stepfunctions_model() -> Any:
    return botocore.session.get_session().get_service_model("stepfunctions")


def _pascal_case_request(original: Callable[..., None]) -> Callable[..., None]:
    def normalise_parameters(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        original(self, parameters, boto_service_name, service_action_name)
        self._to_boto_request(parameters, _operation_shapes(self, service_action_name).input_shape)

    return normalise_parameters


def _pascal_case_response(original: Callable[..., None]) -> Callable[..., None]:
    def normalise_response(
        self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None
    ) -> None:
        original(self, response, boto_service_name, service_action_name)
        self._from_boto_response(response, _operation_shapes(self, service_action_name).output_shape)
        if isinstance(response, dict):
            # Step Functions renders the API's timestamps as epoch milliseconds in task results.
            for key, value in response.items():
                if isinstance(value, datetime.datetime):
                    response[key] = epoch_ms(value)

    return normalise_response


PATCHES: tuple[Patch, ...] = (
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_normalise_parameters", _pascal_case_request),
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_normalise_response", _pascal_case_response),
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_to_boto_request", keep),
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_from_boto_response", keep),
)
