"""Static pins on the ASL for what no local run can show: moto ignores ConsistentRead, and a larger
Retry budget only shows as a longer outage on AWS. Each value is the documented one (docs/concepts/flow.md)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from sfn_idempotency.flow.resources import (
    IDEMPOTENCY_ASL,
    ORDER_PIPELINE_INLINE_ASL,
    ORDER_WORKFLOW_ASL,
    RELEASE_ASL,
    SQS_BATCH_ASL,
)

FLOW = json.loads(IDEMPOTENCY_ASL.read_text(encoding="utf-8"))["States"]
RELEASE = json.loads(RELEASE_ASL.read_text(encoding="utf-8"))["States"]
PIPELINE_INLINE = json.loads(ORDER_PIPELINE_INLINE_ASL.read_text(encoding="utf-8"))["States"]
BATCH = json.loads(SQS_BATCH_ASL.read_text(encoding="utf-8"))["States"]
# (MaxAttempts, IntervalSeconds, BackoffRate) of the one retrier each state has
DYNAMODB_BUDGET = (4, 1, 2)
LAMBDA_BUDGET = (3, 1, 2)
STEP_FUNCTIONS_BUDGET = (3, 1, 2)


def budget(state: dict[str, Any]) -> tuple[int, int, int]:
    (retrier,) = state["Retry"]
    assert retrier.get("JitterStrategy") == "FULL"
    return retrier["MaxAttempts"], retrier["IntervalSeconds"], retrier["BackoffRate"]


def test_the_read_after_a_failed_claim_is_strongly_consistent():
    # An eventually consistent read could miss the claim that just refused ours, and claim again
    assert FLOW["Read"]["Parameters"]["ConsistentRead"] is True


@pytest.mark.parametrize(
    ("states", "name", "expected"),
    [
        (FLOW, "Claim", DYNAMODB_BUDGET),
        (FLOW, "ClaimComputedKey", DYNAMODB_BUDGET),
        (FLOW, "Read", DYNAMODB_BUDGET),
        (FLOW, "Complete", DYNAMODB_BUDGET),
        (FLOW, "Release", DYNAMODB_BUDGET),
        (RELEASE, "KeyedRelease", DYNAMODB_BUDGET),
        (RELEASE, "ReleaseClaim", DYNAMODB_BUDGET),
        (FLOW, "ComputeKey", LAMBDA_BUDGET),
        (FLOW, "Execute", LAMBDA_BUDGET),
        (FLOW, "ExecuteWithoutRecord", LAMBDA_BUDGET),
        (RELEASE, "ComputeKey", LAMBDA_BUDGET),
    ],
)
def test_each_retry_budget_is_the_documented_one(
    states: dict[str, Any], name: str, expected: tuple[int, int, int]
):
    assert budget(states[name]) == expected


def test_the_nested_pipeline_retries_the_child_start_with_the_documented_budget():
    pipeline = json.loads(ORDER_WORKFLOW_ASL.read_text(encoding="utf-8"))["States"]
    assert budget(pipeline["PlaceOrder"]) == STEP_FUNCTIONS_BUDGET


# (MaxAttempts, IntervalSeconds, BackoffRate) of the inline steps' retry on in-progress: a duplicate
# waits up to 2+4+8+16+32 s for the first (within the Express limit of 300 s), then fails.
IN_PROGRESS_BUDGET = (5, 2, 2)


@pytest.mark.parametrize(
    "place_order",
    [PIPELINE_INLINE["PlaceOrder"], BATCH["PlaceEachOrder"]["ItemProcessor"]["States"]["PlaceOrder"]],
    ids=["pipeline", "batch"],
)
def test_the_inline_steps_retry_the_call_and_the_in_progress_key_with_the_documented_budgets(
    place_order: dict[str, Any],
):
    lambda_retrier, in_progress_retrier = place_order["Retry"]
    assert budget({"Retry": [lambda_retrier]}) == LAMBDA_BUDGET
    assert in_progress_retrier["ErrorEquals"] == ["IdempotencyAlreadyInProgressError"]
    assert budget({"Retry": [in_progress_retrier]}) == IN_PROGRESS_BUDGET


@pytest.mark.parametrize(
    ("state", "joiner", "clauses"),
    [
        # Claim: the key is free, or its record expired (Powertools'), or the record is this very
        # claim attempt's own (a retry whose first write landed, its answer lost)
        (
            FLOW["ClaimComputedKey"],
            " OR ",
            ["attribute_not_exists(#id)", "#expiry < :now", "#owner = :owner"],
        ),
        # After Read found a record in progress with a lease: Powertools' whole claim condition, so
        # the two claims together are Powertools' (a lease that ran out is taken over, atomically)
        (
            FLOW["TakeOverExpiredLease"],
            " OR ",
            [
                "attribute_not_exists(#id)",
                "#expiry < :now",
                "(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)",
                "#owner = :owner",
            ],
        ),
        # Complete: only the owner, this claim attempt (its claim, or the result it already wrote on a
        # retried attempt)
        (FLOW["Complete"], " AND ", ["#owner = :owner"]),
        # Release: only the owner, this claim attempt
        (FLOW["Release"], " AND ", ["#owner = :owner"]),
        # After the redrive fence: only the owner, the claim an earlier run made
        (FLOW["ReleaseStaleClaim"], " AND ", ["#owner = :owner"]),
        # The release workflow: only a claim of the run that ended last ('<ARN>#<run>#', or the ARN
        # alone in a record written before claim tokens), only while INPROGRESS: never one of a run
        # redriven after it looked
        (
            RELEASE["ReleaseClaim"],
            " AND ",
            ["(begins_with(#owner, :claims_of_ended_run) OR #owner = :owner)", "#status = :inprogress"],
        ),
    ],
)
def test_every_condition_is_exactly_its_clauses(state: dict[str, Any], joiner: str, clauses: list[str]):
    assert state["Parameters"]["ConditionExpression"] == joiner.join(clauses)


def test_the_provable_key_s_release_makes_the_same_conditional_delete():
    # KeyedRelease (JSONata: its key and values are expressions) deletes as ReleaseClaim deletes
    keyed, computed = RELEASE["KeyedRelease"], RELEASE["ReleaseClaim"]
    assert keyed["Resource"] == computed["Resource"]
    for field in ("TableName", "ConditionExpression", "ExpressionAttributeNames"):
        assert keyed["Arguments"][field] == computed["Parameters"][field], field
    assert set(keyed["Arguments"]["ExpressionAttributeValues"]) == set(
        computed["Parameters"]["ExpressionAttributeValues"]
    )
    assert keyed["Retry"] == computed["Retry"]
    # And what it cannot key goes to the key Lambda; a condition that fails releases nothing
    assert [(c["ErrorEquals"], c["Next"]) for c in keyed["Catch"]] == [
        (["DynamoDB.ConditionalCheckFailedException"], "NothingToRelease"),
        (["States.QueryEvaluationError"], "ComputeKey"),
    ]


def test_the_provable_key_s_claim_makes_the_same_conditional_write():
    # Claim (JSONata: its Item and values are expressions) writes as ClaimComputedKey writes
    claim, computed = FLOW["Claim"]["Arguments"], FLOW["ClaimComputedKey"]["Parameters"]
    assert FLOW["Claim"]["Resource"] == FLOW["ClaimComputedKey"]["Resource"]
    for field in ("TableName", "ConditionExpression", "ExpressionAttributeNames"):
        assert claim[field] == computed[field], field
    assert set(
        re.findall(r'"([a-z_]+|:[a-z]+)": \{"[SN]"', claim["Item"] + claim["ExpressionAttributeValues"])
    ) == {
        *computed["Item"],
        *computed["ExpressionAttributeValues"],
    }
    assert FLOW["Claim"]["Retry"] == FLOW["ClaimComputedKey"]["Retry"]
