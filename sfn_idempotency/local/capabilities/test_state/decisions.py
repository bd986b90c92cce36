"""What moto's interpreter does differently in a TestState run (fix 29): a matching Retrier or
Catcher is reported, not followed; a mock may fail with a ``States.`` error; a JSONata state's
Arguments are a stage of its data flow; and the patches that put it in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

from sfn_idempotency.local.capabilities.test_state.request import Request
from sfn_idempotency.local.capabilities.test_state.run import frames_keep_the_given_context, run_request
from sfn_idempotency.local.compat.patching import Patch, add, keep

_RESPONSE_CLASS = "moto.stepfunctions.responses:StepFunctionResponse"
_EXECUTE_STATE = "moto.stepfunctions.parser.asl.component.state.exec.execute_state:ExecutionState"


def _retry_decisions(original: Callable[..., Any]) -> Callable[..., Any]:
    """In a TestState run the state is not retried: a Retrier that matches with attempts left makes
    the answer RETRIABLE, with that Retrier's index and the backoff it would wait; one that matches
    with none left is named in the answer too (recorded), and the state fails or is caught."""

    def handle_retry(self: Any, env: Any, failure_event: Any) -> Any:
        decisions = getattr(env, "sfn_local_test_state", None)
        if decisions is None:
            return original(self, env, failure_event)
        from moto.stepfunctions.parser.asl.component.common.retry.retry_outcome import RetryOutcome

        index = _first_matching(self.retry.retriers, env, failure_event)
        if index is not None:
            retrier = self.retry.retriers[index]
            decisions.matched_retry_index = index
            if decisions.retry_count < retrier.max_attempts.attempts:
                backoff = retrier.interval_seconds.seconds * retrier.backoff_rate.rate**decisions.retry_count
                decisions.retry_index = index
                decisions.retry_backoff_seconds = int(
                    min(backoff, retrier.max_delay_seconds.max_delays_seconds)
                )
                decisions.error, decisions.cause = _error_and_cause(self, failure_event)
        return RetryOutcome.CannotRetry

    return handle_retry


def _error_and_cause(state: Any, failure_event: Any) -> tuple[str | None, str | None]:
    error_output = state._construct_error_output_value(failure_event=failure_event)
    return error_output.get("Error"), error_output.get("Cause")


def _catch_decisions(original: Callable[..., Any]) -> Callable[..., Any]:
    """In a TestState run, remember which Catch matched (its index and Next): AWS answers them.
    A RETRIABLE state is not caught: the Retrier's decision comes first."""
    from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome

    def handle_catch(self: Any, env: Any, failure_event: Any) -> Any:
        # In a Catch, $states is input, context and errorOutput: no result (recorded; moto had put
        # the error output there as the result too).
        env.states._states_data.pop("result", None)
        decisions = getattr(env, "sfn_local_test_state", None)
        if decisions is not None and decisions.retry_index is not None:
            env.stack.append(CatchOutcome.NotCaught)
            return None
        result = original(self, env, failure_event)
        if decisions is not None and env.stack and env.stack[-1] == CatchOutcome.Caught:
            index = _first_matching(self.catch.catchers, env, failure_event)
            if index is not None:
                decisions.catch_index = index
                decisions.catch_next = self.catch.catchers[index].next_decl.name
                decisions.error, decisions.cause = _error_and_cause(self, failure_event)
        return result

    return handle_catch


def _first_matching(handlers: list[Any], env: Any, failure_event: Any) -> int | None:
    """The first Retrier or Catcher whose ErrorEquals matches the failure, asked of moto's matcher."""
    for index, handler in enumerate(handlers):
        env.stack.append(failure_event.error_name)
        handler.error_equals.eval(env)
        if env.stack.pop():
            return index
    return None


def _failure_events_pass_through(
    original: Callable[[Any, Any, Exception], Any],
) -> Callable[[Any, Any, Exception], Any]:
    """A service integration's failure event stays what it is: moto's DynamoDB integration (and
    others) renamed any exception it did not expect, a mocked failure included, to its catch-all
    (DynamoDB.AmazonDynamoDBException), so a mocked error never reached the state's Catch by name."""
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, FailureEventException):
            return ex.failure_event
        return original(self, env, ex)

    return from_error


def _test_state(self: Any) -> Any:
    """The TestState operation of the Step Functions API."""
    from moto.core.responses import ActionResult

    request = Request.of(self._get_param)
    return ActionResult(run_request(request, self.current_account, self.region))


def _arguments_recorded(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A JSONata state's Arguments are a stage of its data flow too (``afterArguments``); moto's
    TestState parser recorded JSONPath's Parameters only."""

    def visit(self: Any, ctx: Any) -> Any:
        arguments = original(self, ctx)
        evaluate = arguments._eval_body

        def eval_body(env: Any) -> None:
            evaluate(env)
            if hasattr(env, "inspection_data"):
                env.inspection_data["afterArguments"] = to_json_str(env.stack[-1])

        arguments._eval_body = eval_body
        return arguments

    return visit


def _mocked_states_errors(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """A mock may fail with a Step Functions error (``States.TaskFailed``, recorded); moto built every
    mocked error as a custom name, which refuses the ``States.`` prefix."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    def eval_mocked_response_throw(env: Any, mocked_response: Any) -> None:
        if not str(mocked_response.error).startswith("States."):
            original(env, mocked_response)
            return
        details = TaskFailedEventDetails(error=mocked_response.error, cause=mocked_response.cause)
        raise FailureEventException(
            failure_event=FailureEvent(
                env=env,
                error_name=StatesErrorName.from_name(mocked_response.error),
                event_type=HistoryEventType.TaskFailed,
                event_details=EventDetails(taskFailedEventDetails=details),
            )
        )

    return eval_mocked_response_throw


def install_test_state() -> None:
    add(_RESPONSE_CLASS, "test_state", _test_state)


_SERVICES = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
_SERVICES_RENAMING_FAILURES = (
    "state_task_service_dynamodb:StateTaskServiceDynamoDB",
    "state_task_service_aws_sdk:StateTaskServiceAwsSdk",
    "state_task_service_lambda:StateTaskServiceLambda",
    "state_task_service_sfn:StateTaskServiceSfn",
    "state_task_service_sqs:StateTaskServiceSqs",
    "state_task_service_sns:StateTaskServiceSns",
    "state_task_service_events:StateTaskServiceEvents",
    "state_task_service_api_gateway:StateTaskServiceApiGateway",
)

_TEST_STATE_PREPROCESSOR = "moto.stepfunctions.parser.asl.parse.test_state.preprocessor:TestStatePreprocessor"

PATCHES: tuple[Patch, ...] = (
    Patch(
        29,
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.mock_eval_utils",
        "_eval_mocked_response_throw",
        _mocked_states_errors,
    ),
    Patch(29, _TEST_STATE_PREPROCESSOR, "visitArguments_string_jsonata", _arguments_recorded),
    Patch(29, _TEST_STATE_PREPROCESSOR, "visitArguments_jsonata_template_value_object", _arguments_recorded),
    Patch(
        29,
        "moto.stepfunctions.parser.asl.eval.environment:Environment",
        "as_inner_frame_of",
        frames_keep_the_given_context,
    ),
    Patch(29, _EXECUTE_STATE, "_handle_retry", _retry_decisions),
    Patch(29, _EXECUTE_STATE, "_handle_catch", _catch_decisions),
    *(
        Patch(29, f"{_SERVICES}.{service}", "_from_error", _failure_events_pass_through)
        for service in _SERVICES_RENAMING_FAILURES
    ),
    Patch(
        29,
        "moto.stepfunctions.parser.backend.test_state.execution:TestStateExecution",
        "to_test_state_output",
        keep,
    ),
)
