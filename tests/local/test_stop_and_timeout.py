"""Fix 68: StopExecution and an execution's TimeoutSeconds end it at once, as on AWS: the status,
the history's last event and the status-change event come at that moment, while the running Task
(a Lambda goes on) is still running; its late answer is dropped."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.compat.execution_ends import DROPPED
from tests.local.conftest import GATE_TIMEOUT_SECONDS
from tests.local.test_engine_compat import deploy, invoke_state, status_events

TERMINAL = {"ExecutionAborted", "ExecutionTimedOut", "ExecutionSucceeded", "ExecutionFailed"}


class Hanging:
    """A function whose call waits until the test lets it go; it says when it returned."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.returned = threading.Event()
        self._release = threading.Event()

    def __call__(self, event: Any, context: Any) -> Any:
        self.entered.set()
        try:
            if not self._release.wait(GATE_TIMEOUT_SECONDS):
                raise TimeoutError("never released")
            return {"late": True}
        finally:
            self.returned.set()

    def release(self) -> None:
        self._release.set()


@pytest.fixture
def hanging(local_cloud: LocalCloud) -> Any:
    function = Hanging()
    local_cloud.add_function("hanging", function)
    yield function
    function.release()


def event_types(cloud: LocalCloud, arn: str) -> list[str]:
    events = cloud.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    return [str(e["type"]) for e in events]


@pytest.fixture
def running(
    local_cloud: LocalCloud, hanging: Hanging, tmp_path: Path
) -> tuple[str, Callable[[int], list[dict[str, Any]]]]:
    """An execution whose one Task (the hanging function) runs; the reader of its status changes."""
    read = status_events(local_cloud)
    machine = deploy(local_cloud, tmp_path, {"Work": invoke_state({"End": True})}, "Work", Fn="hanging")
    arn = local_cloud.start_execution(machine, {})
    assert hanging.entered.wait(GATE_TIMEOUT_SECONDS)
    return arn, read


def test_a_stopped_execution_is_aborted_at_once_and_its_task_s_late_answer_is_dropped(
    local_cloud: LocalCloud, hanging: Hanging, running: tuple[str, Callable[[int], list[dict[str, Any]]]]
):
    arn, read = running

    # When it is stopped while its Lambda still runs
    local_cloud.sfn.stop_execution(executionArn=arn, error="Operator", cause="stopped by hand")

    # Then it is ABORTED now, its history ends now, and its status change went out now
    described = local_cloud.sfn.describe_execution(executionArn=arn)
    assert described["status"] == "ABORTED"
    assert not hanging.returned.is_set()
    history = event_types(local_cloud, arn)
    assert history[-1] == "ExecutionAborted"
    assert [event["status"] for event in read(2)] == ["RUNNING", "ABORTED"]
    aborted = local_cloud.sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=1)
    assert aborted["events"][0]["executionAbortedEventDetails"] == {
        "error": "Operator",
        "cause": "stopped by hand",
    }

    # And when the Lambda answers later, nothing of its answer reaches the history or the status
    hanging.release()
    assert hanging.returned.wait(GATE_TIMEOUT_SECONDS)
    local_cloud.wait_until(lambda: late_events_dropped(local_cloud, arn) > 0, what="the late answer")
    assert event_types(local_cloud, arn) == history
    assert local_cloud.sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"
    assert [event["status"] for event in read(2)] == ["RUNNING", "ABORTED"]


def late_events_dropped(cloud: LocalCloud, arn: str) -> int:
    """How many events the ended run still tried to write (the Task's answer among them)."""
    execution = cloud._execution(arn)
    return int(getattr(execution.exec_worker.env.event_manager, DROPPED, 0))


def test_an_execution_past_its_timeout_times_out_at_once(
    local_cloud: LocalCloud, hanging: Hanging, tmp_path: Path
):
    # Given a machine of one-second TimeoutSeconds whose Task does not answer within it
    asl = tmp_path / "slow.asl.json"
    asl.write_text(
        json.dumps({"TimeoutSeconds": 1, "StartAt": "Work", "States": {"Work": invoke_state({"End": True})}})
    )
    machine = local_cloud.create_state_machine("slow", asl, {"Fn": "hanging"})
    # When it runs past it
    result = local_cloud.run(machine, {})
    # Then it TIMED_OUT while the Lambda still ran, and its history ends there
    assert result.status == "TIMED_OUT"
    assert not hanging.returned.is_set()
    history = event_types(local_cloud, result.arn)
    assert history[-1] == "ExecutionTimedOut"
    assert [t for t in history if t in TERMINAL] == ["ExecutionTimedOut"]
    # And the late answer changes nothing
    hanging.release()
    assert hanging.returned.wait(GATE_TIMEOUT_SECONDS)
    local_cloud.wait_until(lambda: late_events_dropped(local_cloud, result.arn) > 0, what="the late answer")
    assert event_types(local_cloud, result.arn) == history


# -- the engine's own controls: a pause before a state, and a time-out without waiting ---------------
def test_an_execution_paused_before_a_state_and_stopped_there_never_runs_it(
    local_cloud: LocalCloud, hanging: Hanging, tmp_path: Path
):
    # Given a machine Before → Work, held as it enters Work
    states = {
        "Before": {"Type": "Pass", "Next": "Work"},
        "Work": invoke_state({"End": True}),
    }
    machine = deploy(local_cloud, tmp_path, states, "Before", Fn="hanging")
    pause = local_cloud.faults.pause_before("Work", state_machine_arn=machine)
    arn = local_cloud.start_execution(machine, {})
    assert pause.entered.wait(GATE_TIMEOUT_SECONDS)
    assert pause.execution_arn == arn

    # When it is stopped there, and the pause is let go
    local_cloud.sfn.stop_execution(executionArn=arn)
    pause.release()

    # Then Work never started, and a redrive resumes at it (the state entered last)
    assert local_cloud.wait(arn).status == "ABORTED"
    assert not hanging.entered.is_set()
    assert "TaskStateEntered" not in event_types(local_cloud, arn)
    hanging.release()
    local_cloud.sfn.redrive_execution(executionArn=arn)
    result = local_cloud.wait(arn)
    assert result.status == "SUCCEEDED"
    assert result.states[-1:] == ["Work"]
    assert hanging.entered.is_set()


def test_time_out_ends_a_running_execution_as_its_timeout_would(
    local_cloud: LocalCloud, hanging: Hanging, running: tuple[str, Callable[[int], list[dict[str, Any]]]]
):
    arn, read = running
    # When the test times it out (no waiting for TimeoutSeconds)
    local_cloud.time_out(arn)
    # Then it is TIMED_OUT now, its history ends, its status change is sent, and it is redrivable
    described = local_cloud.sfn.describe_execution(executionArn=arn)
    assert (described["status"], described["redriveStatus"]) == ("TIMED_OUT", "REDRIVABLE")
    assert event_types(local_cloud, arn)[-1] == "ExecutionTimedOut"
    assert [event["status"] for event in read(2)] == ["RUNNING", "TIMED_OUT"]
    hanging.release()


def test_a_pause_holds_the_entry_it_names(local_cloud: LocalCloud, tmp_path: Path):
    # Given a pause for the second entry of a Pass state of one machine
    machine = deploy(local_cloud, tmp_path, {"Done": {"Type": "Pass", "End": True}}, "Done")
    pause = local_cloud.faults.pause_before("Done", state_machine_arn=machine, calls=2)
    # When the machine runs twice, then the first goes through and the second is held there
    assert local_cloud.run(machine, {}).status == "SUCCEEDED"
    second = local_cloud.start_execution(machine, {})
    assert pause.entered.wait(GATE_TIMEOUT_SECONDS)
    assert pause.execution_arn == second
    assert local_cloud.sfn.describe_execution(executionArn=second)["status"] == "RUNNING"
    # And let go, it runs the state
    pause.release()
    assert local_cloud.wait(second).status == "SUCCEEDED"
