"""Lambda entry point: parse the state, compute, return. No AWS calls."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import clock
from .computation import compute
from .errors import FENCE_QUALIFIER, IdempotencyKeyError, IdempotencyRedriveFenceError
from .settings import DISABLED_VARIABLE, IdempotencySettings, environment_settings, payload_settings

# Cold start: a bad IDEMPOTENCY_* value fails here, before any request is served. A key Lambda
# shared by inline steps has none: each step's settings come in its payload.
ENVIRONMENT_SETTINGS = environment_settings(os.environ)
# Powertools' switch POWERTOOLS_IDEMPOTENCY_DISABLED on the function disables inline steps too.
DISABLED_SWITCH = {name: value for name, value in os.environ.items() if name == DISABLED_VARIABLE}
logger = Logger(service="sfn-idempotency")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if context.invoked_function_arn.endswith(f":{FENCE_QUALIFIER}"):
        logger.info("Redrive fence: the business step was not called; the flow claims the key again")
        raise IdempotencyRedriveFenceError(
            "a redriven execution resumed at its business step without a claim of its own: "
            "the business step was not called, and the flow claims the idempotency key again"
        )
    if not isinstance(event, dict) or "event" not in event:
        raise IdempotencyKeyError('the key Lambda expects {"event": <execution input>}')
    settings = _settings_of(event)
    # The execution's ARN beside the key (never the event): with the state machine's own log
    # records, which carry it too, it finds the key of any outcome (docs: "Know what happened").
    logger.append_keys(key_prefix=settings.key_prefix, execution_arn=event.get("execution"))
    execution_input = event["event"]
    computation = compute(execution_input, settings, clock.current())
    logger.append_keys(idempotency_key=computation.key)
    if computation.disabled:
        logger.info("Idempotency disabled: the business step runs without a record")
    elif not computation.has_key:
        logger.warning(
            "No idempotency key value found: the business step runs without a record",
            jmespath=settings.event_key_jmespath,
        )
    else:
        logger.info("Idempotency key computed")
    return {
        "event": execution_input,
        "idempotency": computation.model_dump(by_alias=True),
        "claim": {"attempts": 1},
        "wait": {"attempts": 0},
    }


def _settings_of(event: dict[str, Any]) -> IdempotencySettings:
    """An inline step's own settings (its payload's ``settings``), else the function's environment."""
    if "settings" in event:
        return payload_settings({**event["settings"], **DISABLED_SWITCH})
    if ENVIRONMENT_SETTINGS is None:
        raise IdempotencyKeyError(
            "this key Lambda has no IDEMPOTENCY_* environment, and the payload carries no settings"
        )
    return ENVIRONMENT_SETTINGS
