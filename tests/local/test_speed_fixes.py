"""The speed fixes (issue 31's 56 to 66, and those after) change no behaviour: what they keep,
checked without timing anything (the figures are `make bench`'s)."""

from __future__ import annotations

import copy
import datetime
import gc
import json
import logging
import threading
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.flow.resources import ORDER_WORKFLOW_ASL
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.compat import answers
from sfn_idempotency.local.compat.execution_ends import ExecutionEnds
from tests.local.conftest import counted_patterns

ROLE = "arn:aws:iam::123456789012:role/speed"
JOIN_DEADLINE_SECONDS = 10  # a deadline for the test's own threads, not a measurement


def test_an_end_wakes_the_waiter_of_that_execution_and_every_pause():
    # Given a waiter for one execution, and a pause that waits for any end
    ends, execution = ExecutionEnds(), object()
    ended = threading.Event()
    outcome: list[bool] = []
    ends.sleep(0)  # a thread's first pause returns at once; the next one waits
    waiter = threading.Thread(target=lambda: outcome.append(ends.wait_for_end(execution, ended.is_set, 60)))

    def pause_twice() -> None:
        ends.sleep(0)
        ends.sleep(60)

    pause = threading.Thread(target=pause_twice)
    waiter.start()
    pause.start()
    # When the execution ends and its end is announced
    ended.set()
    ends.announce(execution)
    # Then both woke (long before their 60 s), and the waiter was told it ended
    waiter.join(JOIN_DEADLINE_SECONDS)
    pause.join(JOIN_DEADLINE_SECONDS)
    assert (waiter.is_alive(), pause.is_alive(), outcome) == (False, False, [True])


def test_a_waiter_is_told_when_its_execution_has_not_ended():
    ends = ExecutionEnds()
    assert ends.wait_for_end(object(), lambda: False, 0) is False


def test_a_nested_workflow_still_waits_for_its_child_and_takes_its_output(local_cloud: LocalCloud):
    # Given the order pipeline, which runs the idempotency flow with startExecution.sync:2
    service = IdempotentService(local_cloud)
    pipeline = service.nest_in(ORDER_WORKFLOW_ASL, "pipeline")
    # When an order runs through it twice
    first = local_cloud.run(pipeline, {"orderId": "o-nested", "amount": 3})
    again = local_cloud.run(pipeline, {"orderId": "o-nested", "amount": 3})
    # Then each run waited for its child, which placed the order once and replayed it after
    assert (first.status, again.status) == ("SUCCEEDED", "SUCCEEDED")
    assert first.output == again.output
    assert service.business_runs == 1


def test_a_machines_timeout_still_times_it_out_and_a_maps_iterations_still_run(local_cloud: LocalCloud):
    # Given a machine with TimeoutSeconds whose Task outlasts it, and one whose Map has no timeout
    release = threading.Event()

    def slow(event: Any, context: Any) -> Any:
        release.wait(JOIN_DEADLINE_SECONDS)
        return event

    function = local_cloud.add_function("slow", slow)
    timed = {
        "TimeoutSeconds": 1,
        "StartAt": "Slow",
        "States": {"Slow": {"Type": "Task", "Resource": function.arn, "End": True}},
    }
    mapped = {
        "StartAt": "Fan",
        "States": {
            "Fan": {
                "Type": "Map",
                "MaxConcurrency": 2,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Double",
                    "States": {"Double": {"Type": "Pass", "Parameters": {"n.$": "$"}, "End": True}},
                },
                "End": True,
            }
        },
    }
    arns = {
        name: local_cloud.sfn.create_state_machine(name=name, definition=json.dumps(body), roleArn=ROLE)[
            "stateMachineArn"
        ]
        for name, body in (("timed", timed), ("mapped", mapped))
    }
    try:
        # When both run, then the first timed out and the second mapped every item, in order
        assert local_cloud.run(arns["timed"], {}).status == "TIMED_OUT"
    finally:
        release.set()
    assert local_cloud.run(arns["mapped"], [1, 2, 3]).output == [{"n": 1}, {"n": 2}, {"n": 3}]


def _machine(local_cloud: LocalCloud, name: str, definition: dict[str, Any]) -> str:
    arn: str = local_cloud.sfn.create_state_machine(
        name=name, definition=json.dumps(definition), roleArn=ROLE
    )["stateMachineArn"]
    return arn


UNDER_A_LIMIT = {"ConditionExpression": "attribute_not_exists(#id) OR #n < :limit"}
LIMIT_NAMES = {"#id": "id", "#n": "n"}


def put_under_a_limit(dynamodb: Any, table: str, n: int, limit: int) -> None:
    """Item ``k`` written with ``n``, if it is new or its ``n`` is below ``limit``."""
    dynamodb.put_item(
        TableName=table,
        Item={"id": {"S": "k"}, "n": {"N": str(n)}},
        ExpressionAttributeNames=LIMIT_NAMES,
        ExpressionAttributeValues={":limit": {"N": str(limit)}},
        **UNDER_A_LIMIT,
    )


def test_conditions_of_one_text_judge_each_write_by_its_own_values(local_cloud: LocalCloud):
    # Given a table, and one condition text (lexed once) written with different values
    table = local_cloud.create_table("lexed-once")
    dynamodb = local_cloud.client("dynamodb")

    # When it is written three times, the last one's values refusing it
    put_under_a_limit(dynamodb, table, 1, 0)
    put_under_a_limit(dynamodb, table, 2, 5)
    with pytest.raises(ClientError) as refused:
        put_under_a_limit(dynamodb, table, 3, 1)
    # Then each write was judged by its own values, and the refused one changed nothing
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert dynamodb.get_item(TableName=table, Key={"id": {"S": "k"}})["Item"]["n"] == {"N": "2"}
    # And a name the condition does not use is still refused, as unused names are
    with pytest.raises(ClientError) as unused:
        dynamodb.put_item(
            TableName=table,
            Item={"id": {"S": "k2"}, "n": {"N": "1"}},
            ExpressionAttributeNames={**LIMIT_NAMES, "#unused": "x"},
            ExpressionAttributeValues={":limit": {"N": "1"}},
            **UNDER_A_LIMIT,
        )
    assert "unused" in unused.value.response["Error"]["Message"]


def test_an_update_text_that_does_not_parse_is_refused_every_time(local_cloud: LocalCloud):
    table = local_cloud.create_table("refused-twice")
    dynamodb = local_cloud.client("dynamodb")
    for _ in range(2):
        with pytest.raises(ClientError) as refused:
            dynamodb.update_item(TableName=table, Key={"id": {"S": "k"}}, UpdateExpression="SET a = = :v")
        assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert dynamodb.scan(TableName=table)["Items"] == []


def _shape(node: Any) -> Any:
    """A parse tree as nested values, its parent links left out (they point back up)."""
    if isinstance(node, list):
        return [_shape(child) for child in node]
    if hasattr(node, "__dict__"):
        return type(node).__name__, {
            name: _shape(value) for name, value in vars(node).items() if name != "parent"
        }
    return node


def test_updates_of_one_text_each_write_their_own_values(local_cloud: LocalCloud):
    # Given one update expression (parsed once), whose tree moto validates for each request
    table = local_cloud.create_table("parsed-once")
    dynamodb = local_cloud.client("dynamodb")
    from moto.dynamodb.parsing import validators
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    update = "SET #status = :status, #tags = list_append(if_not_exists(#tags, :none), :tag)"
    tree = UpdateExpressionParser.make(update)
    parsed = _shape(tree)
    # When it updates two items, one of them twice
    for key, status in (("a", "INPROGRESS"), ("b", "COMPLETED"), ("a", "COMPLETED")):
        dynamodb.update_item(
            TableName=table,
            Key={"id": {"S": key}},
            UpdateExpression=update,
            ExpressionAttributeNames={"#status": "status", "#tags": "tags"},
            ExpressionAttributeValues={
                ":status": {"S": status},
                ":tag": {"L": [{"S": status}]},
                ":none": {"L": []},
            },
        )
    # Then each item holds what its own requests wrote
    items = {item["id"]["S"]: item for item in dynamodb.scan(TableName=table)["Items"]}
    assert items["a"]["tags"] == {"L": [{"S": "INPROGRESS"}, {"S": "COMPLETED"}]}
    assert items["b"]["tags"] == {"L": [{"S": "COMPLETED"}]}
    assert (items["a"]["status"], items["b"]["status"]) == ({"S": "COMPLETED"}, {"S": "COMPLETED"})
    # And the validations rewrote copies of the parsed tree, each a tree of its own, never the tree
    assert UpdateExpressionParser.make(update) is tree
    assert _shape(tree) == parsed
    copied = validators.deepcopy(tree)
    assert copied is not tree
    assert _shape(copied) == parsed


def test_tasks_without_a_timeout_run_in_their_states_thread_and_one_with_a_timeout_still_times_out(
    local_cloud: LocalCloud,
):
    # Given a function that notes the thread it runs in, and a machine calling it three times:
    # twice without a timeout, then with TimeoutSeconds while it blocks
    threads: list[threading.Thread] = []
    release = threading.Event()

    def note(event: Any, context: Any) -> Any:
        threads.append(threading.current_thread())
        if event.get("block"):
            release.wait(JOIN_DEADLINE_SECONDS)
        return {"seen": len(threads)}

    function = local_cloud.add_function("note-thread", note)
    task = {"Type": "Task", "Resource": function.arn}
    machine = _machine(
        local_cloud,
        "task-threads",
        {
            "StartAt": "First",
            "States": {
                "First": {**task, "ResultPath": "$.first", "Next": "Second"},
                "Second": {**task, "ResultPath": "$.second", "Next": "Timed"},
                "Timed": {
                    **task,
                    "Parameters": {"block": True},
                    "TimeoutSeconds": 1,
                    "Catch": [
                        {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.timedOut", "Next": "Caught"}
                    ],
                    "End": True,
                },
                "Caught": {"Type": "Pass", "End": True},
            },
        },
    )
    # When it runs
    try:
        result = local_cloud.run(machine, {})
    finally:
        release.set()
    # Then the first two ran in one thread, their results in place; the timed one elsewhere, timed out
    assert result.status == "SUCCEEDED"
    assert (result.output["first"], result.output["second"]) == ({"seen": 1}, {"seen": 2})
    assert result.output["timedOut"]["Error"] == "States.Timeout"
    assert result.states == ["First", "Second", "Timed", "Caught"]
    assert threads[0] is threads[1]
    assert threads[2] is not threads[0]


def test_a_failing_task_without_a_timeout_is_still_retried_and_caught(local_cloud: LocalCloud):
    attempts: list[int] = []

    def fail(event: Any, context: Any) -> Any:
        attempts.append(1)
        raise ValueError("no")

    function = local_cloud.add_function("always-fails", fail)
    machine = _machine(
        local_cloud,
        "task-fails",
        {
            "StartAt": "Fail",
            "States": {
                "Fail": {
                    "Type": "Task",
                    "Resource": function.arn,
                    "Retry": [{"ErrorEquals": ["ValueError"], "MaxAttempts": 2, "IntervalSeconds": 1}],
                    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                    "End": True,
                },
                "Caught": {"Type": "Pass", "End": True},
            },
        },
    )
    result = local_cloud.run(machine, {})
    assert (result.status, len(attempts), result.output["Error"]) == ("SUCCEEDED", 3, "ValueError")


def test_executions_under_names_still_meet_their_namesakes_and_drawn_names_are_forgotten(
    local_cloud: LocalCloud,
):
    # Given a machine, and an execution of it started by name that has ended
    machine = _machine(
        local_cloud, "names", {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    )
    named = local_cloud.start_execution(machine, {"a": 1}, name="order-1")
    local_cloud.wait(named)
    # When the name is used again, and two executions start without one
    with pytest.raises(ClientError) as taken:
        local_cloud.start_execution(machine, {"a": 1}, name="order-1")
    unnamed = {local_cloud.start_execution(machine, {"a": 1}) for _ in range(2)}
    # Then the ended name is taken, the unnamed ones got names of their own, none is remembered
    assert taken.value.response["Error"]["Code"] == "ExecutionAlreadyExists"
    assert len(unnamed) == 2
    assert named not in unnamed
    assert answers._drawn_names == set()


def test_a_program_states_copy_is_its_own():
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded, ProgramRunning

    running = ProgramRunning()
    running.next_state_name = "A"
    copied = copy.deepcopy(running)
    copied.next_state_name = "B"
    assert (type(copied), running.next_state_name, copied.next_state_name) == (ProgramRunning, "A", "B")
    assert type(copy.deepcopy(ProgramEnded())) is ProgramEnded


@pytest.mark.parametrize(
    "moment",
    [
        datetime.datetime(2026, 12, 1, 17, 44, 20, 999999, tzinfo=datetime.UTC),
        datetime.datetime(2026, 1, 2, 3, 4, 5, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        datetime.datetime(2026, 1, 2, 3, 4, 5, 1500),
        datetime.datetime(999, 1, 1, 0, 0, 0, 0),
        datetime.datetime(1000, 1, 1, 0, 0, 0, 1000),
        datetime.datetime(9999, 12, 31, 23, 59, 59, 999),
    ],
)
def test_an_events_timestamp_is_written_as_moto_wrote_it(local_cloud: LocalCloud, moment: datetime.datetime):
    from moto.core.utils import iso_8601_datetime_with_milliseconds as moto_wrote
    from moto.stepfunctions.parser.asl.eval.event import event_manager

    assert event_manager.iso_8601_datetime_with_milliseconds(moment) == moto_wrote(moment)


def test_a_json_values_copy_is_its_own_and_other_objects_are_deep_copied():
    from sfn_idempotency.local.compat.evaluation import copied_json

    # Given a workflow value with nested dicts and lists, and a value that is not JSON
    moment = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)
    original: dict[str, Any] = {
        "order": {"items": [{"sku": "a", "qty": 1}], "tags": ["x"]},
        "at": moment,
        "n": None,
    }
    # When it is copied (fix 85)
    copied = copied_json(original)
    copied["order"]["items"][0]["qty"] = 2
    copied["order"]["tags"].append("y")
    # Then the copy is equal to what it was, and changing it changes nothing of the original
    assert original == {"order": {"items": [{"sku": "a", "qty": 1}], "tags": ["x"]}, "at": moment, "n": None}
    assert copied["at"] == moment
    # And what is not JSON is copied as copy.deepcopy copies it
    nested = {"set": {1, 2}}
    assert copied_json(nested)["set"] is not nested["set"]
    assert copied_json(nested) == nested


def test_a_services_regions_are_botocores_own_read_once(local_cloud: LocalCloud):
    # Given botocore's own answers, from a session without the fix (fix 101)
    unfixed = botocore.session.Session()
    original = botocore.session.Session._sfn_local_original_get_available_regions
    expected = {
        (service, partition): original(unfixed, service, partition)
        for service in ("ec2", "stepfunctions", "no-such-service")
        for partition in ("aws", "aws-cn")
    }
    # When new sessions ask, as moto's EC2 region table does at its import
    loads: list[str] = []
    real_load = botocore.loaders.Loader.load_service_model

    def counted(self: Any, service_name: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(service_name)
        return real_load(self, service_name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.loaders.Loader, "load_service_model", counted)
        answers = {key: boto3.Session().get_available_regions(*key) for key in expected for _ in range(2)}
    # Then each answer is botocore's, and no service's model was read more than once
    assert answers == expected
    assert all(loads.count(service) <= 1 for service in loads)


PARALLEL_WITH_A_FAILING_BRANCH = json.dumps(
    {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}},
                    {"StartAt": "Refuse", "States": {"Refuse": {"Type": "Fail", "Error": "No"}}},
                ],
                "Catch": [{"ErrorEquals": ["No"], "ResultPath": "$.error", "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }
)


def test_a_component_is_written_as_text_only_for_a_logger_that_takes_it(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    # Given a Parallel whose second branch fails and is caught, parsed (which writes its parts as
    # text, once per definition), and a count of the components written as text since (each a walk
    # of its whole tree: fix 110)
    from moto.stepfunctions.parser.asl.component.component import Component

    machine = local_cloud.sfn.create_state_machine(
        name="parallel-text", definition=PARALLEL_WITH_A_FAILING_BRANCH, roleArn=ROLE
    )["stateMachineArn"]
    local_cloud.run(machine, {"n": 0})
    written: list[str] = []
    as_text = Component.__str__

    def counted(self: Any) -> str:
        written.append(type(self).__name__)
        return str(as_text(self))

    monkeypatch.setattr(Component, "__str__", counted)

    # When it runs again, with no logger taking moto's ERROR lines (the engine's own setting)
    result = local_cloud.run(machine, {"n": 1})

    # Then it ends as before, and no component was written as text
    assert result.status == "SUCCEEDED"
    assert result.output["error"]["Error"] == "No"
    assert written == []

    # And when a logger takes them, the failure's line still names its component
    with caplog.at_level(logging.ERROR, logger="moto.stepfunctions.parser.asl.component.eval_component"):
        assert local_cloud.run(machine, {"n": 2}).status == "SUCCEEDED"
    assert any("Error=No" in record.getMessage() for record in caplog.records)
    assert written


def test_an_executions_events_wait_for_no_other_executions_seal(local_cloud: LocalCloud):
    # Given an execution's history (moto's event manager), and another execution's thread holding
    # the one lock fix 68 shares among executions (it used to take it for every event of every
    # execution, and Map iterations queued for it)
    from moto.stepfunctions.parser.api import HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext, EventManager

    from sfn_idempotency.local.compat import execution_ends

    manager, context = EventManager(), EventHistoryContext.of_program_start()

    def write(event_type: HistoryEventType) -> None:
        manager.add_event(context=context, event_type=event_type)

    with execution_ends._sealing:
        # When this execution writes its events, its end among them
        def write_its_events() -> None:
            write(HistoryEventType.PassStateEntered)
            write(HistoryEventType.ExecutionSucceeded)

        writer = threading.Thread(target=write_its_events)
        writer.start()
        writer.join(JOIN_DEADLINE_SECONDS)
        # Then it wrote them without waiting for the other execution
        assert not writer.is_alive()
    writer.join(JOIN_DEADLINE_SECONDS)

    # And its end sealed its history: a second end and a late event are dropped, and counted
    write(HistoryEventType.ExecutionFailed)
    write(HistoryEventType.PassStateExited)
    assert [event["type"] for event in manager.get_event_history()] == [
        HistoryEventType.PassStateEntered,
        HistoryEventType.ExecutionSucceeded,
    ]
    assert getattr(manager, execution_ends.DROPPED) == 2


def test_moto_s_server_lists_its_modules_once_and_as_moto_lists_them(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given moto's own listing of its modules, read from its package folder (fix 111)
    import os

    from moto import backends

    original = backends._sfn_local_original_list_of_moto_modules
    expected = tuple(original())
    backends.list_of_moto_modules()  # the first listing of this process (a request made it already)
    listings: list[str] = []
    real_listdir = os.listdir

    def listdir(path: str) -> list[str]:
        listings.append(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)

    # When the server asks for every request, as its dispatcher does
    answers = [tuple(backends.list_of_moto_modules()) for _ in range(3)]

    # Then each answer is moto's own, and the folder was not listed again
    assert answers == [expected] * 3
    assert "stepfunctions" in expected
    assert listings == []


@pytest.fixture
def deep_copies(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What ``copy.deepcopy`` is asked to copy from here on."""
    copied: list[Any] = []
    deepcopy = copy.deepcopy

    def counted(value: Any, memo: Any = None) -> Any:
        copied.append(value)
        return deepcopy(value, memo)

    monkeypatch.setattr(copy, "deepcopy", counted)
    return copied


def test_a_maps_results_are_copies_in_item_order_without_the_generic_deep_copy(
    local_cloud: LocalCloud, deep_copies: list[Any]
):
    # Given a Map whose iterations return objects, and copy.deepcopy counted from here on (fix 116)
    sfn = local_cloud.client("stepfunctions")
    iteration = {
        "StartAt": "Echo",
        "States": {"Echo": {"Type": "Pass", "Parameters": {"n.$": "$"}, "End": True}},
    }
    definition = {
        "StartAt": "Fan",
        "States": {"Fan": {"Type": "Map", "MaxConcurrency": 3, "ItemProcessor": iteration, "End": True}},
    }
    machine = sfn.create_state_machine(name="map-results", definition=json.dumps(definition), roleArn=ROLE)
    # When it maps ten items
    result = local_cloud.run(machine["stateMachineArn"], list(range(10)))
    # Then each item's result is in its place, and no result went through copy.deepcopy
    assert (result.status, result.output) == ("SUCCEEDED", [{"n": n} for n in range(10)])
    assert not [value for value in deep_copies if type(value).__name__ in ("set", "JobClosed")]


@pytest.mark.parametrize(
    "moment",
    [
        "2026-12-04T02:30:00.123456+00:00",
        "2026-12-04T02:30:00.999999+00:00",
        "2026-12-04T02:30:00+00:00",
        "2026-12-04T03:30:00.123456+01:00",
        datetime.datetime(2026, 12, 4, 2, 30, 0, 5000, tzinfo=datetime.UTC),
    ],
)
def test_a_context_timestamp_from_moto_s_text_is_written_as_from_the_moment(moment: Any):
    from sfn_idempotency.local.compat.interpreter import aws_timestamp

    # Given a moment as moto writes it (UTC text with microseconds), or otherwise
    parsed = datetime.datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    # When the context object's text is written from it
    written = aws_timestamp(moment)
    # Then it is the moment in UTC to the millisecond, truncated, as written from the datetime
    expected = parsed.astimezone(datetime.UTC).isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"
    assert written == expected


def test_a_record_without_execution_data_leaves_out_the_data_and_keeps_the_rest(
    local_cloud: LocalCloud, deep_copies: list[Any]
):
    # Given a machine logging every event without its data, and copy.deepcopy counted (fix 119)
    local_cloud.client("logs").create_log_group(logGroupName="/sfn/no-data")
    group_arn = f"arn:aws:logs:{local_cloud.region}:{local_cloud.account}:log-group:/sfn/no-data:*"
    definition = {"StartAt": "Keep", "States": {"Keep": {"Type": "Pass", "End": True}}}
    machine = local_cloud.sfn.create_state_machine(
        name="no-data",
        definition=json.dumps(definition),
        roleArn=ROLE,
        loggingConfiguration={
            "level": "ALL",
            "includeExecutionData": False,
            "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": group_arn}}],
        },
    )["stateMachineArn"]
    # When it runs
    result = local_cloud.run(machine, {"order": {"id": "o-1"}})
    events = local_cloud.client("logs").filter_log_events(logGroupName="/sfn/no-data")["events"]
    records = [json.loads(event["message"]) for event in events]
    # Then each record's details are its event's, without input and output
    data = {"input", "inputDetails", "output", "outputDetails"}
    expected = [
        {key: value for key, value in details.items() if key not in data}
        for details in (_details_of(event) for event in result.history)
    ]
    assert [record.get("details", {}) for record in records] == expected
    assert {"roleArn", "inputDetails"} <= set(_details_of(result.history[0]))  # what was left out existed
    # And the history keeps its data: the records' copies are their own
    assert json.loads(_details_of(result.history[0])["input"]) == {"order": {"id": "o-1"}}
    # And no record's details went through copy.deepcopy
    assert not [value for value in deep_copies if isinstance(value, dict) and data & set(value)]


def _details_of(event: dict[str, Any]) -> dict[str, Any]:
    details = [value for key, value in event.items() if key.endswith("EventDetails")]
    return details[0] if details else {}


def test_frames_are_built_with_their_openers_event_manager_and_pools(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a Map of five items whose iterations run a Parallel of two branches, and the event
    # managers, callback pools and Map run pools moto makes, counted
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
        map_run_record,
    )
    from moto.stepfunctions.parser.asl.eval.callback import callback
    from moto.stepfunctions.parser.asl.eval.event import event_manager

    made: list[str] = []
    for owner in (
        event_manager.EventManager,
        callback.CallbackPoolManager,
        map_run_record.MapRunRecordPoolManager,
    ):
        init = owner.__init__

        def counted(self: Any, *args: Any, __init: Any = init, **kwargs: Any) -> None:
            made.append(type(self).__name__)
            __init(self, *args, **kwargs)

        monkeypatch.setattr(owner, "__init__", counted)
    branch = {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    machine = _machine(
        local_cloud,
        "frames",
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "INLINE"},
                        "StartAt": "Both",
                        "States": {"Both": {"Type": "Parallel", "Branches": [branch, branch], "End": True}},
                    },
                    "End": True,
                }
            },
        },
    )

    # When it runs
    result = local_cloud.run(machine, [1, 2, 3, 4, 5])

    # Then its output and history are as before, and only the execution's own environment made
    # each one (moto made them again for each of its frames: a worker, five iterations, ten branches)
    assert (result.status, result.output) == ("SUCCEEDED", [[n, n] for n in [1, 2, 3, 4, 5]])
    assert [event["type"] for event in result.history].count("ParallelStateSucceeded") == 5
    assert sorted(made) == ["CallbackPoolManager", "EventManager", "MapRunRecordPoolManager"]


def _answers(cloud: LocalCloud, machine: str, execution: str) -> list[Any]:
    """Four answers moto serializes through its attribute picker, as the SDK reads them."""
    sfn = cloud.sfn
    return [
        sfn.describe_execution(executionArn=execution),
        sfn.list_executions(stateMachineArn=machine),
        sfn.get_execution_history(executionArn=execution),
        sfn.describe_state_machine(stateMachineArn=machine),
    ]


def test_an_answers_possible_keys_are_found_once_per_member_and_answer_as_moto_s(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given an ended execution, and moto's alias providers, counted as the picker makes them
    from moto.core import serialize

    machine = _machine(
        local_cloud, "aliases", {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    )
    execution = local_cloud.sfn.start_execution(stateMachineArn=machine, input='{"order": 1}')["executionArn"]
    local_cloud.wait(execution)
    asked: list[str] = []
    for provider in serialize.DEFAULT_ALIAS_PROVIDERS:
        init = provider.__init__

        def counted(self: Any, context: Any, __init: Any = init) -> None:
            asked.append(type(self).__name__)
            __init(self, context)

        monkeypatch.setattr(provider, "__init__", counted)

    # When the answers are serialized twice (fix 122), then once more by moto's own picker
    kept = [_answers(local_cloud, machine, execution) for _ in range(2)]
    after_first = len(asked)
    again = _answers(local_cloud, machine, execution)
    asked_again = len(asked)
    original = serialize.XFormedAttributePicker._sfn_local_original_get_possible_keys
    monkeypatch.setattr(serialize.XFormedAttributePicker, "get_possible_keys", original)
    moto_s = _answers(local_cloud, machine, execution)

    # Then the members' aliases were found at most once (a shape keeps them for the process), where
    # moto's picker asks the providers at every answer; and every answer is the one it gives
    assert asked_again == after_first
    assert len(asked) > asked_again
    for served in (*kept, again):
        assert [_without_request_ids(a) for a in served] == [_without_request_ids(a) for a in moto_s]
    assert moto_s[0]["status"] == "SUCCEEDED"
    assert moto_s[0]["output"] == '{"order": 1}'  # the input passed through, as sent (fix 153)


def _without_request_ids(answer: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in answer.items() if name != "ResponseMetadata"}


def test_a_result_with_aliases_of_its_own_is_asked_each_time(local_cloud: LocalCloud):
    # Given a member's shape, and results that name their aliases themselves: one in a Meta of its
    # own, one whose class answers any attribute (moto's picker reads both from the result)
    from moto.core.responses import get_service_model
    from moto.core.serialize import AttributePickerContext, XFormedAttributePicker

    del local_cloud  # only for the engine's fixes, installed
    shape = get_service_model("stepfunctions").operation_model("DescribeExecution").output_shape
    member = shape.members["name"]
    member.parent = shape

    class Own:
        def __init__(self, alias: str) -> None:
            self.Meta = type("Meta", (), {"serialization_aliases": {"name": alias}})

    class Answering:
        def __init__(self, alias: str) -> None:
            self.alias = alias

        def __getattr__(self, attribute: str) -> Any:
            if attribute == "Meta":
                return type("Meta", (), {"serialization_aliases": {"name": self.alias}})
            raise AttributeError(attribute)

    picker = XFormedAttributePicker()

    def keys(result: Any) -> list[str]:
        return list(picker.get_possible_keys(AttributePickerContext(obj=result, key="name", shape=member)))

    # When each is asked twice, with a different alias each time
    # Then each answer begins with that result's own alias, as moto's picker answers
    for kind in (Own, Answering):
        assert keys(kind("first"))[0] == "first"
        assert keys(kind("second"))[0] == "second"


def test_an_actions_method_name_is_converted_once_and_as_moto_converts_it(local_cloud: LocalCloud):
    # Given the conversion moto's responses make of each request's action name (fix 124), emptied
    from moto.core import responses, utils

    conversion = responses.camelcase_to_underscores
    conversion.cache_clear()
    machine = _machine(
        local_cloud, "names", {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    )

    # When the same action is asked for three times
    for _ in range(3):
        local_cloud.sfn.describe_state_machine(stateMachineArn=machine)

    # Then each action was converted once (CreateStateMachine, DescribeStateMachine), each name as
    # moto converts it
    assert (conversion.cache_info().misses, conversion.cache_info().hits) == (2, 2)
    for name in ("DescribeStateMachine", "StartSyncExecution", "TestState", "ListMapRuns", "TagResource"):
        assert conversion(name) == utils.camelcase_to_underscores(name)


def test_a_frames_context_and_program_state_are_copies_made_without_the_generic_deep_copy(
    local_cloud: LocalCloud, deep_copies: list[Any]
):
    # Given a Map whose iterations read their State context, and copy.deepcopy counted (fix 126)
    from moto.stepfunctions.parser.asl.eval import environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded, ProgramError, ProgramRunning

    iteration = {
        "StartAt": "Echo",
        "States": {
            "Echo": {"Type": "Pass", "Parameters": {"n.$": "$", "state.$": "$$.State.Name"}, "End": True}
        },
    }
    machine = _machine(
        local_cloud,
        "frame-copies",
        {"StartAt": "Fan", "States": {"Fan": {"Type": "Map", "ItemProcessor": iteration, "End": True}}},
    )

    # When it maps five items
    result = local_cloud.run(machine, list(range(5)))

    # Then each iteration read its own state, and no frame's context or program state went through
    # copy.deepcopy
    assert (result.status, result.output) == ("SUCCEEDED", [{"n": n, "state": "Echo"} for n in range(5)])
    copied_generically = [
        value
        for value in deep_copies
        if type(value) in (ProgramRunning, ProgramEnded)
        or (isinstance(value, dict) and "EnteredTime" in value)
    ]
    assert copied_generically == []

    # And what the environment copies is a copy of its own, of the same class and value: a State
    # context, a running program's state, and one that failed (still copied by copy.deepcopy)
    context = {"EnteredTime": "2026-12-04T08:00:00.000Z", "Name": "Echo", "RetryCount": 0}
    running = ProgramRunning()
    running.next_state_name = "Echo"
    failed = ProgramError(error={"error": "States.TaskFailed", "cause": "a cause"})
    copies = [environment.copy.deepcopy(value) for value in (context, running, failed)]
    assert copies[0] == context
    assert copies[0] is not context
    assert (type(copies[1]), copies[1].next_state_name) == (ProgramRunning, "Echo")
    copies[1].next_state_name = "Elsewhere"
    assert running.next_state_name == "Echo"
    assert type(copies[2]) is ProgramError
    assert copies[2].error == failed.error
    assert copies[2].error is not failed.error


def test_each_urls_services_are_found_once_and_a_request_is_answered_as_moto_answers_it(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given the URL patterns moto's in-process stub matches, counted (fix 127), none kept yet
    from botocore.awsrequest import AWSPreparedRequest
    from moto import backend_index
    from moto.core.botocore_stubber import BotocoreStubber

    from sfn_idempotency.local.compat import moto_core

    matched: list[str] = []
    monkeypatch.setattr(
        backend_index, "backend_url_patterns", counted_patterns(backend_index.backend_url_patterns, matched)
    )
    moto_core._first_service_matching.cache_clear()
    machine = _machine(
        local_cloud, "urls", {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    )

    # When a machine is described three times
    names = [local_cloud.sfn.describe_state_machine(stateMachineArn=machine)["name"] for _ in range(3)]
    after_three = len(matched)

    # Then only the first call of the URL matched patterns (CreateStateMachine's, the same URL), up
    # to Step Functions' own, and each call was answered
    services = [service for service, _ in backend_index.backend_url_patterns]
    assert names == ["urls"] * 3
    assert after_three == services.index("stepfunctions") + 1

    # And the stub answers as moto's own: a service's request, an AWS host no service has, and a
    # host that is not AWS's
    def request(url: str, target: str | None = None) -> Any:
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        if target:
            headers["X-Amz-Target"] = target
        return AWSPreparedRequest(method="POST", url=url, headers=headers, body=b"{}", stream_output=False)

    stub = BotocoreStubber()
    original = BotocoreStubber._sfn_local_original_process_request
    for url, target in (
        ("https://states.us-east-1.amazonaws.com/", "AWSStepFunctions.ListStateMachines"),
        ("https://nothing.us-east-1.amazonaws.com/path", None),
        ("https://example.com/", None),
    ):
        kept, moto_s = stub.process_request(request(url, target)), original(stub, request(url, target))
        assert (kept is None) == (moto_s is None)
        if moto_s is not None:
            assert (kept[0], kept[2]) == (moto_s[0], moto_s[2])


def test_a_random_text_is_drawn_as_moto_draws_it(local_cloud: LocalCloud):
    # Given two of moto's generators seeded alike, one drawing as fix 128 draws, one as moto drew
    from moto.moto_api._internal.moto_random import MotoRandom

    del local_cloud  # only for its fixes, installed
    ours, moto_s = MotoRandom(), MotoRandom()
    ours.seed(55)
    moto_s.seed(55)
    drew = MotoRandom._sfn_local_original_get_random_string

    # When each draws texts of every kind moto asks for
    kinds = [(52, True, False), (20, False, False), (8, True, True), (1, True, False), (0, True, False)] * 40
    texts = [ours.get_random_string(*kind) for kind in kinds]
    expected = [drew(moto_s, *kind) for kind in kinds]

    # Then the texts are the same, and both generators are left in the same state
    assert texts == expected
    assert ours.getstate() == moto_s.getstate()


def test_a_states_input_is_written_into_its_events_without_a_copy_and_read_by_others_as_a_copy(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a machine whose states add to their input, and a count of the copies made of a state's input
    from moto.stepfunctions.parser.asl.eval.states import States

    copies: list[Any] = []
    extract = States._extract

    def counted(query: str | None, data: Any) -> Any:
        copied = extract(query, data)
        if query is None:
            copies.append(copied)
        return copied

    monkeypatch.setattr(States, "_extract", staticmethod(counted))
    machine = local_cloud.create_state_machine(
        "copies",
        json.dumps(
            {
                "StartAt": "A",
                "States": {
                    "A": {"Type": "Pass", "Result": 1, "ResultPath": "$.a", "Next": "B"},
                    "B": {"Type": "Pass", "Result": 2, "ResultPath": "$.b", "End": True},
                },
            }
        ),
        {},
    )

    # When it runs
    result = local_cloud.run(machine, {"order": "o-1"})

    # Then each event has its state's input or output as text, as before
    entered = [
        e["stateEnteredEventDetails"]["input"] for e in result.history if "stateEnteredEventDetails" in e
    ]
    exited = [
        e["stateExitedEventDetails"]["output"] for e in result.history if "stateExitedEventDetails" in e
    ]
    assert [json.loads(text) for text in entered] == [{"order": "o-1"}, {"order": "o-1", "a": 1}]
    assert [json.loads(text) for text in exited] == [
        {"order": "o-1", "a": 1},
        {"order": "o-1", "a": 1, "b": 2},
    ]
    assert result.output == {"order": "o-1", "a": 1, "b": 2}
    # And a state's input was copied for its other readers only: each state's InputPath, ResultPath
    # and size check, the execution's success event and its output (moto copied it for each
    # state's two events and for its redrive's resume point too: six more)
    assert len(copies) == 2 * 3 + 2


def test_a_call_answered_in_process_and_an_updates_validation_leave_no_cycles(local_cloud: LocalCloud):
    # Given a table, and the collector set to keep what it finds unreachable instead of freeing it
    from moto.core.request import Request
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser

    table = local_cloud.create_table("orders")
    local_cloud.dynamodb.put_item(TableName=table, Item={"id": {"S": "o-1"}})
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        # When an update is answered in process (moto's stub of botocore, its validation walks)
        answer = local_cloud.dynamodb.update_item(
            TableName=table,
            Key={"id": {"S": "o-1"}},
            UpdateExpression="SET #status = :done",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":done": {"S": "DONE"}},
            ReturnValues="ALL_NEW",
        )
        gc.collect()
        cycles = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()

    # Then it answered, and neither moto's request nor a validation walk was left in a cycle for
    # the collector (werkzeug's request kept itself in its environ; each walk kept its own methods)
    assert answer["Attributes"]["status"] == {"S": "DONE"}
    assert not [kept for kept in cycles if isinstance(kept, Request | DepthFirstTraverser)]


def test_a_writes_condition_is_parsed_once(local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch):
    # Given a table, and a count of the condition trees moto builds
    from moto.dynamodb.comparisons import ConditionExpressionParser

    built: list[Any] = []
    lex = ConditionExpressionParser._lex_condition_expression  # once per tree moto builds

    def counted(parser: Any) -> Any:
        built.append(parser)
        return lex(parser)

    monkeypatch.setattr(ConditionExpressionParser, "_lex_condition_expression", counted)
    table = local_cloud.create_table("parsed-once")
    dynamodb = local_cloud.client("dynamodb")

    # When two writes of one condition, with the same values, are made
    put_under_a_limit(dynamodb, table, 1, 5)
    put_under_a_limit(dynamodb, table, 2, 5)

    # Then each built its tree once (moto built two for each: its check of the names and values
    # used, then the write); that each is judged by its own values, the fix 61 test above shows
    assert len(built) == 2
    assert dynamodb.get_item(TableName=table, Key={"id": {"S": "k"}})["Item"]["n"] == {"N": "2"}


def test_a_parse_kept_for_a_request_is_not_answered_for_names_changed_since():
    # Given a parse of a condition, whose names the caller then changes in place
    from moto.dynamodb.comparisons import ConditionExpressionParser

    names = {"#n": "n"}
    values = {":v": {"N": "1"}}
    first = ConditionExpressionParser("#n = :v", names, values)
    first.parse()
    names["#n"] = "m"

    # When the same text is parsed with the changed names
    second = ConditionExpressionParser("#n = :v", names, values)
    tree = second.parse()

    # Then it is parsed again: its tree reads the attribute the names now give
    assert tree.lhs.path == ["m"]
    assert (first.expr_attr_names_found, second.expr_attr_names_found) == (["#n"], ["#n"])


def test_a_root_url_is_built_once_per_scheme_host_and_mount_and_as_werkzeug_builds_it(
    local_cloud: LocalCloud,
):
    # Given fix 133's builder around werkzeug's, counted
    from werkzeug.sansio import request, utils
    from werkzeug.test import EnvironBuilder
    from werkzeug.wrappers import Request

    from sfn_idempotency.local.compat import moto_core

    del local_cloud  # only for its fixes, installed
    built: list[tuple[Any, ...]] = []

    def counted(*parts: Any) -> str:
        built.append(parts)
        return utils.get_current_url(*parts)

    get_current_url = moto_core._root_urls_built_once(counted)
    # When one root URL is asked for three times, another host's once, and a URL with a path twice
    roots = [get_current_url("http", "127.0.0.1:4566", "") for _ in range(3)]
    other = get_current_url("http", "localhost:4566", "")
    paths = [get_current_url("http", "127.0.0.1:4566", "", "/a b", b"q=1") for _ in range(2)]
    # Then each root was built once, every URL with a path each time, each as werkzeug builds it;
    # and the engine's requests build their root URLs with it
    assert len(built) == 4
    assert roots == [utils.get_current_url("http", "127.0.0.1:4566", "")] * 3
    assert other == "http://localhost:4566/"
    assert paths == [utils.get_current_url("http", "127.0.0.1:4566", "", "/a b", b"q=1")] * 2
    installed = request.get_current_url  # type: ignore[attr-defined]
    assert installed.__qualname__.startswith(moto_core._root_urls_built_once.__name__)
    environ = EnvironBuilder(path="/x", base_url="http://127.0.0.1:4566/mounted").get_environ()
    assert Request(environ).url_root == "http://127.0.0.1:4566/mounted/"


def test_a_mocks_url_responses_are_built_once_and_record_only_their_starts_calls():
    # Given moto's response class, its constructions counted, and a first cloud that made its own
    import requests
    from moto import backend_index
    from moto.core import custom_responses_mock, models

    with LocalCloud():
        first = models.responses_mock.registered()
    made: list[Any] = []
    original_init = custom_responses_mock.CallbackResponse.__init__

    def counted_init(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        original_init(self, *args, **kwargs)

    custom_responses_mock.CallbackResponse.__init__ = counted_init
    try:
        # When a second cloud starts, and a `requests` call to an S3 URL is answered by moto
        with LocalCloud() as cloud:
            second = models.responses_mock.registered()
            cloud.client("s3").create_bucket(Bucket="speed-fix-143")
            answer = requests.put("https://speed-fix-143.s3.amazonaws.com/key", data=b"body", timeout=5)
            stored = cloud.client("s3").get_object(Bucket="speed-fix-143", Key="key")["Body"].read()
            calls = sum(response.call_count for response in second)
    finally:
        custom_responses_mock.CallbackResponse.__init__ = original_init

    # Then it built none: it registered the first cloud's responses, in moto's order (each method
    # x every service's pattern, and the one for URLs no service answers)
    assert made == []
    methods, patterns = len(models.BOTOCORE_HTTP_METHODS), len(backend_index.backend_url_patterns)
    assert len(second) == methods * (patterns + 1)
    assert [id(r) for r in second] == [id(r) for r in first]
    # and they answer as moto's do, recording this start's one call and none of the first's
    assert answer.status_code == 200
    assert stored == b"body"
    assert calls == 1
