"""The flow in two query languages is one flow: idempotency.jsonata.asl.json has the states,
transitions, retries, DynamoDB conditions and error names of idempotency.asl.json."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sfn_idempotency.flow.definitions import placeholders
from sfn_idempotency.flow.graph import mermaid
from sfn_idempotency.flow.resources import IDEMPOTENCY_FLOWS

JSONPATH, JSONATA = (json.loads(path.read_text(encoding="utf-8")) for path in IDEMPOTENCY_FLOWS.values())
# What the two must share, state by state: the rest (how values are read) is each language's own.
SHARED_FIELDS = ("Type", "Resource", "Next", "Default", "End", "Retry", "Error")
DYNAMODB_FIELDS = (
    "TableName",
    "ConditionExpression",
    "UpdateExpression",
    "ExpressionAttributeNames",
    "ConsistentRead",
)


def transitions(state: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """(ErrorEquals, Next) of each Catch, and the Next of each Choice rule, in order."""
    catches = [(tuple(c["ErrorEquals"]), c["Next"]) for c in state.get("Catch", [])]
    return catches + [((), rule["Next"]) for rule in state.get("Choices", [])]


def test_the_jsonata_flow_declares_its_language_and_the_same_start():
    assert JSONATA["QueryLanguage"] == "JSONata"
    assert JSONPATH["QueryLanguage"] == "JSONPath"
    assert JSONATA["StartAt"] == JSONPATH["StartAt"]
    assert list(JSONATA["States"]) == list(JSONPATH["States"])


@pytest.mark.parametrize("name", list(JSONPATH["States"]))
def test_each_state_has_the_same_type_transitions_retries_and_error(name: str):
    ours, theirs = JSONPATH["States"][name], JSONATA["States"][name]
    for field in SHARED_FIELDS:
        if field == "Error" and str(ours.get("ErrorPath", "")).endswith(".Error"):
            continue  # the business step's own error, read in each language's way
        assert theirs.get(field) == ours.get(field), (name, field)
    assert transitions(theirs) == transitions(ours), name
    if isinstance(ours.get("Arguments"), dict):  # both JSONata (Claim, the provable key's): its literals
        ours = {"Parameters": {k: v for k, v in ours["Arguments"].items() if not str(v).startswith("{%")}}
    for field in DYNAMODB_FIELDS:
        assert theirs.get("Arguments", {}).get(field) == ours.get("Parameters", {}).get(field), (name, field)


def test_both_need_the_same_placeholders():
    assert placeholders(json.dumps(JSONATA)) == placeholders(json.dumps(JSONPATH))


def test_the_jsonata_flow_reads_no_jsonpath():
    text = json.dumps(JSONATA["States"])
    for jsonpath_field in (
        "Parameters",
        "ResultPath",
        "ResultSelector",
        "InputPath",
        "OutputPath",
        "CausePath",
        '.$"',
    ):
        assert jsonpath_field not in text, jsonpath_field


def test_both_draw_the_same_graph_but_for_the_conditions():
    def edges(path: Any) -> list[str]:
        return [line.split(":")[0].strip() for line in mermaid(path).splitlines()]

    jsonpath_file, jsonata_file = IDEMPOTENCY_FLOWS.values()
    assert edges(jsonata_file) == edges(jsonpath_file)
