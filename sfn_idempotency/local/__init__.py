"""The local engine: moto's Step Functions interpreter, moto DynamoDB/EventBridge, our real handlers.
Its public face is ``sfn_idempotency.testing``."""

from sfn_idempotency.extras import require_extra

require_extra("local", "the local engine (sfn_idempotency.testing, serve, demo)")

from sfn_idempotency.local.engine.cloud import LocalCloud  # noqa: E402
from sfn_idempotency.local.engine.results import ExecutionResult  # noqa: E402
from sfn_idempotency.local.engine.service import IdempotentService  # noqa: E402

__all__ = ["ExecutionResult", "IdempotentService", "LocalCloud"]
