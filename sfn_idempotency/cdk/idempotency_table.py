"""The DynamoDB table that holds idempotency records (Powertools' schema)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

PARTITION_KEY = "id"
# A customer-managed key: what a principal needs for DynamoDB to read and write items on its behalf
# (named, no wildcards: the CDK's own table grants add ReEncrypt*/GenerateDataKey*, which only the
# service's key rotation uses).
KMS_ITEM_ACTIONS = ("kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey")
TTL_ATTRIBUTE = "expiration"


class IdempotencyTable(Construct):
    """On-demand, TTL on ``expiration``, point-in-time recovery; kept on stack deletion by default."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.table = self._build_table(removal_policy, encryption_key)

    def _build_table(self, removal_policy: RemovalPolicy, encryption_key: kms.IKey | None) -> dynamodb.Table:
        return dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=(
                dynamodb.TableEncryption.CUSTOMER_MANAGED
                if encryption_key
                else dynamodb.TableEncryption.AWS_MANAGED
            ),
            encryption_key=encryption_key,
            removal_policy=removal_policy,
        )


def grant_item_access(table: dynamodb.ITable, grantee: iam.IGrantable, *actions: str) -> None:
    """``actions`` on the table's items, and on its customer-managed key if it has one: with such a
    key DynamoDB refuses every item call of a principal that may not use the key."""
    table.grant(grantee, *actions)
    if table.encryption_key is not None:
        table.encryption_key.grant(grantee, *KMS_ITEM_ACTIONS)
