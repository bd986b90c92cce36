"""Public API: the CDK constructs a user composes (``pip install 'sfn-idempotency[cdk]'``).

- ``IdempotencyTable``: the records' table (Powertools' schema, TTL, point-in-time recovery).
- ``IdempotentWorkflow``: the state machine of ``idempotency.asl.json`` around a Lambda or any Task.
- ``IdempotentStep``: one Task of your own state machine made idempotent inline (Standard or Express).
- ``IdempotencyKeyFunction``: the key Lambda every inline step of a stack shares.
- ``InlineWorkflow``: a state machine from ASL whose Tasks were wrapped with ``wrap_state``.
- ``IdempotentHttpApi``: ``POST /orders`` honouring the Idempotency-Key header (API Gateway to
  StartSyncExecution of an Express workflow, no Lambda in front).
- ``ClaimRelease``: releases claims of executions that ended where no Catch could see it.
- ``NestedWorkflow``: a workflow that runs an idempotent one with ``startExecution.sync:2``.
- ``EventTrigger``: an EventBridge rule that starts a state machine, with retries and a DLQ.
- ``IdempotencyMetrics``: each idempotent step's outcomes as metrics, a dashboard and alarms
  (the workflows create theirs; ``IdempotentStep`` when given its machine's log group).
- ``build_state_machine``, ``handler_code``, ``powertools_layer``: the building blocks they share.
"""

from sfn_idempotency.extras import require_extra

require_extra("cdk", "sfn_idempotency.cdk")

from sfn_idempotency.cdk.event_trigger import EventTrigger, event_pattern  # noqa: E402
from sfn_idempotency.cdk.idempotency_metrics import IdempotencyMetrics  # noqa: E402
from sfn_idempotency.cdk.idempotency_table import IdempotencyTable  # noqa: E402
from sfn_idempotency.cdk.idempotent_http_api import IdempotentHttpApi  # noqa: E402
from sfn_idempotency.cdk.idempotent_step import (  # noqa: E402
    IdempotencyKeyFunction,
    IdempotentStep,
    inline_step_statements,
)
from sfn_idempotency.cdk.idempotent_workflow import ClaimRelease, IdempotentWorkflow  # noqa: E402
from sfn_idempotency.cdk.inline_workflow import InlineWorkflow  # noqa: E402
from sfn_idempotency.cdk.lambda_code import (  # noqa: E402
    POWERTOOLS_LAYER_VERSION,
    RUNTIME,
    handler_code,
    powertools_layer,
)
from sfn_idempotency.cdk.nested_workflow import NestedWorkflow  # noqa: E402
from sfn_idempotency.cdk.state_machines import build_state_machine  # noqa: E402

__all__ = [
    "POWERTOOLS_LAYER_VERSION",
    "RUNTIME",
    "ClaimRelease",
    "EventTrigger",
    "IdempotencyKeyFunction",
    "IdempotencyMetrics",
    "IdempotencyTable",
    "IdempotentHttpApi",
    "IdempotentStep",
    "IdempotentWorkflow",
    "InlineWorkflow",
    "NestedWorkflow",
    "build_state_machine",
    "event_pattern",
    "handler_code",
    "inline_step_statements",
    "powertools_layer",
]
