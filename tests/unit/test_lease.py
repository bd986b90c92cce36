"""The lease is computed from the definition's own Retry policies, so it covers every attempt."""

from __future__ import annotations

import itertools
import json

import pytest

from sfn_idempotency.flow.definitions import (
    LEASE_MARGIN_SECONDS,
    with_lease,
    worst_case_backoff_seconds,
    worst_case_lease_seconds,
)
from sfn_idempotency.flow.resources import IDEMPOTENCY_ASL
from sfn_idempotency.lambdas.compute_key.computation import LONGEST_WAIT_SECONDS, wait_schedule
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.lambdas.compute_key.settings import load_settings
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


@pytest.mark.parametrize(("lease", "longest"), [(1, None), (7, None), (100, None), (900, None), (100, 10)])
def test_a_waiting_duplicate_backs_off_within_the_lease(lease: int, longest: int | None):
    # Given waiting on, a lease, and perhaps a shorter longest wait
    extra = {"IDEMPOTENCY_MAX_WAIT_SECONDS": str(longest)} if longest else {}
    settings = load_settings(
        {
            "IDEMPOTENCY_KEY_PREFIX": "orders",
            "IDEMPOTENCY_TIMEOUT_SECONDS": "1",
            "IDEMPOTENCY_LEASE_SECONDS": str(lease),
            "IDEMPOTENCY_WAIT_FOR_IN_PROGRESS": "true",
            **extra,
        }
    )
    # When the schedule is computed
    schedule = wait_schedule(settings)
    # Then it doubles from one second up to the cap, and all of it fits in the lease (or the cap)
    assert schedule[0] == 1
    assert all(b == min(2 * a, LONGEST_WAIT_SECONDS) for a, b in itertools.pairwise(schedule))
    limit = min(longest or lease, lease)
    assert sum(schedule) <= limit < sum(schedule) + min(2 * schedule[-1], LONGEST_WAIT_SECONDS)


def test_by_default_a_duplicate_has_no_waits():
    assert wait_schedule(load_settings({"IDEMPOTENCY_KEY_PREFIX": "orders"})) == []
