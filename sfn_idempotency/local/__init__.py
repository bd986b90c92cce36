"""The local engine: moto's Step Functions interpreter, moto DynamoDB/EventBridge, our real handlers."""

from sfn_idempotency.local.cloud import ExecutionResult, LocalCloud
from sfn_idempotency.local.service import IdempotentService

__all__ = ["ExecutionResult", "IdempotentService", "LocalCloud"]
