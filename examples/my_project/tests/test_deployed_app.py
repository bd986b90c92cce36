"""A user's tests of their own CDK app, as `cdk synth` left it in cdk.out, deployed on the engine
by the plugin's cdk_app fixture: the app they deploy is the app they test."""

from sfn_idempotency.testing import DeployedAssembly, LocalCloud

STACK = "MyPayments"


def test_a_duplicate_payment_replays_and_a_new_one_charges(
    local_cloud: LocalCloud, cdk_app: DeployedAssembly
) -> None:
    # Given my stack's idempotent payments workflow and my charge Lambda
    stack = cdk_app.stack(STACK)
    payments, charge = stack.arn("Payments/StateMachine"), stack.arn("Charge")
    # When the same payment comes twice, then another
    first = local_cloud.run(payments, {"paymentId": "p-1", "amount": 12})
    again = local_cloud.run(payments, {"paymentId": "p-1", "amount": 12})
    other = local_cloud.run(payments, {"paymentId": "p-2", "amount": 3})
    # Then the duplicate replayed the first charge, and only new payments reached my Lambda
    assert again.output == first.output
    assert [r.lambda_invocations(charge) for r in (first, again, other)] == [1, 0, 1]
    # And the records in my stack's table are complete
    table = stack.physical_id("Payments/Table/Table")
    statuses = [item["status"]["S"] for item in local_cloud.dynamodb.scan(TableName=table)["Items"]]
    assert statuses == ["COMPLETED", "COMPLETED"]


def test_my_settlement_map_charges_each_payment_once_across_batches(
    local_cloud: LocalCloud, cdk_app: DeployedAssembly
) -> None:
    # Given my settlement machine: a Map whose step is idempotent
    stack = cdk_app.stack(STACK)
    settlement, charge = stack.arn("Settlement"), stack.arn("Charge")
    # When a batch is settled, then a second batch repeating one of its payments
    first = local_cloud.run(
        settlement, {"payments": [{"paymentId": "p-1", "amount": 1}, {"paymentId": "p-2", "amount": 2}]}
    )
    second = local_cloud.run(
        settlement, {"payments": [{"paymentId": "p-2", "amount": 2}, {"paymentId": "p-3", "amount": 3}]}
    )
    # Then p-2 was charged once, and settled with the same charge both times
    assert (first.status, second.status) == ("SUCCEEDED", "SUCCEEDED")
    assert [first.lambda_invocations(charge), second.lambda_invocations(charge)] == [2, 1]
    assert second.output[0] == first.output[1]
