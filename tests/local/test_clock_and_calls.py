"""What the explorer stands on, as a test uses it too: a Task's TimeoutSeconds on the engine's clock
(opt-in), function faults and wrappers on every function the engine runs, and which execution made
each call."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from typing import Any

import pytest

from sfn_idempotency.flow.resources import COMPUTE_KEY_HANDLER, LAMBDAS_DIR
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.controls.call_origins import calling_execution
from sfn_idempotency.local.controls.faults import FunctionFailure

GATE_SECONDS = 20


def _task_machine(cloud: LocalCloud, function_arn: str, timeout_seconds: int = 600) -> str:
    definition = {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": function_arn, "Payload.$": "$"},
                "TimeoutSeconds": timeout_seconds,
                "OutputPath": "$.Payload",
                "End": True,
            }
        },
    }
    return cloud.create_state_machine("calls", json.dumps(definition), {})


@pytest.mark.parametrize("on_the_clock", [True, False])
def test_moving_the_clock_past_a_running_tasks_timeout_times_it_out_when_asked(on_the_clock: bool):
    with LocalCloud(task_timeouts_on_clock=on_the_clock) as cloud:
        # Given a Task with a 600 s timeout whose call is still running
        entered, release = threading.Event(), threading.Event()

        def slow(event: Any, context: Any) -> Any:
            entered.set()
            release.wait(GATE_SECONDS)
            return {"done": True}

        function = cloud.add_function("slow", slow, timeout_seconds=900)
        execution = cloud.start_execution(_task_machine(cloud, function.arn), {})
        assert entered.wait(GATE_SECONDS)

        # When the clock moves past the timeout
        cloud.clock.advance(601)

        # Then, on the clock, the Task times out now; off it, the Task waits for its call
        if on_the_clock:
            result = cloud.wait(execution, timeout=GATE_SECONDS)
            assert (result.status, result.error) == ("FAILED", "States.Timeout")
            release.set()
        else:
            assert cloud.status_of(execution) == "RUNNING"
            release.set()
            assert cloud.wait(execution, timeout=GATE_SECONDS).output == {"done": True}


def _python_zip(source: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", source)
    return buffer.getvalue()


def _key_lambda_asset() -> bytes:
    """The key Lambda's package as an app's asset carries it (a cdk.out zip, a SAM CodeUri)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for source in sorted((LAMBDAS_DIR / "compute_key").glob("*.py")):
            archive.write(source, f"compute_key/{source.name}")
    return buffer.getvalue()


def test_an_apps_own_copy_of_the_key_lambda_reads_the_engine_s_clock(local_cloud: LocalCloud):
    # Given the key Lambda deployed from an app's own asset, and the engine's clock moved an hour on
    # (as the explorer moves it past a lease)
    role = local_cloud.client("iam").create_role(RoleName="keys", AssumeRolePolicyDocument="{}")
    local_cloud.client("lambda").create_function(
        FunctionName="keys",
        Runtime="python3.13",
        Role=role["Role"]["Arn"],
        Handler=COMPUTE_KEY_HANDLER,
        Code={"ZipFile": _key_lambda_asset()},
        Environment={
            "Variables": {"IDEMPOTENCY_KEY_PREFIX": "orders", "IDEMPOTENCY_EVENT_KEY_JMESPATH": "orderId"}
        },
    )
    local_cloud.clock.advance(3600)

    # When it computes a key
    answer = local_cloud.client("lambda").invoke(
        FunctionName="keys", Payload=json.dumps({"event": {"orderId": "o-1"}})
    )

    # Then its clock values are the engine's, as a Claim's $$.State.EnteredTime is: two clocks would
    # judge one lease twice (a provable Claim took over this copy's claim while its step still ran)
    now_ms = json.loads(answer["Payload"].read())["idempotency"]["nowMs"]
    assert abs(now_ms - local_cloud.clock.now_ms()) < 60_000


def test_function_faults_and_wrappers_reach_functions_deployed_through_the_lambda_api(
    local_cloud: LocalCloud,
):
    # Given a function created through the Lambda API (as a CDK app or a SAM template creates it)
    role = local_cloud.client("iam").create_role(RoleName="deployed", AssumeRolePolicyDocument="{}")
    created = local_cloud.client("lambda").create_function(
        FunctionName="deployed",
        Runtime="python3.12",
        Role=role["Role"]["Arn"],
        Handler="app.handler",
        Code={"ZipFile": _python_zip("def handler(event, context):\n    return {'ran': True}\n")},
    )
    machine = _task_machine(local_cloud, created["FunctionArn"])
    seen: list[tuple[str, str]] = []

    def wrapper(function: str, event: Any, run: Any) -> FunctionFailure | None:
        seen.append((function, calling_execution()))
        return None

    local_cloud.faults.wrap_functions(wrapper)
    local_cloud.faults.function_error("deployed", "Declined", "no funds", calls=1)

    # When it is called twice
    first = local_cloud.run(machine, {})
    second = local_cloud.run(machine, {})

    # Then the planned fault failed the first call, and the wrapper saw the second with its execution
    assert (first.status, first.error) == ("FAILED", "Declined")
    assert (second.status, second.output) == ("SUCCEEDED", {"ran": True})
    assert seen == [("deployed", second.arn)]


def test_a_wrapper_may_answer_a_failure_after_the_code_ran(local_cloud: LocalCloud):
    # Given a wrapper that fails every call after running its code (a time-out after its effect)
    calls: list[Any] = []

    def effect(event: Any, context: Any) -> Any:
        calls.append(event)
        return {}

    function = local_cloud.add_function("effect", effect, timeout_seconds=30)
    unwrap = local_cloud.faults.wrap_functions(
        lambda name, event, run: (
            FunctionFailure("Sandbox.Timedout", "after its effect") if not run() else None
        )
    )

    # When the function is called, Then its code ran once and the Task saw the wrapper's failure
    result = local_cloud.run(_task_machine(local_cloud, function.arn), {"n": 1})
    assert (result.status, result.error) == ("FAILED", "Sandbox.Timedout")
    assert calls == [{"n": 1}]

    # And unwrapped, the call answers for itself
    unwrap()
    assert local_cloud.run(_task_machine(local_cloud, function.arn), {"n": 2}).status == "SUCCEEDED"


def test_a_running_and_an_ended_execution_s_progress_is_read_without_copying_its_history(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    from sfn_idempotency.local.engine import results

    # Given one execution waiting in its second state and one that ended (its history packed)
    steps = {
        "StartAt": "First",
        "States": {
            "First": {"Type": "Pass", "Next": "Hold"},
            "Hold": {"Type": "Wait", "Seconds": 600, "Next": "Last"},
            "Last": {"Type": "Pass", "End": True},
        },
    }
    machine = local_cloud.create_state_machine("progress", json.dumps(steps), {})
    held = local_cloud.start_execution(machine, {})
    local_cloud.wait_until(lambda: "Hold" in local_cloud.states_so_far(held), what="the Wait state")
    ended = local_cloud.run(
        local_cloud.create_state_machine("ended", json.dumps({**steps, "StartAt": "Last"}), {}), {}
    ).arn
    # When their progress is read, with the history's copies counted
    copies: list[Any] = []
    answered = results._as_answered

    def counted(value: Any) -> Any:
        copies.append(value)
        return answered(value)

    monkeypatch.setattr(results, "_as_answered", counted)
    progress = {
        arn: (local_cloud.states_so_far(arn), local_cloud.history_length(arn)) for arn in (held, ended)
    }
    outcomes = [local_cloud.snapshot(arn, with_history=False) for arn in (held, ended)]
    # Then each is what its history says, and no event was copied to say it
    assert progress == {
        held: (["First", "Hold"], 4),  # started, First entered and exited, Hold entered
        ended: (["Last"], 4),  # started, Last entered and exited, succeeded
    }
    assert [(o.status, o.output, o.history) for o in outcomes] == [
        ("RUNNING", None, ()),
        ("SUCCEEDED", {}, ()),
    ]
    assert copies == []
