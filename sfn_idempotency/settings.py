"""The example workflow's configuration, shared by the CDK app, the local engine and the CLI."""

from __future__ import annotations

import os
from collections.abc import Mapping

from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings, load_settings

# The example business step places orders; the order id is what makes two requests "the same".
EXAMPLE_ENVIRONMENT: dict[str, str] = {
    "IDEMPOTENCY_KEY_PREFIX": "orders",
    "IDEMPOTENCY_EVENT_KEY_JMESPATH": "orderId",
    "IDEMPOTENCY_EXPIRES_AFTER_SECONDS": "3600",
    "IDEMPOTENCY_TIMEOUT_SECONDS": "30",
}
# Event-triggered runs key on the business id in `detail`, not the envelope's `id`: a producer that
# publishes the same order twice makes two ids, while an EventBridge redelivery keeps one.
ORDER_EVENT_KEY_JMESPATH = "detail.orderId"
# SQS records (batches from EventBridge Pipes or a poller) carry the order as JSON text in `body`.
ORDER_MESSAGE_KEY_JMESPATH = "powertools_json(body).orderId"
# The HTTP front door's route has keys of its own (the Idempotency-Key header, not the order id), and
# answers the example's business errors with these statuses (others: 502).
HTTP_KEY_PREFIX_SUFFIX = "-http"
ORDER_ERROR_STATUSES = {"InvalidOrderError": 422, "PaymentGatewayTimeout": 504}
_OVERRIDABLE_PREFIXES = ("IDEMPOTENCY_", "POWERTOOLS_IDEMPOTENCY_DISABLED")


def example_settings(environ: Mapping[str, str] | None = None, /, **overrides: str) -> IdempotencySettings:
    """The example configuration; ``IDEMPOTENCY_*`` variables in ``environ`` (default: the process
    environment) win over it, as they would on the deployed key Lambda, and ``overrides`` win over both."""
    environ = os.environ if environ is None else environ
    from_environment = {
        name: value for name, value in environ.items() if name.startswith(_OVERRIDABLE_PREFIXES)
    }
    return load_settings({**EXAMPLE_ENVIRONMENT, **from_environment, **overrides})
