"""Activities (issue 28): a worker polls GetActivityTask for what an activity state scheduled and
answers with SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat; heartbeats and timeouts end
the state as AWS documents and was recorded (fixes 34 to 37)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.capabilities import activities
from sfn_idempotency.local.capabilities.activities import ActivityWorker

ROLE = "arn:aws:iam::123456789012:role/activities"
SHORT_POLL_SECONDS = 0.2
WORK_DEADLINE_SECONDS = 10
RACE_POLL_SECONDS = 4.0


class CardDeclined(Exception):
    pass


def activity_machine(cloud: LocalCloud, activity_arn: str, **task: Any) -> str:
    states = {
        "Pack": {
            "Type": "Task",
            "Resource": activity_arn,
            "Catch": [{"ErrorEquals": ["CardDeclined"], "ResultPath": "$.error", "Next": "Declined"}],
            "End": True,
            **task,
        },
        "Declined": {"Type": "Pass", "End": True},
    }
    definition = json.dumps({"StartAt": "Pack", "States": states})
    name = f"packing-{len(cloud.sfn.list_state_machines()['stateMachines'])}"
    return str(
        cloud.sfn.create_state_machine(name=name, definition=definition, roleArn=ROLE)["stateMachineArn"]
    )


@pytest.fixture
def short_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(activities, "LONG_POLL_SECONDS", SHORT_POLL_SECONDS)


def test_the_activity_api_answers_as_aws_does(local_cloud: LocalCloud):
    sfn = local_cloud.sfn
    # When the same name is created twice, the second answers the first (fix 35)
    first = sfn.create_activity(name="pack-orders")
    again = sfn.create_activity(name="pack-orders")
    assert again["activityArn"] == first["activityArn"]
    assert again["creationDate"] == first["creationDate"]

    # Then it is described and listed once, and deleted
    described = sfn.describe_activity(activityArn=first["activityArn"])
    assert described["name"] == "pack-orders"
    assert described["encryptionConfiguration"] == {"type": "AWS_OWNED_KEY"}  # moto: null
    assert [a["name"] for a in sfn.list_activities()["activities"]] == ["pack-orders"]
    sfn.delete_activity(activityArn=first["activityArn"])
    assert sfn.list_activities()["activities"] == []
    with pytest.raises(ClientError) as gone:
        sfn.get_activity_task(activityArn=first["activityArn"])
    assert gone.value.response["Error"]["Code"] == "ActivityDoesNotExist"
    with pytest.raises(ClientError) as described_gone:
        sfn.describe_activity(activityArn=first["activityArn"])
    assert (
        described_gone.value.response["Error"]["Message"]
        == f"Activity Does Not Exist: '{first['activityArn']}'"
    )


@pytest.mark.parametrize("operation", ["describe_activity", "get_activity_task", "delete_activity"])
def test_an_activity_arn_that_is_not_an_arn_is_refused_by_its_prefix(local_cloud: LocalCloud, operation: str):
    # When an activity operation is given a name where its ARN goes
    with pytest.raises(ClientError) as refused:
        getattr(local_cloud.sfn, operation)(activityArn="pack-orders")

    # Then it is refused as AWS refuses it (moto: "Invalid Activity Arn")
    assert refused.value.response["Error"]["Code"] == "InvalidArn"
    assert refused.value.response["Error"]["Message"] == "Invalid Arn: 'Invalid ARN prefix: pack-orders'"


def test_a_poll_with_nothing_to_do_answers_without_a_token(local_cloud: LocalCloud, short_polls: None):
    arn = local_cloud.sfn.create_activity(name="idle")["activityArn"]
    answer = local_cloud.sfn.get_activity_task(activityArn=arn, workerName="w-1")
    assert "taskToken" not in answer


def test_a_worker_takes_the_task_and_its_answer_is_the_output(local_cloud: LocalCloud, short_polls: None):
    # Given an activity state and a worker for it
    arn = local_cloud.sfn.create_activity(name="pack")["activityArn"]
    machine = activity_machine(local_cloud, arn, TimeoutSeconds=30)
    with ActivityWorker(
        local_cloud.sfn, arn, lambda order: {"packed": order["orderId"]}, worker_name="packer"
    ) as worker:
        # When an order runs through it
        result = local_cloud.run(machine, {"orderId": "o-1"})

    # Then the worker's answer is the output, and the history says who took it
    assert (result.status, result.output) == ("SUCCEEDED", {"packed": "o-1"})
    assert worker.tasks == 1
    events = {event["type"]: event for event in result.history}
    assert events["ActivityScheduled"]["activityScheduledEventDetails"]["resource"] == arn
    assert json.loads(events["ActivityScheduled"]["activityScheduledEventDetails"]["input"]) == {
        "orderId": "o-1"
    }
    assert events["ActivityStarted"]["activityStartedEventDetails"] == {"workerName": "packer"}
    assert [e["type"] for e in result.history if e["type"].startswith("Activity")] == [
        "ActivityScheduled",
        "ActivityStarted",
        "ActivitySucceeded",
    ]


def test_a_worker_that_raises_fails_the_task_with_the_error_a_catch_names(
    local_cloud: LocalCloud, short_polls: None
):
    arn = local_cloud.sfn.create_activity(name="charge")["activityArn"]
    machine = activity_machine(local_cloud, arn)

    def decline(order: Any) -> Any:
        raise CardDeclined(f"card of {order['orderId']} declined")

    with ActivityWorker(local_cloud.sfn, arn, decline):
        result = local_cloud.run(machine, {"orderId": "o-2"})

    assert result.status == "SUCCEEDED"
    assert result.states == ["Pack", "Declined"]
    assert result.output["error"] == {"Error": "CardDeclined", "Cause": "card of o-2 declined"}


def test_missed_heartbeats_end_in_states_heartbeat_timeout(local_cloud: LocalCloud, short_polls: None):
    # Given a worker slower than the heartbeat, which sends none
    arn = local_cloud.sfn.create_activity(name="slow")["activityArn"]
    machine = activity_machine(local_cloud, arn, HeartbeatSeconds=1, TimeoutSeconds=30)
    release = threading.Event()

    def slow(order: Any) -> Any:
        release.wait(WORK_DEADLINE_SECONDS)
        return order

    with ActivityWorker(local_cloud.sfn, arn, slow):
        result = local_cloud.run(machine, {"orderId": "o-3"})
        release.set()

    # Then the state failed on the heartbeat, not on its timeout (fix 34)
    assert (result.status, result.error) == ("FAILED", "States.HeartbeatTimeout")
    timed_out = next(e for e in result.history if e["type"] == "ActivityTimedOut")
    assert timed_out["activityTimedOutEventDetails"]["error"] == "States.HeartbeatTimeout"


def test_heartbeats_keep_a_slow_task_alive(local_cloud: LocalCloud, short_polls: None):
    arn = local_cloud.sfn.create_activity(name="beating")["activityArn"]
    machine = activity_machine(local_cloud, arn, HeartbeatSeconds=1, TimeoutSeconds=30)

    def slow(order: Any) -> Any:
        threading.Event().wait(2.5)  # longer than two heartbeat periods
        return {"done": order["orderId"]}

    with ActivityWorker(local_cloud.sfn, arn, slow, heartbeat_seconds=0.3):
        result = local_cloud.run(machine, {"orderId": "o-4"})
    assert (result.status, result.output) == ("SUCCEEDED", {"done": "o-4"})


def test_a_task_no_worker_takes_times_out(local_cloud: LocalCloud):
    arn = local_cloud.sfn.create_activity(name="unattended")["activityArn"]
    result = local_cloud.run(activity_machine(local_cloud, arn, TimeoutSeconds=1), {"orderId": "o-5"})
    assert (result.status, result.error) == ("FAILED", "States.Timeout"), result.cause
    assert [e["type"] for e in result.history if e["type"].startswith("Activity")] == [
        "ActivityScheduled",
        "ActivityTimedOut",
    ]


def test_a_callback_whose_heartbeat_lapses_ends_in_states_timeout_as_recorded(local_cloud: LocalCloud):
    # Given a Task that sends its token to a queue and waits, with a heartbeat nobody sends
    queue_url = local_cloud.client("sqs").create_queue(QueueName="approvals")["QueueUrl"]
    states = {
        "Approve": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl": queue_url, "MessageBody": {"token.$": "$$.Task.Token"}},
            "HeartbeatSeconds": 1,
            "TimeoutSeconds": 30,
            "End": True,
        }
    }
    definition = json.dumps({"StartAt": "Approve", "States": states})
    machine = local_cloud.sfn.create_state_machine(name="approval", definition=definition, roleArn=ROLE)

    result = local_cloud.run(machine["stateMachineArn"], {})

    # Then, as AWS was recorded (timeouts/test_heartbeats), not as its docs say: States.Timeout
    assert (result.status, result.error) == ("FAILED", "States.Timeout")
    timed_out = next(e for e in result.history if e["type"] == "TaskTimedOut")
    assert timed_out["taskTimedOutEventDetails"]["error"] == "States.Timeout"
    assert timed_out["taskTimedOutEventDetails"]["resourceType"] == "sqs"


def test_an_activity_deleted_before_its_state_runs_fails_the_execution(local_cloud: LocalCloud):
    arn = local_cloud.sfn.create_activity(name="retired")["activityArn"]
    machine = activity_machine(local_cloud, arn, TimeoutSeconds=5)
    local_cloud.sfn.delete_activity(activityArn=arn)

    result = local_cloud.run(machine, {"orderId": "o-6"})

    assert (result.status, result.error) == ("FAILED", "States.Runtime")
    assert "The activity activity_arn does not exist." in (result.cause or "")  # moto's words, as recorded


def test_closing_a_worker_whose_poll_starts_after_the_wake_takes_no_long_poll(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a worker whose poll reaches the queue only after close() has woken it once: it passed
    # its stop check before close() began (the race that held a docs example for a minute)
    monkeypatch.setattr(activities, "LONG_POLL_SECONDS", RACE_POLL_SECONDS)
    woken = threading.Event()
    wake = activities.TaskQueue.wake

    def recorded_wake(self: activities.TaskQueue) -> None:
        wake(self)
        woken.set()

    monkeypatch.setattr(activities.TaskQueue, "wake", recorded_wake)
    polled = threading.Event()

    class LatePoller:
        def get_activity_task(self, **request: Any) -> Any:
            polled.set()
            woken.wait(WORK_DEADLINE_SECONDS)
            return local_cloud.sfn.get_activity_task(**request)

    arn = local_cloud.sfn.create_activity(name="late")["activityArn"]
    with ActivityWorker(LatePoller(), arn, lambda order: order, worker_name="late-poller"):
        assert polled.wait(WORK_DEADLINE_SECONDS)
        # When the block ends and closes it
        started = time.monotonic()

    # Then its poll was woken again and its thread left, well before the long poll would end
    assert time.monotonic() - started < RACE_POLL_SECONDS / 2
    assert "activity-late-poller" not in {thread.name for thread in threading.enumerate()}
