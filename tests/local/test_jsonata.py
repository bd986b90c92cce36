"""JSONata machines on the local engine (compat fix 15), modelled on the examples of the AWS
Step Functions developer guide: each asserts the output AWS documents."""

from __future__ import annotations

import datetime
import hashlib
import json
import time
import uuid
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.engine.results import ExecutionResult
from sfn_idempotency.local.languages import jsonata as stepfunctions_jsonata


def run(
    cloud: LocalCloud, states: dict[str, Any], execution_input: Any, **substitutions: str
) -> ExecutionResult:
    definition = {"QueryLanguage": "JSONata", "StartAt": next(iter(states)), "States": states}
    name = f"jsonata-{len(cloud.sfn.list_state_machines()['stateMachines'])}"
    return cloud.run(cloud.create_state_machine(name, json.dumps(definition), substitutions), execution_input)


def test_transforming_data_with_output_and_the_context(local_cloud: LocalCloud):
    # "Transforming data with JSONata": Output builds the next state's input from $states.input
    states = {
        "Summarize": {
            "Type": "Pass",
            "Output": {
                "customer": "{% $uppercase($states.input.customer.name) %}",
                "total": "{% $sum($states.input.items.(price * quantity)) %}",
                "skus": "{% $states.input.items.sku %}",
                "execution": "{% $states.context.Execution.Name %}",
            },
            "End": True,
        }
    }
    order = {
        "customer": {"name": "ana"},
        "items": [{"sku": "a", "price": 2.5, "quantity": 2}, {"sku": "b", "price": 1, "quantity": 3}],
    }

    result = run(local_cloud, states, order)

    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "customer": "ANA",
        "total": 8,
        "skus": ["a", "b"],
        "execution": result.arn.rsplit(":", 1)[1],
    }


def test_variables_are_assigned_and_read_later_and_scoped_in_a_map(local_cloud: LocalCloud):
    # "Passing data between states with variables": Assign, then read in any later state; a Map
    # iteration reads the outer scope, and its own variables end with it
    states = {
        "Remember": {
            "Type": "Pass",
            "Assign": {"rate": "{% $states.input.rate %}", "label": "{% $states.input.label %}"},
            "Next": "Convert",
        },
        "Convert": {
            "Type": "Map",
            "Items": "{% $states.input.amounts %}",
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Scale",
                "States": {
                    "Scale": {
                        "Type": "Pass",
                        "Assign": {"inner": "{% $states.input * $rate %}"},
                        "Next": "Emit",
                    },
                    "Emit": {"Type": "Pass", "Output": "{% $inner %}", "End": True},
                },
            },
            "Next": "Report",
        },
        "Report": {
            "Type": "Pass",
            "Output": {"converted": "{% $states.input %}", "label": "{% $label %}"},
            "End": True,
        },
    }

    result = run(local_cloud, states, {"rate": 3, "label": 'say "x"', "amounts": [1, 2, 5]})

    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"converted": [3, 6, 15], "label": 'say "x"'}


def test_a_map_with_item_selector_and_a_choice_with_conditions(local_cloud: LocalCloud):
    states = {
        "Classify": {
            "Type": "Map",
            "Items": "{% $states.input.orders %}",
            "ItemSelector": {
                "index": "{% $states.context.Map.Item.Index %}",
                "amount": "{% $states.context.Map.Item.Value.amount %}",
            },
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Size",
                "States": {
                    "Size": {
                        "Type": "Choice",
                        "Choices": [{"Condition": "{% $states.input.amount >= 100 %}", "Next": "Large"}],
                        "Default": "Small",
                    },
                    "Large": {
                        "Type": "Pass",
                        "Output": "{% $string($states.input.index) & ':large' %}",
                        "End": True,
                    },
                    "Small": {
                        "Type": "Pass",
                        "Output": "{% $string($states.input.index) & ':small' %}",
                        "End": True,
                    },
                },
            },
            "End": True,
        }
    }

    result = run(local_cloud, states, {"orders": [{"amount": 5}, {"amount": 150}]})

    assert result.output == ["0:small", "1:large"]


def test_a_map_over_its_whole_input_selects_each_item_with_the_input_at_hand(local_cloud: LocalCloud):
    # Given a Map without Items (its input is the array) whose ItemSelector reads the item, its
    # index and the Map's input (fix 155: moto failed it with IndexError as the cause)
    states = {
        "Each": {
            "Type": "Map",
            "ItemSelector": {
                "item": "{% $states.context.Map.Item.Value %}",
                "index": "{% $states.context.Map.Item.Index %}",
                "of": "{% $count($states.input) %}",
            },
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Keep",
                "States": {"Keep": {"Type": "Pass", "End": True}},
            },
            "End": True,
        }
    }

    # When it runs over two items
    result = run(local_cloud, states, [{"a": 1}, "b"])

    # Then each iteration got its selection
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == [{"item": {"a": 1}, "index": 0, "of": 2}, {"item": "b", "index": 1, "of": 2}]


def test_a_catch_reads_the_error_output_and_a_timeout_is_an_expression(local_cloud: LocalCloud):
    # Given a Lambda that fails, called with TimeoutSeconds from the input
    def failing(event: Any, context: Any) -> Any:
        raise type("PaymentDeclined", (Exception,), {})("card declined")

    function = local_cloud.add_function("failing", failing)
    states = {
        "Charge": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Arguments": {"FunctionName": "${Fn}", "Payload": "{% $states.input %}"},
            "TimeoutSeconds": "{% $states.input.timeout %}",
            "Catch": [
                {
                    "ErrorEquals": ["PaymentDeclined"],
                    "Output": {"error": "{% $states.errorOutput.Error %}", "input": "{% $states.input.id %}"},
                    "Next": "Declined",
                }
            ],
            "End": True,
        },
        "Declined": {"Type": "Pass", "End": True},
    }

    result = run(local_cloud, states, {"id": "p-1", "timeout": 5}, Fn=function.arn)

    assert result.output == {"error": "PaymentDeclined", "input": "p-1"}


def test_the_functions_step_functions_adds(local_cloud: LocalCloud):
    states = {
        "Functions": {
            "Type": "Pass",
            "Output": {
                "partition": "{% $partition([1, 2, 3, 4, 5], 2) %}",
                "range": "{% $range(0, 10, 5) %}",
                "hash": "{% $hash($states.input.text, 'SHA-256') %}",
                "seeded": "{% [$random(7), $random(7)] %}",
                "uuid": "{% $uuid() %}",
                "parsed": "{% $parse($states.input.json) %}",
            },
            "End": True,
        }
    }

    output = run(local_cloud, states, {"text": "abc", "json": '{"a": [1]}'}).output

    assert output["partition"] == [[1, 2], [3, 4], [5]]
    assert output["range"] == [0, 5, 10]
    assert output["hash"] == hashlib.sha256(b"abc").hexdigest()
    first, second = output["seeded"]
    assert first == second
    assert 0 <= first < 1
    assert uuid.UUID(output["uuid"]).version == 4
    assert output["parsed"] == {"a": [1]}


@pytest.mark.parametrize(
    ("expression", "cause"),
    [
        ("$states.input.a + 'x'", "The right side of the + operator must evaluate to a number"),
        ("$eval('1 + 1')", "the JSONata function $eval is not supported by Step Functions"),
        ("$states.input.missing", "returned nothing (undefined)"),
    ],
)
def test_an_expression_that_fails_is_a_query_evaluation_error(
    local_cloud: LocalCloud, expression: str, cause: str
):
    # AWS: "States.QueryEvaluationError: query evaluation failed in a JSONata state"
    result = run(
        local_cloud, {"Compute": {"Type": "Pass", "Output": f"{{% {expression} %}}", "End": True}}, {"a": 1}
    )
    assert (result.status, result.error) == ("FAILED", "States.QueryEvaluationError")
    assert cause in result.cause
    assert "'Compute'" in result.cause


def test_a_jsonpath_state_inside_a_jsonata_machine_is_refused(local_cloud: LocalCloud):
    # AWS: a machine whose top level is JSONata may not contain JSONPath states
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "A",
        "States": {"A": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": True}},
    }
    with pytest.raises(Exception, match="JSONata"):
        local_cloud.create_state_machine("mixed", json.dumps(definition), {})


def test_a_refused_definition_leaves_no_trace_for_the_next_one(local_cloud: LocalCloud):
    # Given a JSONata machine with a JSONPath state, refused mid-parse
    mixed = {
        "QueryLanguage": "JSONata",
        "StartAt": "A",
        "States": {"A": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": True}},
    }
    with pytest.raises(Exception, match="JSONata"):
        local_cloud.create_state_machine("mixed", json.dumps(mixed), {})

    # When a JSONPath machine is created after it, Then it is accepted and runs (fix 16)
    plain = {"StartAt": "A", "States": {"A": {"Type": "Pass", "Parameters": {"a.$": "$.a"}, "End": True}}}
    machine = local_cloud.create_state_machine("plain", json.dumps(plain), {})
    assert local_cloud.run(machine, {"a": 1}).output == {"a": 1}


@pytest.mark.parametrize(
    ("state", "location"),
    [
        ({"Type": "Pass", "Output": "{% $doesNotExist %}", "End": True}, "Output"),
        ({"Type": "Pass", "Output": {"result": "{% $doesNotExist %}"}, "End": True}, "Output/result"),
        ({"Type": "Pass", "Assign": {"result": "{% $doesNotExist %}"}, "End": True}, "Assign/result"),
    ],
)
def test_an_expression_that_returns_nothing_names_its_field(
    local_cloud: LocalCloud, state: dict[str, Any], location: str
):
    # Given a JSONata state whose expression returns nothing (recorded: fix 78)
    definition = json.dumps({"QueryLanguage": "JSONata", "StartAt": "State0", "States": {"State0": state}})
    arn = local_cloud.create_state_machine(f"undefined-{location.replace('/', '-')}", definition, {})

    # When it runs
    result = local_cloud.run(arn, {})

    # Then the error names the field, in the cause and as the failed evaluation's location
    assert (result.status, result.error) == ("FAILED", "States.QueryEvaluationError")
    assert result.cause == (
        "An error occurred while executing the state 'State0' (entered at the event id #2). The JSONata "
        f"expression '$doesNotExist' specified for the field '{location}' returned nothing (undefined)."
    )
    (failed,) = [e for e in result.history if e["type"] == "EvaluationFailed"]
    assert failed["evaluationFailedEventDetails"]["location"] == location
    assert failed["previousEventId"] == 0  # it follows what its state's entry followed (fix 74)


STATES_SAMPLE: dict[str, Any] = {
    "input": {"quote": 'say "hi"', "accent": "café", "none": None, "items": [1, 2.5, None, {"deep": True}]},
    "context": {"Execution": {"StartTime": datetime.datetime(2026, 12, 2, 13, 24, tzinfo=datetime.UTC)}},
    "result": {1: "an integer key"},
}


def test_states_handed_over_by_name_binds_what_its_json_text_bound():
    # Given $states with quotes, accents, nulls, a timestamp and a key that is not text
    as_text = f"({stepfunctions_jsonata.encode_declarations({'$states': STATES_SAMPLE})}$states)"
    by_name = f"({stepfunctions_jsonata.encode_states({'$states': STATES_SAMPLE})}$states)"
    # When each is read back (fix 86 against fix 15's text)
    text_bindings, text_body = stepfunctions_jsonata._declared_bindings(as_text)
    name_bindings, name_body = stepfunctions_jsonata._declared_bindings(by_name)
    # Then both bind the same values to the same body, and evaluate alike
    assert (name_bindings, name_body) == (text_bindings, text_body)
    assert stepfunctions_jsonata.evaluate(by_name) == stepfunctions_jsonata.evaluate(as_text)
    # And a binding is a copy: the state's own data is untouched by what the evaluator holds
    name_bindings["states"]["input"]["items"].append("more")
    assert STATES_SAMPLE["input"]["items"] == [1, 2.5, None, {"deep": True}]


def test_a_checked_result_reads_the_named_states_too():
    # moto checks a null result with $exists(<the composed text>)
    declared = stepfunctions_jsonata.encode_states({"$states": {"input": {"present": None}}})
    exists = [
        stepfunctions_jsonata.evaluate(f"$exists(({declared}$states.input.{name}))")
        for name in ("present", "absent")
    ]
    assert exists == [True, False]


def test_a_named_value_evaluated_too_late_is_a_named_error():
    declared = stepfunctions_jsonata.encode_states({"$states": {"input": 1}})
    for _ in range(stepfunctions_jsonata._NAMES_KEPT):
        stepfunctions_jsonata.encode_states({"$states": {}})
    with pytest.raises(stepfunctions_jsonata.JSONataEvaluationError, match="evaluated too late"):
        stepfunctions_jsonata.evaluate(f"({declared}$states.input)")


def test_the_time_of_day_is_each_evaluation_s_own():
    # Given $millis() evaluated once (its expression kept), then another expression made
    first = stepfunctions_jsonata.evaluate("$millis()")
    stepfunctions_jsonata.evaluate("$string($millis()) & 'another expression'")
    time.sleep(0.005)  # (time passes: what the evaluations read must differ)
    later = int(time.time() * 1000)

    # When the first is evaluated again (as a Task's retry evaluates its Arguments again)
    again = stepfunctions_jsonata.evaluate("$millis()")

    # Then it reads the time of this evaluation, not of one before it
    assert first <= later <= again
    assert stepfunctions_jsonata.evaluate("$toMillis($now())") >= again
