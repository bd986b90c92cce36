"""Issue 42: the engine stays flat as work grows. Executions are found and listed through an index
(fix 82), a finished history and run are packed (fixes 83, 109), ended threads are let go (fix 84),
and a retention limit forgets the oldest ended executions. What each keeps is checked here; `make
bench` measures."""

from __future__ import annotations

import datetime
import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.capabilities import redrive
from sfn_idempotency.local.compat import execution_lookups
from sfn_idempotency.local.compat.execution_ends import EndedRun, PackedHistory
from sfn_idempotency.local.engine.cloud import EngineError

ROLE = "arn:aws:iam::123456789012:role/flat"
# An order fails when its "fail" is true: two statuses to filter on.
CHOICE_MACHINE = json.dumps(
    {
        "StartAt": "Decide",
        "States": {
            "Decide": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.fail", "BooleanEquals": True, "Next": "Refuse"}],
                "Default": "Done",
            },
            "Refuse": {"Type": "Fail", "Error": "Refused", "Cause": "asked to"},
            "Done": {"Type": "Pass", "End": True},
        },
    }
)
LIST_ACTIVITIES = "arn:aws:states:::aws-sdk:sfn:listActivities"
WAITING_MACHINE = json.dumps(
    {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}
)


def create(cloud: LocalCloud, name: str, definition: str = CHOICE_MACHINE) -> str:
    return str(
        cloud.sfn.create_state_machine(name=name, definition=definition, roleArn=ROLE)["stateMachineArn"]
    )


def run_orders(cloud: LocalCloud, machine: str, count: int) -> list[str]:
    """``count`` executions, every third one failing; their ARNs in the order they started."""
    return [cloud.run(machine, {"fail": i % 3 == 0}, name=f"order-{i:04d}").arn for i in range(count)]


def pages(cloud: LocalCloud, **request: Any) -> Iterator[dict[str, Any]]:
    answer = cloud.sfn.list_executions(**request)
    yield answer
    while "nextToken" in answer:
        answer = cloud.sfn.list_executions(**request, nextToken=answer["nextToken"])
        yield answer


def listed(cloud: LocalCloud, **request: Any) -> list[str]:
    return [item["executionArn"] for page in pages(cloud, **request) for item in page["executions"]]


def moto_backend() -> Any:
    """moto's Step Functions backend of the cloud's account and region, as the engine holds it."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    return stepfunctions_parser_backends["123456789012"]["us-east-1"]


def moto_machine(arn: str) -> Any:
    return moto_backend().describe_state_machine(arn)


def motos_own_listing(machine: str, status: str | None = None) -> list[str]:
    """What moto's own ListExecutions gives, for comparison: its sort of every execution."""
    from moto.stepfunctions.models import StepFunctionBackend

    backend = moto_backend()
    original = StepFunctionBackend._sfn_local_original_list_executions
    executions, token = original(backend, machine, status_filter=status, max_results=1000)
    assert token is None
    return [execution.execution_arn for execution in executions]


def test_pages_list_every_execution_newest_first_as_moto_sorted_them(local_cloud: LocalCloud):
    # Given a machine with 40 executions, a third of them failed
    machine = create(local_cloud, "pages")
    started = run_orders(local_cloud, machine, 40)
    # When they are listed in pages of 7, with and without a status filter
    every = listed(local_cloud, stateMachineArn=machine, maxResults=7)
    failed = listed(local_cloud, stateMachineArn=machine, maxResults=7, statusFilter="FAILED")
    # Then each is listed once, newest first, exactly as moto's own sort lists them
    assert every == list(reversed(started)) == motos_own_listing(machine)
    assert failed == [arn for i, arn in reversed(list(enumerate(started))) if i % 3 == 0]
    assert failed == motos_own_listing(machine, "FAILED")
    # And a page of the default size holds the 40
    assert len(local_cloud.sfn.list_executions(stateMachineArn=machine)["executions"]) == 40


def test_a_token_is_refused_as_moto_refused_it(local_cloud: LocalCloud):
    machine = create(local_cloud, "tokens")
    run_orders(local_cloud, machine, 5)
    token = local_cloud.sfn.list_executions(stateMachineArn=machine, maxResults=2)["nextToken"]
    # A token from another filter, and a token that is not one
    with pytest.raises(ClientError) as other_filter:
        local_cloud.sfn.list_executions(stateMachineArn=machine, statusFilter="FAILED", nextToken=token)
    with pytest.raises(ClientError) as not_a_token:
        local_cloud.sfn.list_executions(stateMachineArn=machine, nextToken="not-a-token")
    assert other_filter.value.response["Error"]["Code"] == "InvalidToken"
    assert "Input inconsistent with page token" in other_filter.value.response["Error"]["Message"]
    assert not_a_token.value.response["Error"]["Code"] == "InvalidToken"
    assert not_a_token.value.response["Error"]["Message"].endswith("Invalid token")


def test_executions_started_together_are_listed_as_moto_sorts_them(local_cloud: LocalCloud):
    # Given executions whose start times tie (concurrent starts can share a microsecond), and one
    # appended out of turn (a start that took its time before its execution was added)
    machine = create(local_cloud, "ties")
    started = run_orders(local_cloud, machine, 8)
    machine_object = moto_machine(machine)
    executions = machine_object.executions
    with execution_lookups.pruning(machine_object):  # as if they had been added with these starts
        for execution in executions[3:5]:
            execution.start_date = executions[2].start_date
        executions[6].start_date = executions[1].start_date - datetime.timedelta(microseconds=1)
    # When they are listed, page by page, Then in moto's stable order (ties in the order they were added)
    assert listed(local_cloud, stateMachineArn=machine, maxResults=3) == motos_own_listing(machine)
    assert listed(local_cloud, stateMachineArn=machine) == [started[i] for i in (7, 5, 2, 3, 4, 1, 6, 0)]
    assert len(set(started)) == 8


def test_an_execution_is_described_from_the_index_and_a_missing_one_is_refused(local_cloud: LocalCloud):
    machine = create(local_cloud, "describe")
    started = run_orders(local_cloud, machine, 12)
    # Every execution is described as itself, newest and oldest alike
    for arn in (started[0], started[6], started[-1]):
        assert local_cloud.sfn.describe_execution(executionArn=arn)["executionArn"] == arn
    # One never started, and one of a machine that does not exist, are refused as moto refused them
    for missing in (f"{started[0][:-4]}nope", started[0].replace(":describe:", ":elsewhere:")):
        with pytest.raises(ClientError) as refused:
            local_cloud.sfn.describe_execution(executionArn=missing)
        assert refused.value.response["Error"]["Code"] == "ExecutionDoesNotExist"


class WalkedList(list[Any]):
    """A machine's list of executions that counts the walks through it."""

    walks = 0

    def __iter__(self) -> Iterator[Any]:
        WalkedList.walks += 1
        return super().__iter__()


def test_a_named_start_finds_a_namesake_through_the_index_not_by_walking_every_execution(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a machine with twelve executions started by name, its list of executions watched
    machine_arn = create(local_cloud, "names")
    run_orders(local_cloud, machine_arn, 12)
    machine = moto_machine(machine_arn)
    monkeypatch.setattr(machine, "executions", WalkedList(machine.executions))
    monkeypatch.setattr(WalkedList, "walks", 0)

    # When a new name starts, Then the list is not walked (fix 120)
    local_cloud.run(machine_arn, {"fail": False}, name="order-new")
    assert WalkedList.walks == 0

    # And a name in use is still refused in moto's words, after moto's own walk
    with pytest.raises(ClientError) as taken:
        local_cloud.sfn.start_execution(stateMachineArn=machine_arn, name="order-0003", input="{}")
    assert taken.value.response["Error"]["Code"] == "ExecutionAlreadyExists"
    execution = machine_arn.replace(":stateMachine:", ":execution:") + ":order-0003"
    assert taken.value.response["Error"]["Message"] == f"Execution Already Exists: '{execution}'"
    assert WalkedList.walks == 1


def test_a_succeeded_history_is_packed_and_answers_the_same_events(local_cloud: LocalCloud):
    # Given one execution that succeeded and one that failed
    machine = create(local_cloud, "packed")
    succeeded, failed = (local_cloud.run(machine, {"fail": fail}) for fail in (False, True))
    backend = moto_backend()

    def kept(arn: str) -> Any:
        return backend.describe_execution(arn).exec_worker.env.event_manager._history_event_list

    # Then the succeeded one's history is packed, the failed one's (which a redrive extends) is not
    assert isinstance(kept(succeeded.arn), PackedHistory)
    assert isinstance(kept(failed.arn), list)
    # And only the failed one keeps the record a redrive resumes from
    frames = [redrive._frame(backend.describe_execution(r.arn).exec_worker.env) for r in (succeeded, failed)]
    assert frames[0] is None
    assert frames[1] is not None
    # And GetExecutionHistory answers every event of it, in order, forwards and in reverse
    events = local_cloud.sfn.get_execution_history(executionArn=succeeded.arn)["events"]
    assert [event["type"] for event in events] == [
        "ExecutionStarted",
        "ChoiceStateEntered",
        "ChoiceStateExited",
        "PassStateEntered",
        "PassStateExited",
        "ExecutionSucceeded",
    ]
    reverse = local_cloud.sfn.get_execution_history(executionArn=succeeded.arn, reverseOrder=True)["events"]
    assert reverse == list(reversed(events))
    assert [event["type"] for event in succeeded.history] == [event["type"] for event in events]


def test_a_succeeded_run_keeps_a_slim_record_that_answers_its_readers(local_cloud: LocalCloud):
    # Given a Distributed Map's execution that succeeded, and one of the choice machine that failed
    map_machine = create(
        local_cloud,
        "slim",
        json.dumps(
            {
                "StartAt": "Each",
                "States": {
                    "Each": {
                        "Type": "Map",
                        "ItemProcessor": {
                            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                            "StartAt": "Echo",
                            "States": {"Echo": {"Type": "Pass", "End": True}},
                        },
                        "End": True,
                    }
                },
            }
        ),
    )
    succeeded = local_cloud.run(map_machine, [1, 2])
    failed = local_cloud.run(create(local_cloud, "kept"), {"fail": True})
    backend = moto_backend()

    # Then the succeeded one keeps a slim record of its run (fix 109), the failed one (which a redrive
    # resumes) its whole run
    assert isinstance(backend.describe_execution(succeeded.arn).exec_worker, EndedRun)
    assert backend.describe_execution(failed.arn).exec_worker.env.states is not None
    # And every reader of the succeeded one answers from the record
    described = local_cloud.sfn.describe_execution(executionArn=succeeded.arn)
    assert (described["status"], json.loads(described["output"])) == ("SUCCEEDED", [1, 2])
    events = local_cloud.sfn.get_execution_history(executionArn=succeeded.arn)["events"]
    assert [event["type"] for event in events] == [event["type"] for event in succeeded.history]
    (map_run,) = local_cloud.sfn.list_map_runs(executionArn=succeeded.arn)["mapRuns"]
    run = local_cloud.sfn.describe_map_run(mapRunArn=map_run["mapRunArn"])
    assert (run["status"], run["itemCounts"]["succeeded"]) == ("SUCCEEDED", 2)
    stopped = local_cloud.sfn.stop_execution(executionArn=succeeded.arn)
    assert stopped["stopDate"] == described["stopDate"]
    assert local_cloud.sfn.describe_execution(executionArn=succeeded.arn)["status"] == "SUCCEEDED"


def test_ended_interpreter_threads_are_let_go(local_cloud: LocalCloud):
    from moto.stepfunctions.parser.backend import execution_worker

    machine = create(local_cloud, "threads")
    run_orders(local_cloud, machine, 300)
    # moto kept all 300 (and more: one per program); the list keeps the live ones, pruned as it doubles
    assert len(execution_worker.TMP_THREADS) < 2 * 64


TASKS_MACHINE = json.dumps(
    {
        "StartAt": "InPlace",
        "States": {
            "InPlace": {"Type": "Task", "Resource": LIST_ACTIVITIES, "ResultPath": None, "Next": "Timed"},
            "Timed": {"Type": "Task", "Resource": LIST_ACTIVITIES, "TimeoutSeconds": 60, "End": True},
        },
    }
)


def test_ended_task_workers_are_let_go(local_cloud: LocalCloud):
    from moto.stepfunctions.parser.asl.eval.environment import Environment

    def environments() -> int:
        gc.collect()
        return sum(isinstance(kept, Environment) for kept in gc.get_objects())

    # Given a machine whose Tasks run on their caller's thread (no timeout) and on a thread of their own
    machine = create(local_cloud, "tasks", TASKS_MACHINE)
    assert local_cloud.run(machine, {}).status == "SUCCEEDED"
    before = environments()
    # When 100 more executions end
    for _ in range(100):
        assert local_cloud.run(machine, {}).status == "SUCCEEDED"
    # Then Task workers, and the environments they ran in, are let go as fix 84 lets threads go: the
    # list is pruned when it reaches 64 (moto's Task states appended each worker to a list fix 84
    # missed, kept for the life of the process: 100 more)
    assert environments() - before < 64


def test_one_index_per_machine_and_none_in_the_snapshot_each_execution_keeps(local_cloud: LocalCloud):
    def indexes() -> int:
        gc.collect()
        return sum(isinstance(kept, execution_lookups._Index) for kept in gc.get_objects())

    before = indexes()
    # Given a machine whose 20 executions were run and listed, so that its index exists
    machine = create(local_cloud, "snapshots")
    run_orders(local_cloud, machine, 20)
    assert len(listed(local_cloud, stateMachineArn=machine)) == 20
    # Then one index more: the machine's; none in the copy of the machine each execution keeps
    assert indexes() == before + 1


@pytest.fixture
def retaining_cloud() -> Iterator[LocalCloud]:
    with LocalCloud(retry_wait_scale=0, retain_executions=3) as cloud:
        yield cloud


def test_a_retention_limit_forgets_the_oldest_ended_executions_and_never_a_running_one(
    retaining_cloud: LocalCloud,
):
    cloud = retaining_cloud
    # Given a running execution, then 104 that ended (the limit is 3; forgetting waits for 100 more)
    waiting = cloud.start_execution(create(cloud, "waiting", WAITING_MACHINE), {})
    machine = create(cloud, "retained")
    started = run_orders(cloud, machine, 104)
    # Then the three newest ended ones are kept, and the oldest are forgotten as AWS forgets them
    assert listed(cloud, stateMachineArn=machine) == list(reversed(started[-3:]))
    with pytest.raises(ClientError) as forgotten:
        cloud.sfn.describe_execution(executionArn=started[0])
    assert forgotten.value.response["Error"]["Code"] == "ExecutionDoesNotExist"
    assert cloud.sfn.describe_execution(executionArn=started[-1])["status"] in {"SUCCEEDED", "FAILED"}
    # And the running execution is still there
    assert cloud.sfn.describe_execution(executionArn=waiting)["status"] == "RUNNING"


def test_a_negative_retention_is_refused_before_anything_starts():
    with pytest.raises(EngineError, match="retain_executions must be 0 or more, not -1"):
        LocalCloud(retain_executions=-1)
