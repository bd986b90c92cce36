"""The lease is computed from the definition's own Retry policies, so it covers every attempt."""

from __future__ import annotations

import json

import pytest

from sfn_idempotency.definitions import (
    LEASE_MARGIN_SECONDS,
    with_lease,
    worst_case_backoff_seconds,
    worst_case_lease_seconds,
)
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.resources import IDEMPOTENCY_ASL
from sfn_idempotency.settings import example_settings

ASL = IDEMPOTENCY_ASL.read_text(encoding="utf-8")


def test_backoff_sums_every_wait_of_every_retrier():
    # 1 + 2 + 4 (three attempts doubling from 1 s), and 5 + 5 (capped at 5 s)
    retriers = [
        {"ErrorEquals": ["A"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2},
        {
            "ErrorEquals": ["B"],
            "IntervalSeconds": 5,
            "MaxAttempts": 2,
            "BackoffRate": 3,
            "MaxDelaySeconds": 5,
        },
    ]
    assert worst_case_backoff_seconds(retriers) == 7 + 10


def test_backoff_uses_the_states_language_defaults():
    # IntervalSeconds 1, MaxAttempts 3, BackoffRate 2.0
    assert worst_case_backoff_seconds([{"ErrorEquals": ["States.ALL"]}]) == 1 + 2 + 4


def test_the_shipped_flow_leases_every_claim_and_business_attempt():
    # Given the flow's Retry policies, read from the file rather than restated here
    states = json.loads(ASL)["States"]
    claim = worst_case_backoff_seconds(states["Claim"]["Retry"])
    read = worst_case_backoff_seconds(states["Read"]["Retry"])
    execute_retriers = states["Execute"]["Retry"]
    attempts = 1 + sum(r["MaxAttempts"] for r in execute_retriers)
    # When the lease of a 30 s step with 3 claim attempts is computed
    lease = worst_case_lease_seconds(ASL, timeout_seconds=30, max_claim_attempts=3)
    # Then it spans every claim attempt's retries, every business attempt, their backoff and the margin
    expected = 3 * (claim + read) + attempts * 30 + worst_case_backoff_seconds(execute_retriers)
    assert lease == expected + LEASE_MARGIN_SECONDS
    assert attempts == 4


def test_more_retries_in_the_definition_mean_a_longer_lease():
    document = json.loads(ASL)
    document["States"]["Execute"]["Retry"][0]["MaxAttempts"] += 2
    longer = worst_case_lease_seconds(json.dumps(document), timeout_seconds=30, max_claim_attempts=3)
    assert longer >= worst_case_lease_seconds(ASL, timeout_seconds=30, max_claim_attempts=3) + 2 * 30


def test_a_replay_window_shorter_than_the_lease_is_refused():
    # A 60 s window with a 30 s step: the record would expire while a retry of the step may still run
    settings = example_settings({}, IDEMPOTENCY_EXPIRES_AFTER_SECONDS="60", IDEMPOTENCY_TIMEOUT_SECONDS="30")
    with pytest.raises(
        ConfigurationError, match=r"IDEMPOTENCY_EXPIRES_AFTER_SECONDS \(60\) must be at least the lease"
    ):
        with_lease(settings, ASL)
