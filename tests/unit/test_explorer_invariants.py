"""The explorer's invariants and schedule tokens, on outcomes written by hand (no engine)."""

from __future__ import annotations

from typing import Any

import pytest

from sfn_idempotency.local.explorer import invariants
from sfn_idempotency.local.explorer.outcome import ExecutionTrace, ScheduleOutcome
from sfn_idempotency.local.explorer.runs import ABANDONED, RETURNED, EffectRun, Subject
from sfn_idempotency.local.explorer.schedules import Fault, Hold, Schedule, Step
from sfn_idempotency.local.explorer.target import Target


class _Cloud:
    """A target's cloud is not asked anything by the invariants."""


def target(**options: Any) -> Target:
    cloud: Any = _Cloud()
    return Target(
        cloud, "arn:aws:states:us-east-1:123456789012:stateMachine:m", [{"id": 1}], ["pay"], **options
    )


def run(number: int, execution: str, fate: str = RETURNED, **facts: Any) -> EffectRun:
    return EffectRun(
        order=number,  # one function: its runs' numbers are their order
        number=number,
        function="pay",
        execution=execution,
        entered_ms=number,
        claim_until_ms=facts.pop("claim_until_ms", None),
        completed_before=facts.pop("completed_before", False),
        epoch=facts.pop("epoch", 0),
        fate=fate,
        subject=Subject(execution, ""),
        **facts,
    )


def found(outcome: ScheduleOutcome, **options: Any) -> tuple[set[str], set[str]]:
    invariants.check(outcome, target(**options))
    return {v.invariant for v in outcome.violations}, {n.invariant for n in outcome.notes}


def test_a_failure_outside_the_flows_names_is_not_safe_to_retry():
    outcome = ScheduleOutcome(
        Schedule(), executions=[ExecutionTrace("E1", "a", 0, status="FAILED", error="States.Runtime")]
    )
    assert found(outcome)[0] == {invariants.UNSAFE_ERROR}
    named = ScheduleOutcome(
        Schedule(), executions=[ExecutionTrace("E1", "a", 0, status="FAILED", error="Declined")]
    )
    assert found(named, safe_errors=frozenset({"Declined"}))[0] == set()


def test_a_key_that_a_new_request_cannot_take_after_the_leases_is_stuck():
    probes = [
        ExecutionTrace("P1", "p1", 0, probe=True, status="FAILED", error="IdempotencyAlreadyInProgressError"),
        ExecutionTrace("P2", "p2", 0, probe=True, status="FAILED", error="IdempotencyAlreadyInProgressError"),
    ]
    assert found(ScheduleOutcome(Schedule(), executions=probes))[0] == {
        invariants.CLAIM_LEFT,
        invariants.KEY_STUCK,
    }


def test_a_run_abandoned_mid_call_and_run_again_is_at_least_once_by_nature():
    outcome = ScheduleOutcome(Schedule(), runs=[run(1, "E1", ABANDONED, interrupted=True), run(2, "E2")])
    assert found(outcome) == (set(), {invariants.AT_LEAST_ONCE})


def test_two_certain_runs_of_one_record_lifetime_are_a_violation_and_of_two_lifetimes_are_not():
    twice = ScheduleOutcome(Schedule(), runs=[run(1, "E1"), run(2, "E2")])
    assert found(twice)[0] == {invariants.TWO_SUCCESSES}
    after_expiry = ScheduleOutcome(Schedule(), runs=[run(1, "E1"), run(2, "E2", epoch=1)])
    assert found(after_expiry)[0] == set()


def test_answers_differ_where_they_differ():
    traces = [
        ExecutionTrace("E1", "a", 0, status="SUCCEEDED", output={"order": {"id": "x", "n": 1}}),
        ExecutionTrace("E2", "b", 0, status="SUCCEEDED", output={"order": {"id": "y", "n": 1}}),
    ]
    outcome = ScheduleOutcome(Schedule(), executions=traces)
    invariants.check(outcome, target())
    (violation,) = outcome.violations
    assert violation.message == """E2's answer differs from E1's at $.order.id: "y" against "x\""""


@pytest.mark.parametrize(
    ("answer", "violated"),
    [({"n": 1}, False), ({"n": 2}, False), ({"n": 3}, True)],
    ids=["the first lifetime's", "the second lifetime's", "neither's"],
)
def test_an_execution_that_ran_across_an_expiry_answers_as_one_of_the_lifetimes_it_spanned(
    answer: dict[str, int], violated: bool
):
    # Given E1 answering in the first record lifetime, P1 in the second, and E2 running across both
    traces = [
        ExecutionTrace("E1", "a", 0, status="SUCCEEDED", output={"n": 1}),
        ExecutionTrace("E2", "b", 0, status="SUCCEEDED", output=answer, ended_in_epoch=1),
        ExecutionTrace("P1", "c", 0, probe=True, status="SUCCEEDED", output={"n": 2}, began_in_epoch=1),
    ]
    outcome = ScheduleOutcome(Schedule(), executions=traces)
    # When checked, Then only an answer of neither lifetime is a violation
    invariants.check(outcome, target())
    assert [v.invariant for v in outcome.violations] == ([invariants.DIFFERENT_ANSWERS] if violated else [])


def test_an_execution_that_ran_across_an_expiry_may_be_its_lifetime_s_only_answer():
    # Given E1 held across the expiry, and P1 answering after it: E1 may have read before it
    traces = [
        ExecutionTrace("E1", "a", 0, status="SUCCEEDED", output={"n": 1}, ended_in_epoch=1),
        ExecutionTrace("P1", "b", 0, probe=True, status="SUCCEEDED", output={"n": 2}, began_in_epoch=1),
    ]
    outcome = ScheduleOutcome(Schedule(), executions=traces)
    invariants.check(outcome, target())
    assert outcome.violations == []


@pytest.mark.parametrize(
    "steps",
    [
        (Step("start"),),
        (
            Step("start", hold=Hold(state="Complete"), faults=(Fault("dynamodb:PutItem", "throttled", 2),)),
            Step("stop", execution=1, hold_helpers=True),
            Step("clock", past="lease"),
            Step("redrive", hold=Hold(function="pay")),
        ),
    ],
)
def test_a_schedule_is_its_token(steps: tuple[Step, ...]):
    schedule = Schedule(steps)
    assert Schedule.from_token(schedule.token()) == schedule


def test_a_token_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="not a replay token"):
        Schedule.from_token("sfnx1.bm90IGEgdG9rZW4=")
