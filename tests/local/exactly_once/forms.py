"""The project's flow in every form a user deploys it, each as an explorer Target: standalone (with
its release workflow) and inline in a Standard or an Express machine, in JSONPath and JSONata, and
the HTTP front door."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.engine.service import INLINE_STEP, inline_machine
from sfn_idempotency.local.explorer import EventBridgeDelivery, Target
from sfn_idempotency.settings import ORDER_EVENT_KEY_JMESPATH, example_settings
from sfn_idempotency.wrap import wrap_state

ORDER = {"orderId": "o-form", "amount": 3}
HTTP_REQUEST = {"idempotencyKeyBase64": base64.b64encode(b"key-1").decode(), "body": ORDER}
HTTP_SUCCESS_BELOW = 300
ORDER_SOURCE, ORDER_DETAIL_TYPE = "orders", "OrderPlaced"  # what events/order_placed.pattern.json matches


def _service(cloud: LocalCloud, **options: Any) -> IdempotentService:
    return IdempotentService(cloud, example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId"), **options)


def standalone(cloud: LocalCloud, query_language: str) -> Target:
    service = _service(cloud, query_language=query_language)
    service.deploy_claim_release()
    return Target.of_service(service, [ORDER])


def from_eventbridge(cloud: LocalCloud, query_language: str) -> Target:
    """The workflow its rule starts with every order event, keyed on the event's orderId: a
    duplicate is a redelivery of the same event."""
    service = IdempotentService(
        cloud,
        example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH=ORDER_EVENT_KEY_JMESPATH),
        query_language=query_language,
    )
    service.deploy_claim_release()
    service.deploy_event_trigger()
    return Target.of_service(
        service,
        [ORDER],
        key="orderId",
        answer=lambda output: output,
        via=EventBridgeDelivery(ORDER_SOURCE, ORDER_DETAIL_TYPE),
    )


def inline_standard(cloud: LocalCloud, query_language: str) -> Target:
    return Target.of_service(_service(cloud, inline=True, query_language=query_language), [ORDER])


def inline_express(cloud: LocalCloud, query_language: str) -> Target:
    service = _service(cloud)
    machine = inline_machine(service.settings.timeout_seconds, query_language).replace(
        "${BusinessFunctionArn}", "${PlaceOrderFunctionArn}"
    )
    express = {"express": True} if query_language == "JSONPath" else {}
    definition = wrap_state(
        machine, INLINE_STEP, key_prefix="inline", event_key_jmespath="orderId", **express
    )
    arn = service.deploy_inline(definition, "inline-express")
    return Target.of_service(service, [ORDER], state_machine_arn=arn)


def http_front_door(cloud: LocalCloud, query_language: str) -> Target:
    """The Idempotency-Key route's workflow, with the input its request template renders; an error
    response (a 409 while the first request runs) is an error a client may retry, not an answer."""
    service = _service(cloud)
    api = service.deploy_http_api()
    return Target.of_service(
        service,
        [HTTP_REQUEST],
        state_machine_arn=api.state_machine_arn,
        key="idempotencyKeyBase64",
        answer=lambda output: output["bodyText"] if output["status"] < HTTP_SUCCESS_BELOW else None,
    )


FORMS: dict[str, Callable[[LocalCloud, str], Target]] = {
    "standalone": standalone,
    "from EventBridge": from_eventbridge,
    "inline Standard": inline_standard,
    "inline Express": inline_express,
    "HTTP front door": http_front_door,
}
# (form, query language): the HTTP front door is a JSONPath workflow
EVERY_FORM = [
    (form, language)
    for form in FORMS
    for language in ("JSONPath", "JSONata")
    if not (form in ("HTTP front door", "from EventBridge") and language == "JSONata")
]
