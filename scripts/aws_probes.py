"""What the provable key (sfn_idempotency.flow.provable_key) relies on in Step Functions' JSONata that
no recording shows: each a TestState or ValidateStateMachineDefinition request, or one execution of a
machine of its own (made with the deployed flow's role, deleted after), its answer on the engine
pinned by the suite, compared with AWS's by ``make aws-check`` (ledger L50, "not yet observed").
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

DOMAIN_CLASS = r"/[^ !#-\[\]-~]/"
EXECUTION_DEADLINE_SECONDS = 60
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Probe:
    name: str
    ask: Callable[[Any, str], Any]  # (a Step Functions client, a role for a machine) -> what matters
    expected: Any


def _output(expression: str, given: str = "{}") -> Callable[[Any, str], Any]:
    state = {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% " + expression + " %}", "End": True}

    def ask(sfn: Any, role_arn: str) -> Any:
        answer = sfn.test_state(definition=json.dumps(state), input=given)
        return json.loads(answer["output"]) if answer.get("status") == "SUCCEEDED" else answer.get("error")

    return ask


def _validates(definition: dict[str, Any]) -> Callable[[Any, str], Any]:
    def ask(sfn: Any, role_arn: str) -> Any:
        return sfn.validate_state_machine_definition(definition=json.dumps(definition))["result"]

    return ask


_RENDERED = '{"a": ["x", true, null]}'
_JSONATA_CLAIM_IN_JSONPATH = {
    "StartAt": "Claim",
    "States": {
        "Claim": {
            "Type": "Pass",
            "QueryLanguage": "JSONata",
            "Output": "{% {'key': $hash($string($states.input), 'MD5')} %}",
            "Next": "Read",
        },
        "Read": {"Type": "Pass", "InputPath": "$.key", "End": True},
    },
}

# A Task that fails (a function that does not exist), is retried twice, then caught: each attempt's
# TaskScheduled event records the Arguments it evaluated.
_RETRIED_TASK = {
    "QueryLanguage": "JSONata",
    "StartAt": "Attempt",
    "States": {
        "Attempt": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Arguments": {
                "FunctionName": "sfn-idempotency-probe-absent",
                "Payload": {
                    "entered": "{% $states.context.State.EnteredTime %}",
                    "millis": "{% $millis() %}",
                    "uuid": "{% $uuid() %}",
                },
            },
            "Retry": [
                {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 2, "BackoffRate": 1}
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
            "End": True,
        },
        "Caught": {"Type": "Succeed"},
    },
}


def _history(sfn: Any, role_arn: str, definition: dict[str, Any], given: str) -> list[dict[str, Any]] | str:
    """The events of one execution of ``definition`` on ``given``, its machine deleted after."""
    machine = sfn.create_state_machine(
        name=f"sfn-idempotency-probe-{uuid.uuid4().hex[:12]}",
        definition=json.dumps(definition),
        roleArn=role_arn,
    )["stateMachineArn"]
    try:
        execution = sfn.start_execution(stateMachineArn=machine, input=given)["executionArn"]
        deadline = time.monotonic() + EXECUTION_DEADLINE_SECONDS
        while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
            if time.monotonic() > deadline:
                return "still running"
            time.sleep(POLL_SECONDS)
        return list(sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"])
    finally:
        sfn.delete_state_machine(stateMachineArn=machine)


def _across_task_retries(sfn: Any, role_arn: str) -> Any:
    """What each attempt of the retried Task evaluated: Claim's clock and token must not move."""
    events = _history(sfn, role_arn, _RETRIED_TASK, "{}")
    if isinstance(events, str):
        return events
    attempts = [
        json.loads(event["taskScheduledEventDetails"]["parameters"])["Payload"]
        for event in events
        if event["type"] == "TaskScheduled"
    ]
    return {
        "attempts": len(attempts),
        "EnteredTime the same": len({attempt["entered"] for attempt in attempts}) == 1,
        "$millis() anew": len({attempt["millis"] for attempt in attempts}) == len(attempts),
        "$uuid() anew": len({attempt["uuid"] for attempt in attempts}) == len(attempts),
    }


# A wrapped JSONPath step's KeepEvent: its input kept in a variable, read back by a later state's
# InputPath and by a Parameters field, as its business call and key Lambda read it.
_KEPT_IN_A_VARIABLE = {
    "StartAt": "KeepEvent",
    "States": {
        "KeepEvent": {"Type": "Pass", "Assign": {"kept.$": "$"}, "Next": "Read"},
        "Read": {
            "Type": "Pass",
            "InputPath": "$kept",
            "Parameters": {"event.$": "$", "again.$": "$kept"},
            "End": True,
        },
    },
}


def _read_back_from_a_variable(sfn: Any, role_arn: str) -> Any:
    """The execution's output text: numbers as the input wrote them, or as JSONata writes them."""
    events = _history(sfn, role_arn, _KEPT_IN_A_VARIABLE, '{"amount": 5.0}')
    if isinstance(events, str):
        return events
    (succeeded,) = [event for event in events if event["type"] == "ExecutionSucceeded"]
    return json.loads(succeeded["executionSucceededEventDetails"]["output"], parse_float=str)


PROBES = (
    Probe(
        "$hash hashes the text's UTF-8 bytes (MD5)",
        _output(f"$hash('{_RENDERED}', 'MD5')"),
        hashlib.md5(_RENDERED.encode()).hexdigest(),
    ),
    Probe(
        "$hash hashes the text's UTF-8 bytes (SHA-256)",
        _output(f"$hash('{_RENDERED}', 'SHA-256')"),
        hashlib.sha256(_RENDERED.encode()).hexdigest(),
    ),
    Probe(
        "the domain's class matches a quote, a backslash, a newline, non-ASCII; not printable ASCII",
        _output(
            "["
            + ", ".join(
                f"$contains({text}, {DOMAIN_CLASS})"
                for text in ("'a\"b'", "'a\\\\b'", "'x\\n'", "'é'", "'ok ~!#[]{}'")
            )
            + "]"
        ),
        [True, True, True, True, False],
    ),
    Probe("an empty array kept as a field's value", _output("$lookup({'v': []}, 'v')"), []),
    Probe("an object without keys has none", _output("$count($keys({}))"), 0),
    Probe("a function is a value of its own type", _output("$type(function() { 1 })"), "function"),
    Probe(
        "an epoch in milliseconds written as digits",
        _output("$formatInteger(1796622667831, '0')"),
        "1796622667831",
    ),
    Probe("a number's input text is not kept (5.0 is 5)", _output("$string($states.input)", "5.0"), "5"),
    Probe(
        "a Task's retry evaluates its Arguments again: EnteredTime kept, $millis and $uuid anew",
        _across_task_retries,
        {"attempts": 3, "EnteredTime the same": True, "$millis() anew": True, "$uuid() anew": True},
    ),
    Probe("a JSONata state in a JSONPath machine is valid", _validates(_JSONATA_CLAIM_IN_JSONPATH), "OK"),
    Probe(
        "a JSONPath state reads a variable's number as it was assigned (5.0 stays 5.0)",
        _read_back_from_a_variable,
        {"event": {"amount": "5.0"}, "again": {"amount": "5.0"}},
    ),
)


def check(sfn: Any, role_arn: str, out: TextIO) -> int:
    """Each probe asked of ``sfn`` (a probe's own machine runs as ``role_arn``); the number whose
    answer differs from the engine's, each printed."""
    differing = 0
    for probe in PROBES:
        answer = probe.ask(sfn, role_arn)
        same = answer == probe.expected
        differing += not same
        print(
            f"  {'same' if same else 'DIFFERS'}  {probe.name}" + ("" if same else f": {answer!r}"), file=out
        )
    return differing
