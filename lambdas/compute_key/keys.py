"""Idempotency key and validation hash, computed exactly as Powertools for AWS Lambda (Python) does.

A Powertools function configured with the same key prefix, JMESPath and hash function therefore
finds the records this state machine writes, and the other way round.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

import jmespath
from aws_lambda_powertools.utilities.jmespath_utils import PowertoolsFunctions
from jmespath.exceptions import JMESPathError

from .errors import IdempotencyKeyError

_JMESPATH_OPTIONS = jmespath.Options(custom_functions=PowertoolsFunctions())


@lru_cache(maxsize=32)
def _compiled(expression: str) -> Any:
    return jmespath.compile(expression)


def select(expression: str, event: Any) -> Any:
    """The part of ``event`` that ``expression`` selects; the whole event for an empty expression."""
    if not expression:
        return event
    try:
        return _compiled(expression).search(event, options=_JMESPATH_OPTIONS)
    except (JMESPathError, ValueError, TypeError, UnicodeDecodeError, OSError) as error:
        # powertools_json over text that is not JSON raises ValueError, powertools_base64_gzip over
        # text that is not gzip raises OSError: both are bad input, not a crash.
        raise IdempotencyKeyError(
            f"JMESPath {expression!r} cannot be evaluated on this event: {type(error).__name__}: {error}"
        ) from None


def is_missing(selection: Any) -> bool:
    """Powertools' rule: null, empty, or a container of only nulls is no key; 0 and false are keys."""
    if isinstance(selection, dict):
        return all(value is None for value in selection.values())
    if isinstance(selection, list | tuple):
        return all(value is None for value in selection)
    if isinstance(selection, int | float | bool):
        return False
    return not selection


def digest(selection: Any, hash_function: str) -> str:
    """Hex digest of the selection rendered as Powertools renders it (sorted keys, ASCII escapes)."""
    rendered = json.dumps(selection, sort_keys=True).encode()
    hash_constructor = getattr(hashlib, hash_function)
    return str(hash_constructor(rendered).hexdigest())


def idempotency_key(event: Any, *, key_prefix: str, expression: str, hash_function: str) -> str | None:
    """``<prefix>#<digest>``, or None when the event holds no key."""
    selection = select(expression, event)
    if is_missing(selection):
        return None
    return f"{key_prefix}#{digest(selection, hash_function)}"


def validation_hash(event: Any, *, expression: str, hash_function: str) -> str:
    """Digest of the payload-validation selection; empty when validation is not configured."""
    if not expression:
        return ""
    return digest(select(expression, event), hash_function)
