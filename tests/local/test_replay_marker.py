"""The replay marker and the response hook (sfn_idempotency.replays): opt-in, in the standalone flow
and the inline step, JSONPath and JSONata, Standard and Express, in a Map too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sfn_idempotency.deployed.records import plain
from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.replays import MARKER_FIELDS, ReplayOptionError
from sfn_idempotency.wrap import WrapError, wrap_state
from tests.local.conftest import FLAVOURS

ORDER = {"orderId": "o-1", "amount": 25}
HOOKS = {
    "JSONPath": {
        "order.$": "$.output",
        "replayOf.$": "$.record.firstExecution",
        "at.$": "$.record.completedAt",
    },
    "JSONata": "{% {'order': $output, 'replayOf': $record.firstExecution, 'at': $record.completedAt} %}",
}


@pytest.fixture(params=FLAVOURS)
def language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_with_the_marker_each_run_says_whether_it_replayed(local_cloud: LocalCloud, language: str):
    # Given the standalone flow with the marker in the field "idempotency"
    service = IdempotentService(local_cloud, query_language=language, replay_marker="idempotency")

    # When the same order runs twice
    first, second = service.run(ORDER), service.run(ORDER)

    # Then both outputs are {result, idempotency}: the result is the business result, once placed
    assert (first.status, second.status) == ("SUCCEEDED", "SUCCEEDED")
    assert set(first.output) == set(second.output) == {"result", "idempotency"}
    assert first.output["result"] == second.output["result"]
    assert first.output["result"]["status"] == "PLACED"
    assert service.business_runs == 1
    # And the marker says which run replayed, and when and by which execution the key was completed
    assert first.output["idempotency"]["replayed"] is False
    assert second.output["idempotency"]["replayed"] is True
    assert set(second.output["idempotency"]) == set(MARKER_FIELDS)
    metadata = {field: second.output["idempotency"][field] for field in MARKER_FIELDS[1:]}
    assert metadata == {field: first.output["idempotency"][field] for field in MARKER_FIELDS[1:]}
    assert metadata["firstExecution"] == first.arn
    assert metadata["idempotencyKey"] == service.key_for(ORDER)
    record = plain(service.record_for(ORDER))
    assert metadata["completedAt"] == record["completed_at"]
    assert metadata["expiresAt"] == record["expiration"]
    # And the replay costs no state more than a plain replay
    assert service.flow_states(second)[-1] == "Replay"


def test_without_the_marker_a_replay_is_the_first_output_byte_for_byte(
    local_cloud: LocalCloud, language: str
):
    # Given the flow without options; When the same order runs twice
    service = IdempotentService(local_cloud, query_language=language)
    first, second = service.run(ORDER), service.run(ORDER)

    # Then the outputs are the same text, the business result itself
    assert second.output_json == first.output_json
    assert first.output["status"] == "PLACED"


def test_a_hook_rewrites_the_replayed_output_only(local_cloud: LocalCloud, language: str):
    # Given the flow with a hook of its flavour
    service = IdempotentService(local_cloud, query_language=language, replay_hook=HOOKS[language])

    # When the same order runs twice
    first, second = service.run(ORDER), service.run(ORDER)

    # Then the first run's output is untouched, and the replay's is the hook's, from the record
    assert first.output["status"] == "PLACED"
    assert second.output == {
        "order": first.output,
        "replayOf": first.arn,
        "at": plain(service.record_for(ORDER))["completed_at"],
    }
    assert service.business_runs == 1


def test_hook_and_marker_together_mark_the_hook_s_output(local_cloud: LocalCloud, language: str):
    service = IdempotentService(
        local_cloud, query_language=language, replay_marker="idem", replay_hook=HOOKS[language]
    )
    first, second = service.run(ORDER), service.run(ORDER)
    assert first.output["result"]["status"] == "PLACED"
    assert second.output["result"]["order"] == first.output["result"]
    assert (first.output["idem"]["replayed"], second.output["idem"]["replayed"]) == (False, True)


def test_a_powertools_record_replays_with_null_metadata(local_cloud: LocalCloud, language: str):
    # Given a COMPLETED record as Powertools writes it: no owner, no completed_at
    service = IdempotentService(local_cloud, query_language=language, replay_marker="idempotency")
    key = service.key_for(ORDER)
    expiration = local_cloud.clock.now_ms() // 1000 + 3600
    local_cloud.dynamodb.put_item(
        TableName=service.table_name,
        Item={
            "id": {"S": key},
            "status": {"S": "COMPLETED"},
            "expiration": {"N": str(expiration)},
            "data": {"S": json.dumps({"placedBy": "powertools"})},
        },
    )

    # When the order arrives
    replay = service.run(ORDER)

    # Then it replays Powertools' result, and the marker has null where the record has nothing
    assert replay.status == "SUCCEEDED", replay.cause
    assert replay.output == {
        "result": {"placedBy": "powertools"},
        "idempotency": {
            "replayed": True,
            "idempotencyKey": key,
            "completedAt": None,
            "expiresAt": expiration,
            "firstExecution": None,
        },
    }
    assert service.business_runs == 0


# -- the inline step: a user's machine that sends its confirmation e-mail once per order ----------
def jsonpath_orders_machine() -> dict[str, Any]:
    return {
        "StartAt": "PlaceOrder",
        "States": {
            "PlaceOrder": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload.$": "$"},
                "ResultSelector": {"confirmation.$": "$.Payload"},
                "ResultPath": "$.placed",
                "Next": "FirstTime",
            },
            "FirstTime": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.placement.replayed", "BooleanEquals": False, "Next": "SendEmail"}
                ],
                "Default": "Done",
            },
            "SendEmail": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "${SendEmailFunctionArn}", "Payload.$": "$.placed"},
                "ResultPath": None,
                "Next": "Done",
            },
            "Done": {"Type": "Pass", "End": True},
        },
    }


def jsonata_orders_machine() -> dict[str, Any]:
    return {
        "QueryLanguage": "JSONata",
        "StartAt": "PlaceOrder",
        "States": {
            "PlaceOrder": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Arguments": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload": "{% $states.input %}"},
                "Output": {"placed": "{% $states.result.Payload %}"},
                "Next": "FirstTime",
            },
            "FirstTime": {
                "Type": "Choice",
                "Choices": [
                    {"Condition": "{% $not($states.input.placement.replayed) %}", "Next": "SendEmail"}
                ],
                "Default": "Done",
            },
            "SendEmail": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Arguments": {
                    "FunctionName": "${SendEmailFunctionArn}",
                    "Payload": "{% $states.input.placed %}",
                },
                "Output": "{% $states.input %}",
                "Next": "Done",
            },
            "Done": {"Type": "Pass", "End": True},
        },
    }


MARKER_PLACE = {"JSONPath": "$.placement", "JSONata": "placement"}
MACHINES = {"JSONPath": jsonpath_orders_machine, "JSONata": jsonata_orders_machine}


def in_a_map(machine: dict[str, Any], language: str) -> dict[str, Any]:
    """The same states as the item processor of an inline Map over $.orders."""
    processor = {key: value for key, value in machine.items() if key != "QueryLanguage"}
    processor["ProcessorConfig"] = {"Mode": "INLINE"}
    items = {"Items": "{% $states.input.orders %}"} if language == "JSONata" else {"ItemsPath": "$.orders"}
    state = {"Type": "Map", **items, "ItemProcessor": processor, "End": True}
    return {
        **{k: v for k, v in machine.items() if k == "QueryLanguage"},
        "StartAt": "Orders",
        "States": {"Orders": state},
    }


@pytest.mark.parametrize("workflow_type", ["STANDARD", "EXPRESS"])
@pytest.mark.parametrize("mapped", [False, True], ids=["alone", "in-a-map"])
def test_a_choice_on_replayed_sends_the_email_once(
    local_cloud: LocalCloud, language: str, workflow_type: str, mapped: bool
):
    # Given a user's machine whose PlaceOrder Task is wrapped with the marker at "placement", and
    # whose Choice sends the confirmation e-mail only on a first run
    place = local_cloud.add_function("place-order", lambda event, context: place_order(event))
    emails = local_cloud.add_function("send-email", lambda event, context: {"sent": True})
    machine = MACHINES[language]()
    if mapped:
        machine = in_a_map(machine, language)
    definition = wrap_state(
        json.dumps(machine),
        "PlaceOrder",
        key_prefix="orders",
        event_key_jmespath="orderId",
        replay_marker=MARKER_PLACE[language],
        express=workflow_type == "EXPRESS",
    )
    substitutions = {
        **local_cloud.idempotency_substitutions(),
        "PlaceOrderFunctionArn": place.arn,
        "SendEmailFunctionArn": emails.arn,
    }
    arn = local_cloud.create_state_machine("shop", definition, substitutions, workflow_type=workflow_type)
    run = local_cloud.run_sync if workflow_type == "EXPRESS" else local_cloud.run

    # When two identical orders arrive (in a Map: one execution with the order twice, then again)
    if mapped:
        results = [run(arn, {"orders": [ORDER]}), run(arn, {"orders": [ORDER]})]
        outputs = [result.output[0] for result in results]
    else:
        results = [run(arn, ORDER), run(arn, ORDER)]
        outputs = [result.output for result in results]

    # Then the order was placed once and the e-mail sent once, and both outputs carry the result
    # where the Task put it, and the marker beside it
    assert all(result.status == "SUCCEEDED" for result in results), [r.cause for r in results]
    assert local_cloud.lambdas.invocations(place.name) == 1
    assert local_cloud.lambdas.invocations(emails.name) == 1
    assert [output["placement"]["replayed"] for output in outputs] == [False, True]
    placed = [output["placed"] for output in outputs]
    assert placed[0] == placed[1]
    # (exactly where the plain Task puts its result: its ResultSelector's object, or its Output's field)
    order = placed[0]["confirmation"] if language == "JSONPath" else placed[0]
    assert (order["orderId"], order["status"]) == (ORDER["orderId"], "PLACED")
    assert outputs[1]["placement"]["firstExecution"] == results[0].arn


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"ResultPath": "$"}, "give it a ResultPath"),
        ({"ResultPath": "$.placement"}, "overlaps the Task's ResultPath"),
        ({"ResultPath": "$.placement.result"}, "overlaps the Task's ResultPath"),
        ({"OutputPath": "$.placed"}, "drop its OutputPath"),
    ],
)
def test_a_jsonpath_marker_without_a_place_of_its_own_is_refused(change: dict[str, Any], reason: str):
    machine = jsonpath_orders_machine()
    machine["States"]["PlaceOrder"].update(change)
    with pytest.raises(WrapError, match=reason):
        wrap_state(json.dumps(machine), "PlaceOrder", key_prefix="orders", replay_marker="$.placement")


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("{% $states.result.Payload %}", "an Output that is a JSON object"),
        ({"placement": "{% $states.result.Payload %}"}, "already has a field 'placement'"),
    ],
)
def test_a_jsonata_marker_without_a_place_of_its_own_is_refused(output: Any, reason: str):
    machine = jsonata_orders_machine()
    machine["States"]["PlaceOrder"]["Output"] = output
    with pytest.raises(WrapError, match=reason):
        wrap_state(json.dumps(machine), "PlaceOrder", key_prefix="orders", replay_marker="placement")


@pytest.mark.parametrize(
    ("language", "hook", "reason"),
    [
        ("JSONata", "{% $merge([$output, %}", "not valid JSONata"),
        ("JSONata", {"order.$": "$.output"}, "one JSONata expression"),
        ("JSONPath", "{% $output %}", "Parameters-style template"),
        ("JSONPath", {"order.$": "$.event"}, "reads neither"),
        ("JSONPath", {"at.$": "$.record.completed"}, "not 'completed'"),
        ("JSONPath", {"n.$": "States.Multiply($.output, 2)"}, "not an intrinsic function"),
        ("JSONPath", {"n.$": "States.ArrayLength($.output"}, "unbalanced"),
    ],
)
def test_a_hook_that_cannot_run_is_refused_when_the_machine_is_built(
    local_cloud: LocalCloud, language: str, hook: Any, reason: str
):
    # The standalone flow refuses it before anything is deployed; so does an inline step
    with pytest.raises(ReplayOptionError, match=reason):
        IdempotentService(local_cloud, query_language=language, replay_hook=hook)
    with pytest.raises(WrapError, match=reason):
        wrap_state(json.dumps(MACHINES[language]()), "PlaceOrder", key_prefix="orders", replay_hook=hook)
    assert local_cloud.sfn.list_state_machines()["stateMachines"] == []


@pytest.mark.parametrize("marker", ["result", "two words", ""])
def test_a_standalone_marker_is_a_field_name_of_its_own(local_cloud: LocalCloud, marker: str):
    with pytest.raises(ReplayOptionError, match="not a field name of its own"):
        IdempotentService(local_cloud, replay_marker=marker)


def test_a_parent_that_nests_the_flow_chooses_on_the_child_s_marker(local_cloud: LocalCloud, language: str):
    # Given the standalone flow with the marker, nested by a parent that confirms first runs only
    service = IdempotentService(local_cloud, query_language=language, replay_marker="idempotency")
    parent = {
        "StartAt": "Order",
        "States": {
            "Order": {
                "Type": "Task",
                "Resource": "arn:aws:states:::states:startExecution.sync:2",
                "Parameters": {"StateMachineArn": "${IdempotencyStateMachineArn}", "Input.$": "$"},
                "Next": "FirstTime",
            },
            "FirstTime": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.Output.idempotency.replayed", "BooleanEquals": False, "Next": "Confirm"}
                ],
                "Default": "AlreadyConfirmed",
            },
            "Confirm": {"Type": "Pass", "Result": "confirmed", "End": True},
            "AlreadyConfirmed": {"Type": "Pass", "Result": "replayed", "End": True},
        },
    }
    arn = local_cloud.create_state_machine(
        "shop-parent", json.dumps(parent), {"IdempotencyStateMachineArn": service.state_machine_arn}
    )

    # When two identical orders go through the parent
    first, second = local_cloud.run(arn, ORDER), local_cloud.run(arn, ORDER)

    # Then the first confirms and the second knows it replayed; the order was placed once
    assert (first.output, second.output) == ("confirmed", "replayed")
    assert service.business_runs == 1
