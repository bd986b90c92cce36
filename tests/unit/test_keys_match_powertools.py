"""The key and validation hash equal what Powertools computes for the same configuration."""

from __future__ import annotations

import base64
import gzip
import json
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfn_idempotency.lambdas.compute_key.keys import idempotency_key, validation_hash
from tests.properties import examples
from tests.unit.powertools_reference import powertools_key, powertools_validation

API_GATEWAY_EVENT = {
    "resource": "/orders",
    "httpMethod": "POST",
    "headers": {"Idempotency-Key": "abc-123", "Content-Type": "application/json"},
    "body": json.dumps({"orderId": "o-42", "amount": 19.99, "items": [{"sku": "A", "qty": 2}]}),
    "isBase64Encoded": False,
}
SQS_RECORD = {
    "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
    "body": json.dumps({"orderId": "o-7", "customer": {"id": "c-1"}}),
    "attributes": {"ApproximateReceiveCount": "1"},
    "eventSource": "aws:sqs",
}
EVENTBRIDGE_EVENT = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "detail-type": "OrderPlaced",
    "source": "orders",
    "detail": {"orderId": "o-9", "amount": 10.0},
}
GZIPPED = {"data": base64.b64encode(gzip.compress(json.dumps({"orderId": "o-gz"}).encode())).decode()}
BASE64 = {"data": base64.b64encode(json.dumps({"orderId": "o-b64"}).encode()).decode()}

# (event, event-key JMESPath, validation JMESPath)
GOLDEN_CASES: list[tuple[str, Any, str, str]] = [
    ("api-gateway body", API_GATEWAY_EVENT, "powertools_json(body).orderId", "powertools_json(body).amount"),
    ("api-gateway header", API_GATEWAY_EVENT, 'headers."Idempotency-Key"', "powertools_json(body)"),
    ("sqs record body", SQS_RECORD, "powertools_json(body).[orderId, customer.id]", "messageId"),
    ("eventbridge detail", EVENTBRIDGE_EVENT, "detail.orderId", "detail"),
    ("whole event", EVENTBRIDGE_EVENT, "", "detail.amount"),
    ("nested unsorted", {"z": {"b": 1, "a": [3, {"y": 1, "x": 2}]}, "a": None}, "z", "z.a"),
    ("multiselect hash", {"user": "u", "order": "o"}, "{o: order, u: user}", "user"),
    ("unicode", {"name": "Zoë 注文 🍕", "id": "ünï"}, "[name, id]", "name"),
    ("float 10.0", {"amount": 10.0}, "amount", "amount"),
    ("float 0.1", {"amount": 0.1}, "amount", "amount"),
    ("int beyond 2^53", {"id": 2**53 + 1}, "id", "id"),
    ("huge int", {"id": 10**30}, "id", "id"),
    ("boolean false", {"flag": False}, "flag", "flag"),
    ("zero", {"n": 0}, "n", "n"),
    ("base64", BASE64, "powertools_json(powertools_base64(data)).orderId", "data"),
    ("base64 gzip", GZIPPED, "powertools_json(powertools_base64_gzip(data)).orderId", "data"),
    ("array event", [1, "two", {"three": 3}], "[2].three", "[0]"),
    ("string event", "just-a-string", "", "@"),
]

MISSING_CASES: list[tuple[str, Any, str]] = [
    ("null selection", {"a": 1}, "missing"),
    ("empty object", {"a": {}}, "a"),
    ("empty string", {"a": ""}, "a"),
    ("list of nulls", {"a": 1}, "[missing, other]"),
    ("multiselect of nulls", {"a": 1}, "{x: missing, y: other}"),
    ("empty list", {"a": []}, "a"),
    ("null event", None, ""),
]


@pytest.mark.parametrize(("name", "event", "key_path", "validation_path"), GOLDEN_CASES)
@pytest.mark.parametrize("hash_function", ["md5", "sha256"])
def test_key_and_validation_equal_powertools(name, event, key_path, validation_path, hash_function):
    # Given an event and a configuration that Powertools also understands
    # When both compute the key and the validation hash
    ours = idempotency_key(event, key_prefix="orders", expression=key_path, hash_function=hash_function)
    theirs = powertools_key(event, prefix="orders", jmespath=key_path, hash_function=hash_function)
    our_validation = validation_hash(event, expression=validation_path, hash_function=hash_function)
    their_validation = powertools_validation(event, jmespath=validation_path, hash_function=hash_function)

    # Then they agree exactly, and there is a key
    assert ours == theirs
    assert ours is not None
    assert ours.startswith("orders#")
    assert our_validation == their_validation


@pytest.mark.parametrize(("name", "event", "key_path"), MISSING_CASES)
def test_missing_selection_gives_no_key_as_powertools_decides(name, event, key_path):
    # Given a selection that Powertools treats as "no key"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = powertools_key(event, prefix="p", jmespath=key_path)

    # When we compute the key
    ours = idempotency_key(event, key_prefix="p", expression=key_path, hash_function="md5")

    # Then neither produces one
    assert theirs is None
    assert ours is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
EXPRESSIONS = ["", "orderId", "detail.orderId", "[orderId, amount]", "{a: orderId, b: detail}", "keys(@)"]


@pytest.mark.property
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order_id=json_values,
    detail=json_values,
    extra=st.dictionaries(st.text(max_size=6), json_values, max_size=3),
    expression=st.sampled_from(EXPRESSIONS),
)
def test_any_json_value_gets_the_powertools_key(order_id, detail, extra, expression):
    # Given an arbitrary JSON event
    event = {**extra, "orderId": order_id, "detail": {"orderId": detail}}

    # When both compute the key; Then they agree (including on "no key")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = powertools_key(event, prefix="fuzz", jmespath=expression)
    assert idempotency_key(event, key_prefix="fuzz", expression=expression, hash_function="md5") == theirs


@pytest.mark.property
@settings(max_examples=examples(100), deadline=None)
@given(event=json_values)
def test_any_whole_event_gets_the_powertools_key(event):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = powertools_key(event, prefix="whole", jmespath="")
    assert idempotency_key(event, key_prefix="whole", expression="", hash_function="md5") == theirs
