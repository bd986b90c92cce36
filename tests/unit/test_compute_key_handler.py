"""The key Lambda's handler: output contract, clock, logging and input errors."""

from __future__ import annotations

import json
import logging
import re

import pytest

from sfn_idempotency.flow.resources import LAMBDAS_DIR
from sfn_idempotency.lambdas.compute_key import clock
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError, IdempotencyKeyError
from sfn_idempotency.local.engine.lambdas import LocalLambdaContext, cold_start
from tests.unit.powertools_reference import powertools_key, powertools_validation

HANDLER = "compute_key.handler.handler"
NOW_MS = 1_800_000_000_123


class FixedClock:
    def now_ms(self) -> int:
        return NOW_MS


@pytest.fixture
def fixed_clock():
    previous = clock.install(FixedClock())
    yield
    clock.install(previous)


def key_lambda(**environment: str):
    handler = cold_start(LAMBDAS_DIR, HANDLER, {"IDEMPOTENCY_KEY_PREFIX": "orders", **environment})
    context = LocalLambdaContext(
        "compute-key", "arn:aws:lambda:us-east-1:123456789012:function:compute-key", 10
    )
    return lambda event: handler(event, context)


def test_output_carries_key_hash_and_clock_values(fixed_clock):
    # Given a key Lambda keyed on orderId with validation on amount
    invoke = key_lambda(
        IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId",
        IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH="amount",
        IDEMPOTENCY_EXPIRES_AFTER_SECONDS="600",
        IDEMPOTENCY_TIMEOUT_SECONDS="45",
    )
    event = {"orderId": "o-1", "amount": 5}

    # When invoked as the state machine invokes it
    output = invoke({"event": event})

    # Then it echoes the event and computes everything the ASL needs, camelCased, with a claim token
    # of its own (32 hex digits, fresh each time)
    now = NOW_MS // 1000
    claim_token = output["idempotency"].pop("claimToken")
    assert re.fullmatch(r"[0-9a-f]{32}", claim_token)
    assert invoke({"event": event})["idempotency"]["claimToken"] != claim_token
    assert output == {
        "event": event,
        "claim": {"attempts": 1},
        "idempotency": {
            "disabled": False,
            "hasKey": True,
            "key": powertools_key(event, prefix="orders", jmespath="orderId"),
            "validation": powertools_validation(event, jmespath="amount"),
            "now": now,
            "nowMs": NOW_MS,
            "nowMsText": str(NOW_MS),
            "expiration": now + 600,
            "inProgressExpiration": NOW_MS + 45_000,
            "completedExpiration": now + 45 + 600,
            "timeoutSeconds": 45,
            "maxClaimAttempts": 3,
            # by default a duplicate does not wait
            "waitSchedule": [],
            "maxWaits": 0,
        },
        "wait": {"attempts": 0},
    }
    json.dumps(output)


def test_moving_the_clock_moves_every_time_value():
    # Given a movable clock
    class Clock:
        ms = NOW_MS

        def now_ms(self) -> int:
            return self.ms

    moved = Clock()
    previous = clock.install(moved)
    try:
        invoke = key_lambda(IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId")
        before = invoke({"event": {"orderId": "o"}})["idempotency"]
        # When it moves an hour forward
        moved.ms += 3_600_000
        after = invoke({"event": {"orderId": "o"}})["idempotency"]
    finally:
        clock.install(previous)
    # Then every clock value moved by exactly that
    assert after["now"] - before["now"] == 3600
    assert after["inProgressExpiration"] - before["inProgressExpiration"] == 3_600_000
    assert after["key"] == before["key"]


@pytest.mark.parametrize("event", [{"orderId": 0}, {"orderId": False}])
def test_zero_and_false_are_keys(event, fixed_clock):
    output = key_lambda(IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId")({"event": event})
    assert output["idempotency"]["hasKey"] is True
    assert output["idempotency"]["key"] == powertools_key(event, prefix="orders", jmespath="orderId")


def test_missing_key_is_reported_and_logged(fixed_clock, caplog):
    # Given an event without the key field
    invoke = key_lambda(IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId")

    # When invoked
    with caplog.at_level(logging.WARNING):
        output = invoke({"event": {"amount": 1}})

    # Then the output says there is no key, and a warning names the expression
    assert output["idempotency"]["hasKey"] is False
    assert output["idempotency"]["key"] is None
    assert any("No idempotency key value found" in record.getMessage() for record in caplog.records)


def test_missing_key_raises_when_required(fixed_clock):
    invoke = key_lambda(IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId", IDEMPOTENCY_RAISE_ON_NO_KEY="true")
    with pytest.raises(
        IdempotencyKeyError, match=r"No data found to create a hashed idempotency key \(JMESPath 'orderId'\)"
    ):
        invoke({"event": {"amount": 1}})


@pytest.mark.parametrize(
    ("expression", "event"),
    [
        ("powertools_json(body).orderId", {"body": "{not json"}),
        ("powertools_json(body).orderId", {"body": 42}),
        ("powertools_base64_gzip(data)", {"data": "bm90IGd6aXA="}),
    ],
)
def test_undecodable_payload_is_a_key_error_naming_the_expression(expression, event, fixed_clock):
    invoke = key_lambda(IDEMPOTENCY_EVENT_KEY_JMESPATH=expression)
    with pytest.raises(
        IdempotencyKeyError, match=f"JMESPath {re.escape(repr(expression))} cannot be evaluated"
    ):
        invoke({"event": event})


def test_validation_expression_also_gets_powertools_functions(fixed_clock):
    event = {"body": json.dumps({"orderId": "o", "amount": 3})}
    output = key_lambda(
        IDEMPOTENCY_EVENT_KEY_JMESPATH="powertools_json(body).orderId",
        IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH="powertools_json(body).amount",
    )({"event": event})
    assert output["idempotency"]["validation"] == powertools_validation(
        event, jmespath="powertools_json(body).amount"
    )


def test_disabled_computes_no_key(fixed_clock):
    output = key_lambda(IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId", POWERTOOLS_IDEMPOTENCY_DISABLED="true")(
        {"event": {"orderId": "o"}}
    )
    assert output["idempotency"]["disabled"] is True
    assert output["idempotency"]["key"] is None


@pytest.mark.parametrize("state", [{"orderId": "o"}, [], None])
def test_state_without_event_envelope_is_rejected(state, fixed_clock):
    with pytest.raises(IdempotencyKeyError, match="expects"):
        key_lambda()(state)


def test_bad_configuration_fails_the_cold_start_not_the_first_request():
    with pytest.raises(ConfigurationError, match="IDEMPOTENCY_HASH_FUNCTION"):
        key_lambda(IDEMPOTENCY_HASH_FUNCTION="nope")


def test_the_key_is_logged_with_its_execution_and_without_the_event(fixed_clock, caplog):
    # Given the key Lambda at INFO; When the flow asks for a key, naming its execution
    invoke = key_lambda(IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId", POWERTOOLS_LOG_LEVEL="INFO")
    execution = "arn:aws:states:us-east-1:123456789012:execution:orders:e-1"
    # (the logger is shared by every key Lambda of the process, some of them quiet: set its level)
    with caplog.at_level(logging.INFO, logger="sfn-idempotency"):
        output = invoke({"event": {"orderId": "o-1", "card": "4111-SECRET"}, "execution": execution})

    # Then one JSON line names the key and the execution, so an operator finds any outcome's
    # record; and the event's values are in no line (each line as Powertools' formatter writes it:
    # the handler's stream is the first test's, pytest's capture is not)
    formatter = logging.getLogger("sfn-idempotency").handlers[0].formatter
    assert formatter is not None
    lines = [
        json.loads(formatter.format(record)) for record in caplog.records if record.name == "sfn-idempotency"
    ]
    (computed,) = [line for line in lines if line["message"] == "Idempotency key computed"]
    assert computed["idempotency_key"] == output["idempotency"]["key"]
    assert computed["execution_arn"] == execution
    assert not any("4111-SECRET" in json.dumps(line) or "o-1" in json.dumps(line) for line in lines)
