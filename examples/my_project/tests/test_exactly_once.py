"""A user proves their checkout exactly-once: the explorer runs it under duplicates, faults, stops,
time-outs, redrives and a moving clock, and checks that each charge and each receipt happens at most
once per payment."""

from sfn_idempotency.testing import ExplorationTarget, LocalCloud, explore

PAYMENT = {"paymentId": "p-9", "amount": 25}


def test_my_checkout_charges_and_sends_the_receipt_at_most_once(
    local_cloud: LocalCloud, checkout: str
) -> None:
    # Given my checkout (its Charge step wrapped, its receipt sent only after a first charge)
    # When the explorer runs it (duplicates must agree on the charge; the replay marker differs),
    # Then no schedule charged or sent a receipt twice
    target = ExplorationTarget(
        local_cloud,
        checkout,
        [PAYMENT],
        watch=["charge", "receipt"],
        key="paymentId",
        answer=lambda output: output["charged"],
    )
    explore(target, schedules_to_run=40).assert_exactly_once()
