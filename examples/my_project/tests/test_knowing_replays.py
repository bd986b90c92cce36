"""A user's tests of what a replay tells them: the marker their Choice reads, a response hook, a
duplicate that waits for the first run, and the metrics per outcome."""

import threading
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.testing import IdempotentService, LocalCloud, load_settings

PROJECT = Path(__file__).resolve().parent.parent
PAYMENT = {"paymentId": "p-7", "amount": 30}
HOOKS = {
    "JSONPath": {"payment.$": "$.output", "replayOf.$": "$.record.firstExecution"},
    "JSONata": "{% {'payment': $output, 'replayOf': $record.firstExecution} %}",
}


def payments(**variables: str) -> Any:
    return load_settings(
        {"IDEMPOTENCY_KEY_PREFIX": "payments", "IDEMPOTENCY_EVENT_KEY_JMESPATH": "paymentId", **variables}
    )


def test_my_choice_on_replayed_sends_the_receipt_once(local_cloud: LocalCloud, checkout: str) -> None:
    # Given my checkout, its Charge step wrapped with the replay marker at $.chargeReplay
    machine = checkout
    # When the same payment arrives twice
    first, again = local_cloud.run(machine, PAYMENT), local_cloud.run(machine, PAYMENT)
    # Then it was charged once, the receipt went out once, and the second run knew it replayed
    assert first.status == again.status == "SUCCEEDED"
    assert local_cloud.lambdas.invocations("charge") == 1
    assert local_cloud.lambdas.invocations("receipt") == 1
    assert (first.output["chargeReplay"]["replayed"], again.output["chargeReplay"]["replayed"]) == (
        False,
        True,
    )
    assert again.output["charged"] == first.output["charged"]
    assert again.output["chargeReplay"]["firstExecution"] == first.arn


@pytest.mark.parametrize("language", ["JSONPath", "JSONata"])
def test_my_hook_rewrites_the_replayed_answer(local_cloud: LocalCloud, language: str) -> None:
    service = IdempotentService(
        local_cloud,
        payments(),
        name="payments",
        business_handler="charge.handler.handler",
        business_code_dir=PROJECT / "functions",
        query_language=language,
        replay_hook=HOOKS[language],
    )
    first, again = service.run(PAYMENT), service.run(PAYMENT)
    assert again.output == {"payment": first.output, "replayOf": first.arn}
    assert service.business_runs == 1


def test_a_waiting_duplicate_gets_the_first_charge(local_cloud: LocalCloud) -> None:
    # Given waiting on, and a charge that holds until the duplicate is waiting
    entered, release = threading.Event(), threading.Event()

    def slow_charge(event: Any, context: Any) -> Any:
        entered.set()
        release.wait(20)
        return {"paymentId": event["paymentId"], "chargeId": "ch-1"}

    service = IdempotentService(
        local_cloud,
        payments(IDEMPOTENCY_WAIT_FOR_IN_PROGRESS="true"),
        name="payments",
        business_handler=slow_charge,
    )
    first = service.start(PAYMENT)
    assert entered.wait(20)
    duplicate = service.start(PAYMENT)
    local_cloud.wait_until(lambda: "WaitForFirstRun" in local_cloud.states_so_far(duplicate), timeout=20)
    # When the first charge finishes
    release.set()
    # Then the duplicate ends with the first charge, and the card was charged once
    assert (
        local_cloud.wait(duplicate).output
        == local_cloud.wait(first).output
        == {"paymentId": "p-7", "chargeId": "ch-1"}
    )
    assert service.business_runs == 1


def test_my_workflow_s_outcomes_are_counted(idempotent_service: IdempotentService) -> None:
    order = {"orderId": "o-9", "amount": 5}
    idempotent_service.run(order), idempotent_service.run(order)
    counts = idempotent_service.outcome_counts()
    assert (counts["FirstRuns"], counts["Replays"], counts["InProgressRefusals"]) == (1, 1, 0)
