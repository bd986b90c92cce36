"""The HTTP front door: ``POST /orders`` with an ``Idempotency-Key`` header, answered by an Express
workflow through StartSyncExecution, with no Lambda in front.

``statemachines/http_orders.asl.json`` does the work: it checks the header, runs ``PlaceOrder``
(wrapped inline: the header is the key, the body must match), and turns every outcome into the HTTP
answer (status, headers, body), as the IETF draft "The Idempotency-Key HTTP Header Field" names
them. The Velocity templates in ``apis/`` only carry the request in and that answer out; API Gateway
and the local engine render the same files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sfn_idempotency.flow.resources import HTTP_ORDERS_ASL
from sfn_idempotency.flow.wrapping import settings_of_step, step_fields, wrap_state
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings

ROUTE = "orders"
BUSINESS_STATE = "PlaceOrder"
DEFAULT_SUCCESS_STATUS = 201
DEFAULT_ERROR_STATUS = 502
KEY_JMESPATH = "idempotencyKey"  # the decoded header, in the workflow's state
PAYLOAD_JMESPATH = "body"  # the same key with another body is refused (422)


def http_workflow(
    settings: IdempotencySettings,
    *,
    success_status: int = DEFAULT_SUCCESS_STATUS,
    error_statuses: Mapping[str, int] | None = None,
    default_error_status: int = DEFAULT_ERROR_STATUS,
) -> tuple[str, int]:
    """The HTTP workflow's definition, and the Retry-After (seconds) of a key whose lease is unknown.

    ``settings`` give the key prefix, expiry, hash and timeout (their JMESPaths are the header and the
    body's); ``error_statuses`` maps a business error's name to its HTTP status (else
    ``default_error_status``)."""
    statuses = dict(error_statuses or {})
    _check_status("success_status", success_status, 200, 299)
    _check_status("default_error_status", default_error_status, 400, 599)
    for name, status in statuses.items():
        _check_status(f"error_statuses[{name!r}]", status, 400, 599)
    fields = {**step_fields(settings), "event_key_jmespath": KEY_JMESPATH}
    fields["payload_validation_jmespath"] = PAYLOAD_JMESPATH
    fields["raise_on_no_key"] = True
    # An Express workflow, run synchronously: its context has no RedriveCount (express=True).
    wrapped = wrap_state(HTTP_ORDERS_ASL.read_text(encoding="utf-8"), BUSINESS_STATE, **fields, express=True)
    retry_after = settings_of_step(wrapped, BUSINESS_STATE).lease
    document = json.loads(wrapped)
    document["States"]["Configure"]["Assign"] = {
        "httpSuccessStatus": success_status,
        "httpErrorStatuses": statuses,
        "httpDefaultErrorStatus": default_error_status,
        "httpRetryAfterSeconds": retry_after,
    }
    return json.dumps(document, indent=2), retry_after


def _check_status(name: str, status: int, low: int, high: int) -> None:
    if isinstance(status, bool) or not isinstance(status, int) or not low <= status <= high:
        raise ConfigurationError(f"{name} must be an HTTP status {low}..{high}, got {status!r}")
