"""The exactly-once explorer (issue 41): it finds every known-bad workflow within its default
budget, naming the invariant each breaks; it passes every form of the project's flow; its
counterexamples replay exactly from their token; the same seed explores the same schedules.

``make prove`` runs every form at ten times the default budget; SFN_EXPLORER_BUDGET_SCALE=10 runs
this module's explorations at ten times theirs.
"""

from __future__ import annotations

import json
import os
import warnings
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.explorer import invariants
from sfn_idempotency.local.explorer.report import Counterexample, dumps
from sfn_idempotency.local.explorer.schedules import Hold, Schedule, Step
from sfn_idempotency.testing import (
    DEFAULT_SCHEDULES,
    ExactlyOnceViolation,
    ExplorationTarget,
    NodeVersionWarning,
    ScheduleOutcome,
    TargetError,
    explore,
)
from sfn_idempotency.wrap import wrap_state
from tests.local.exactly_once import forms, known_bad

SCALE = int(os.environ.get("SFN_EXPLORER_BUDGET_SCALE", "1"))
# make test: every form at a part of the default budget (`make prove` runs ten times the default)
FORM_SCHEDULES = 40
SHORTEST_EXPECTED = 4  # steps: every known-bad workflow breaks within a story this long


@pytest.mark.parametrize("bad", known_bad.KNOWN_BAD, ids=lambda bad: bad.name)
def test_the_explorer_finds_each_known_bad_workflow(
    bad: known_bad.KnownBad, local_cloud: LocalCloud, tmp_path: Path
):
    # Given a workflow that breaks exactly-once in one way
    target = bad.build(local_cloud, tmp_path)

    # When the explorer runs it within its default budget
    report = explore(target)

    # Then it reports the invariant that workflow breaks, in a short story
    assert not report.passed
    counterexample = report.counterexample
    assert counterexample is not None
    assert bad.broken in {violation.invariant for violation in counterexample.violations}, (
        counterexample.text()
    )
    assert report.schedules_to_find is not None
    assert report.schedules_to_find <= DEFAULT_SCHEDULES
    assert counterexample.steps <= SHORTEST_EXPECTED
    print(
        f"{bad.name}: found after {report.schedules_to_find} schedules, shrunk to {counterexample.steps} steps"
    )


@pytest.mark.parametrize(("form", "language"), forms.EVERY_FORM)
def test_every_form_of_the_flow_is_exactly_once(form: str, language: str, local_cloud: LocalCloud):
    # Given the project's flow as a user deploys it
    target = forms.FORMS[form](local_cloud, language)
    # When the explorer runs it
    report = explore(target, schedules_to_run=FORM_SCHEDULES * SCALE)

    # Then every schedule kept every invariant, and they held duplicates, faults and the clock
    report.assert_exactly_once()
    assert report.schedules == FORM_SCHEDULES * SCALE
    assert report.covered["duplicate"] > 0
    assert report.covered["clock past the lease"] > 0
    assert any(name.startswith("fault: ") for name in report.covered)
    # And its business step answered results near the 256 KiB quota, one that fits and one that does not
    assert report.covered["fault: answered 250 KB"] > 0
    assert report.covered["fault: answered 300 KB"] > 0
    if (
        target.cloud.sfn.describe_state_machine(stateMachineArn=target.state_machine_arn)["type"]
        == "STANDARD"
    ):
        assert report.covered["redrive"] > 0
    print(f"{form} {language}: {report.schedules} schedules in {report.seconds:.1f} s")


def test_a_duplicate_held_across_the_record_s_expiry_may_answer_the_next_lifetime(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given the flow, and a schedule: E1 held in its key's computation while E2 completes, then the
    # clock past the record's expiry, so that E1 claims the key in the record's next lifetime
    target = known_bad.service_target(local_cloud, known_bad.flow(), tmp_path)
    held = Step("start", hold=Hold(function="idempotency-compute-key"))
    schedule = Schedule((held, Step("start"), Step("clock", past="expiry")))

    # When it runs
    report = explore(target, replay=schedule.token())

    # Then E1's answer is its own lifetime's, not E2's, and no invariant is broken
    report.assert_exactly_once()
    assert report.schedules == 1


def test_a_counterexample_replays_exactly_from_its_token(local_cloud: LocalCloud, tmp_path: Path):
    # Given a counterexample the explorer found
    target = known_bad.without_owner_fence_on_complete(local_cloud, tmp_path)
    found = explore(target).counterexample
    assert found is not None

    # When its token is replayed
    replayed = explore(target, replay=found.replay)

    # Then the same schedule ran, the same way, and broke the same invariants
    assert replayed.schedules == 1
    assert replayed.counterexample is not None
    assert _story(replayed.counterexample) == _story(found)


def test_the_same_seed_explores_the_same_schedules(local_cloud: LocalCloud, tmp_path: Path):
    # Given a workflow without Release in its Catch, explored by random schedules only
    target = known_bad.without_release_in_catch(local_cloud, tmp_path)

    # When it is explored twice from the same seed
    first, second = (
        explore(target, sweep=False, schedules_to_run=DEFAULT_SCHEDULES, seed=0) for _ in range(2)
    )

    # Then hypothesis drew, found and shrank the same schedule
    assert first.counterexample is not None
    assert second.counterexample is not None
    assert first.schedules_to_find == second.schedules_to_find
    assert first.counterexample.replay == second.counterexample.replay
    assert invariants.CLAIM_LEFT in {v.invariant for v in first.counterexample.violations}


def test_a_failing_report_is_a_pytest_assertion_with_its_timeline_and_token(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a report that found a counterexample
    report = explore(known_bad.release_after_complete(local_cloud, tmp_path))

    # When a test asserts exactly-once
    with pytest.raises(ExactlyOnceViolation) as raised:
        report.assert_exactly_once()

    # Then the failure says which invariant broke, how, and how to replay it
    message = str(raised.value)
    assert isinstance(raised.value, AssertionError)
    assert f"VIOLATED {invariants.TWO_SUCCESSES}" in message
    assert "Timeline:" in message
    assert "E1 starts" in message
    assert f"Replay: {report.counterexample.replay}" in message


def test_the_json_answer_holds_the_timeline_with_records_before_and_after(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a counterexample
    report = explore(known_bad.release_after_complete(local_cloud, tmp_path))

    # When it is written as JSON
    answer = json.loads(dumps(report))

    # Then it holds the verdict, the violations, and each step's states and records
    assert answer["passed"] is False
    counterexample = answer["counterexample"]
    assert {v["invariant"] for v in counterexample["violations"]} >= {invariants.TWO_SUCCESSES}
    first = counterexample["timeline"][0]
    assert first["action"] == "E1 starts"
    assert first["states"]["E1"][-2:] == ["Complete", "ForgetTheClaim"]
    assert first["records_before"] == []
    assert first["records_after"] == []  # the COMPLETED record, deleted by the bad Release
    assert counterexample["replay"].startswith("sfnx1.")
    assert [run["fate"] for run in counterexample["runs"]] == ["returned", "returned"]


def test_the_timeline_image_has_a_lane_per_execution(local_cloud: LocalCloud, tmp_path: Path):
    # Given a counterexample with two executions
    counterexample = explore(known_bad.without_owner_fence_on_complete(local_cloud, tmp_path)).counterexample
    assert counterexample is not None

    # When it is drawn
    image = ElementTree.fromstring(counterexample.svg())

    # Then it is SVG with the executions' lanes and the violation
    texts = [element.text or "" for element in image.iter("{http://www.w3.org/2000/svg}text")]
    assert {"E1", "E2", "P1"} <= set(texts)
    assert any(text.startswith("VIOLATED") for text in texts)


def test_a_user_invariant_that_breaks_is_reported(local_cloud: LocalCloud):
    # Given the project's flow and an invariant of the user's own: no duplicate ever succeeds
    target = forms.standalone(local_cloud, "JSONPath")

    def no_duplicate_succeeds(outcome: ScheduleOutcome) -> None:
        succeeded = [e.label for e in outcome.executions if e.status == "SUCCEEDED"]
        assert len(succeeded) <= 1, f"{succeeded} succeeded"

    target.invariants = [no_duplicate_succeeds]

    # When it is explored, Then the explorer reports that invariant with the executions it names
    report = explore(target)
    assert report.counterexample is not None
    (violation,) = report.counterexample.violations
    assert violation.invariant == invariants.USER
    assert violation.message.startswith("no_duplicate_succeeds: ['E1', 'P1'] succeeded")


@pytest.mark.parametrize(
    ("requests", "options", "message"),
    [
        ([], {}, "at least one request"),
        ([{"orderId": "a"}], {"watch": []}, "name the side effects"),
        ([{"orderId": "a"}, {"orderId": "b"}], {"key": "orderId"}, "their key 'orderId' differs"),
        ([{"orderId": "a"}, {"orderId": "a", "note": 1}], {}, "their input differs"),
        ([{"id": "a"}], {"key": "orderId"}, "selects nothing"),
    ],
)
def test_a_target_that_is_not_one_request_is_refused(
    local_cloud: LocalCloud, requests: list[Any], options: dict[str, Any], message: str
):
    options = {"watch": ["payment"], **options}
    with pytest.raises(TargetError, match=message):
        ExplorationTarget(
            local_cloud, "arn:aws:states:us-east-1:123456789012:stateMachine:m", requests, **options
        )


def _story(counterexample: Counterexample) -> list[Any]:
    """What a replay must repeat: the steps, the states and statuses, the calls, the broken invariants."""
    moments = [(m.action, m.states, m.statuses, m.calls) for m in counterexample.outcome.timeline]
    return [moments, sorted(v.invariant for v in counterexample.violations)]


def test_the_explorer_checks_a_machine_of_a_sam_template():
    # Given a SAM app (a Node.js and a Python function, deployed through the Lambda API) whose
    # workflow has no idempotent step
    app = Path(__file__).resolve().parents[1] / "apps" / "sam_orders"
    order = {"orderId": "o-1", "items": [{"price": 2, "quantity": 1}]}
    with LocalCloud() as cloud, warnings.catch_warnings():
        warnings.simplefilter("ignore", NodeVersionWarning)
        stack = cloud.deploy_template(app, parameters={"Stage": "test"})
        price, record = stack.physical_id("PriceFunction"), stack.physical_id("RecordFunction")
        target = ExplorationTarget(
            cloud, stack.outputs["OrderStateMachineArn"], [order], watch=[price, record], key="orderId"
        )

        # When it is explored
        report = explore(target, schedules_to_run=10)

    # Then the first schedule shows a duplicate pricing the order again (its Node function's runs)
    assert report.schedules_to_find == 1
    assert report.counterexample is not None
    messages = [
        v.message for v in report.counterexample.violations if v.invariant == invariants.TWO_SUCCESSES
    ]
    assert any(message.startswith(f"{price}: run 1 (E1, returned)") for message in messages), messages


def test_a_task_state_is_a_side_effect_the_explorer_watches(local_cloud: LocalCloud):
    # Given a user's workflow whose Reserve step is idempotent and whose RecordOrder Task state
    # writes the order to DynamoDB after it, outside the idempotent step
    table = local_cloud.create_table("orders")
    reserve = local_cloud.add_function(
        "reserve", lambda event, context: {"reserved": True}, timeout_seconds=30
    )
    workflow = {
        "StartAt": "Reserve",
        "States": {
            "Reserve": {
                "Type": "Task",
                "Resource": reserve.arn,
                "TimeoutSeconds": 30,
                "ResultPath": "$.r",
                "Next": "RecordOrder",
            },
            "RecordOrder": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": {"TableName": table, "Item": {"id": {"S.$": "$.orderId"}}},
                "ResultPath": None,
                "End": True,
            },
        },
    }
    definition = wrap_state(
        json.dumps(workflow), "Reserve", key_prefix="reserve", event_key_jmespath="orderId"
    )
    machine = local_cloud.create_state_machine(
        "recorded", definition, local_cloud.idempotency_substitutions()
    )
    target = ExplorationTarget(
        local_cloud, machine, [{"orderId": "o-3"}], watch=["RecordOrder"], key="orderId", tables=[]
    )

    # When it is explored
    report = explore(target)

    # Then a duplicate writes the order again: two runs of the Task state's call took effect
    assert report.counterexample is not None
    assert report.counterexample.steps == 1
    violations = {v.invariant: v.message for v in report.counterexample.violations}
    assert violations[invariants.TWO_SUCCESSES] == "RecordOrder: run 1 (E1, returned), run 2 (P1, returned)"


def test_each_watched_function_numbers_its_own_runs(local_cloud: LocalCloud):
    # Given a workflow that charges and then emails, neither step idempotent, both watched
    pay = local_cloud.add_function("pay", lambda event, context: {"paid": True})
    email = local_cloud.add_function("email", lambda event, context: {"sent": True})
    workflow = {
        "StartAt": "Pay",
        "States": {
            "Pay": {"Type": "Task", "Resource": pay.arn, "ResultPath": "$.pay", "Next": "Email"},
            "Email": {"Type": "Task", "Resource": email.arn, "ResultPath": "$.email", "End": True},
        },
    }
    machine = local_cloud.create_state_machine("pay-and-email", json.dumps(workflow), {})
    target = ExplorationTarget(
        local_cloud, machine, [{"orderId": "o-4"}], watch=[pay.name, email.name], key="orderId", tables=[]
    )

    # When a duplicate runs both again
    report = explore(target)

    # Then each function's runs are counted on their own: the second email is "email run 2"
    assert report.counterexample is not None
    twice = sorted(
        v.message for v in report.counterexample.violations if v.invariant == invariants.TWO_SUCCESSES
    )
    assert twice == [
        f"{email.name}: run 1 (E1, returned), run 2 (P1, returned)",
        f"{pay.name}: run 1 (E1, returned), run 2 (P1, returned)",
    ]


# -- the guide's checkout example: no false alarm (issue 53) -------------------------------------
EXAMPLE_PROJECT = Path(__file__).resolve().parents[2] / "examples" / "my_project"
# Seed 1's schedule at the default budget, where the alarm was raised: E1 completes its record and is
# held in its receipt; the clock passes the record's expiry; a new request P1 places a fresh charge.
# E1's answer is its own record lifetime's, P1's the next one's: not duplicates of one another.
EXPIRED_BETWEEN_TWO_ANSWERS = "sfnx1.eJyLrlZKTC7JzM9TslIqLkksKlHSUcrIz0lRsqoG8UtSgeJAobTSPJiqotTk1MyCEqXaWh0kvck5-cnZQIUFicUlQG5qRUFmUaVSbSwAEL0gQg=="


def example_checkout(cloud: LocalCloud) -> ExplorationTarget:
    """The guide's checkout (examples/my_project): its Charge wrapped with the replay marker, its
    receipt sent only after a first charge; duplicates must agree on the charge."""
    functions = EXAMPLE_PROJECT / "functions"
    charge = cloud.add_function("charge", "charge.handler.handler", code_dir=functions)
    receipt = cloud.add_function("receipt", "receipt.handler.handler", code_dir=functions)
    definition = wrap_state(
        (EXAMPLE_PROJECT / "statemachines" / "checkout.asl.json").read_text(encoding="utf-8"),
        "Charge",
        key_prefix="checkout",
        event_key_jmespath="paymentId",
        replay_marker="$.chargeReplay",
    )
    substitutions = {
        **cloud.idempotency_substitutions(),
        "ChargeFunctionArn": charge.arn,
        "ReceiptFunctionArn": receipt.arn,
    }
    machine = cloud.create_state_machine("checkout", definition, substitutions)
    return ExplorationTarget(
        cloud,
        machine,
        [{"paymentId": "p-9", "amount": 25}],
        watch=["charge", "receipt"],
        key="paymentId",
        answer=lambda output: output["charged"],
    )


def test_answers_of_two_record_lifetimes_are_not_duplicates(local_cloud: LocalCloud):
    # Given the schedule where the alarm was raised (answers were grouped by the lifetime in which
    # each execution ended: E1 ended after the expiry, beside P1)
    # When it is replayed, then it passes: each answer is grouped with its own lifetime's
    report = explore(example_checkout(local_cloud), replay=EXPIRED_BETWEEN_TWO_ANSWERS)
    assert report.passed, report.text()
    assert "clock past the expiry" in report.covered


ALARMED_SEED = 1  # the seed at whose default budget the false alarm was raised


def test_the_guides_checkout_passes_at_the_default_budget(local_cloud: LocalCloud):
    # The example's own test runs 40 schedules; a user trusting the tool runs the default 200
    report = explore(
        example_checkout(local_cloud), seed=ALARMED_SEED, schedules_to_run=DEFAULT_SCHEDULES * SCALE
    )
    assert report.passed, report.text()
    assert report.schedules == DEFAULT_SCHEDULES * SCALE


@pytest.mark.parametrize("seed", [0, 2, 3, 4])
def test_the_guides_checkout_passes_from_other_seeds(local_cloud: LocalCloud, seed: int):
    # Other seeds draw other schedules: each a part of the budget (SFN_EXPLORER_BUDGET_SCALE runs more)
    report = explore(example_checkout(local_cloud), seed=seed, schedules_to_run=FORM_SCHEDULES * SCALE)
    assert report.passed, report.text()


def test_only_tables_in_powertools_schema_are_read_as_records(local_cloud: LocalCloud):
    # Given the engine's records table and a user's own table keyed by id (a lock table, no TTL)
    records = local_cloud.idempotency_substitutions()["IdempotencyTableName"]
    local_cloud.dynamodb.create_table(
        TableName="locks",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    machine = local_cloud.create_state_machine(
        "noop", json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}), {}
    )
    target = ExplorationTarget(local_cloud, machine, [{"id": 1}], watch=["Done"])
    # Then only the records table's items are read as idempotency records
    assert target.record_tables() == [records]
