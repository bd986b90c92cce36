"""Configuration of the key Lambda: the IDEMPOTENCY_* environment variables, validated at cold start.

These variables are the contract between the CDK construct, the local engine and this Lambda.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jmespath
from aws_lambda_powertools.utilities.jmespath_utils import PowertoolsFunctions
from jmespath.exceptions import JMESPathError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigurationError

SECONDS_PER_DAY = 86_400
MAX_EXPIRES_AFTER_SECONDS = 365 * SECONDS_PER_DAY
# A Standard workflow runs for at most a year; Lambda itself stops at 900 s.
MAX_TIMEOUT_SECONDS = 365 * SECONDS_PER_DAY
DISABLED_VARIABLE = "POWERTOOLS_IDEMPOTENCY_DISABLED"  # Powertools' own switch, honoured as it is
MAX_PARTITION_KEY_BYTES = 2048  # DynamoDB's limit on a partition key's value: the record's id
_SHAKE_PREFIX = "shake_"  # variable-length digests: hexdigest() needs a length, Powertools cannot use them

KNOWN_JMESPATH_FUNCTIONS = frozenset(PowertoolsFunctions.FUNCTION_TABLE)


def jmespath_problem(expression: str) -> str | None:
    """Why ``expression`` cannot run (bad syntax, unknown function), or None when it can."""
    try:
        parsed = jmespath.compile(expression)
    except JMESPathError as error:
        return f"does not compile: {error}"
    unknown = sorted(_function_names(parsed.parsed) - KNOWN_JMESPATH_FUNCTIONS)
    if unknown:
        return f"calls unknown function(s) {', '.join(unknown)}"
    return None


def _function_names(node: Any) -> set[str]:
    if isinstance(node, dict):
        names = {node["value"]} if node.get("type") == "function_expression" else set()
        for child in node.get("children", []):
            names |= _function_names(child)
        return names
    return set()


def hash_function_problem(name: str) -> str | None:
    constructor = getattr(hashlib, name, None)
    if name.startswith("_") or name.startswith(_SHAKE_PREFIX) or not callable(constructor):
        return f"is not a fixed-length hashlib algorithm (try one of {', '.join(sorted(_FIXED_HASHES))})"
    try:
        constructor(b"").hexdigest()
    except (TypeError, ValueError) as error:
        return f"is not a usable hashlib algorithm: {error}"
    return None


_FIXED_HASHES = {name for name in hashlib.algorithms_guaranteed if not name.startswith(_SHAKE_PREFIX)}


class IdempotencySettings(BaseModel):
    """Read with :func:`load_settings`; field aliases are the environment variable names."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    key_prefix: str = Field(alias="IDEMPOTENCY_KEY_PREFIX", min_length=1)
    event_key_jmespath: str = Field(default="", alias="IDEMPOTENCY_EVENT_KEY_JMESPATH")
    payload_validation_jmespath: str = Field(default="", alias="IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH")
    raise_on_no_key: bool = Field(default=False, alias="IDEMPOTENCY_RAISE_ON_NO_KEY")
    expires_after_seconds: int = Field(
        default=3600, alias="IDEMPOTENCY_EXPIRES_AFTER_SECONDS", ge=1, le=MAX_EXPIRES_AFTER_SECONDS
    )
    hash_function: str = Field(default="md5", alias="IDEMPOTENCY_HASH_FUNCTION")
    timeout_seconds: int = Field(
        default=60, alias="IDEMPOTENCY_TIMEOUT_SECONDS", ge=1, le=MAX_TIMEOUT_SECONDS
    )
    # How long a claim holds the key: the longest the business step can still be running after the
    # key was computed, as the definition's Retry policies allow. The construct and the local engine
    # compute it from the ASL (sfn_idempotency.flow.definitions.worst_case_lease_seconds); unset, it is
    # the timeout (a business step that is never retried).
    lease_seconds: int | None = Field(
        default=None, alias="IDEMPOTENCY_LEASE_SECONDS", ge=1, le=MAX_TIMEOUT_SECONDS
    )
    max_claim_attempts: int = Field(default=3, alias="IDEMPOTENCY_MAX_CLAIM_ATTEMPTS", ge=1, le=10)
    # Opt-in: a duplicate that finds the key in progress waits for the first run (with backoff, within
    # the lease) and replays its result, as AWS's "Idempotent Workflows" sample does; by default it
    # fails at once with IdempotencyAlreadyInProgressError, as Powertools does.
    wait_for_in_progress: bool = Field(default=False, alias="IDEMPOTENCY_WAIT_FOR_IN_PROGRESS")
    # The longest such a wait lasts, all its waits together (unset, or longer: the lease). An Express
    # workflow pays for the wait by duration, and runs 5 minutes at most.
    max_wait_seconds: int | None = Field(
        default=None, alias="IDEMPOTENCY_MAX_WAIT_SECONDS", ge=1, le=MAX_TIMEOUT_SECONDS
    )
    disabled: bool = Field(default=False, alias="POWERTOOLS_IDEMPOTENCY_DISABLED")  # DISABLED_VARIABLE

    @field_validator("key_prefix")
    @classmethod
    def _prefix_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("event_key_jmespath", "payload_validation_jmespath")
    @classmethod
    def _expression_runs(cls, value: str) -> str:
        problem = jmespath_problem(value) if value else None
        if problem:
            raise ValueError(f"JMESPath {value!r} {problem}")
        return value

    @field_validator("hash_function")
    @classmethod
    def _hash_exists(cls, value: str) -> str:
        problem = hash_function_problem(value)
        if problem:
            raise ValueError(f"{value!r} {problem}")
        return value

    @property
    def lease(self) -> int:
        """Seconds from the key's computation until another execution may take the claim over."""
        return self.lease_seconds or self.timeout_seconds

    @model_validator(mode="after")
    def _record_outlives_lease(self) -> IdempotencySettings:
        if self.lease < self.timeout_seconds:
            raise ValueError(
                f"IDEMPOTENCY_LEASE_SECONDS ({self.lease}) must be at least "
                f"IDEMPOTENCY_TIMEOUT_SECONDS ({self.timeout_seconds}): the lease covers the business step"
            )
        # An INPROGRESS record whose `expiration` passed may be claimed by anyone; it must not
        # expire while the business step can still be running.
        if self.expires_after_seconds < self.lease:
            raise ValueError(
                f"IDEMPOTENCY_EXPIRES_AFTER_SECONDS ({self.expires_after_seconds}) must be at least the lease "
                f"({self.lease} s: IDEMPOTENCY_LEASE_SECONDS, computed from the definition as every attempt "
                "of the business step at its timeout plus every retry's backoff, or else "
                "IDEMPOTENCY_TIMEOUT_SECONDS): a record must outlive its lease"
            )
        id_bytes = len(self.key_prefix.encode()) + len("#") + 2 * hashlib.new(self.hash_function).digest_size
        if id_bytes > MAX_PARTITION_KEY_BYTES:
            raise ValueError(
                f"IDEMPOTENCY_KEY_PREFIX is too long: each record's id ('<prefix>#<{self.hash_function} "
                f"hex digest>') would be {id_bytes} bytes, and DynamoDB's partition key holds "
                f"{MAX_PARTITION_KEY_BYTES} at most"
            )
        return self

    def to_environment(self) -> dict[str, str]:
        """The environment variables that reproduce these settings in the key Lambda."""
        values = self.model_dump(by_alias=True, exclude_none=True)
        return {name: _environment_value(value) for name, value in values.items()}


def settings_environment(**fields: object) -> dict[str, str]:
    """The IDEMPOTENCY_* variables of settings given by field name (``key_prefix=...``,
    ``timeout_seconds=...``), for load_settings to validate exactly as it validates an environment."""
    variables = IdempotencySettings.model_fields
    return {str(variables[name].alias): _environment_value(value) for name, value in fields.items()}


def _environment_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def load_settings(environ: Mapping[str, str]) -> IdempotencySettings:
    """Validate the environment; a bad value raises ConfigurationError naming the variable."""
    try:
        return IdempotencySettings.model_validate(dict(environ))
    except ValidationError as error:
        problems = "; ".join(_describe(problem) for problem in error.errors())
        raise ConfigurationError(f"invalid idempotency configuration: {problems}") from None


def environment_settings(environ: Mapping[str, str]) -> IdempotencySettings | None:
    """The function's own settings, or None when no IDEMPOTENCY_* variable is set (a key Lambda
    shared by inline steps, whose settings travel in each payload)."""
    if not any(name.startswith("IDEMPOTENCY_") for name in environ):
        return None
    return load_settings(environ)


def payload_settings(settings: Any) -> IdempotencySettings:
    """The settings an inline step's ComputeKey payload carries (the same variable names), validated
    once per distinct value for the life of the Lambda environment."""
    if not isinstance(settings, dict) or not all(isinstance(v, str) for v in settings.values()):
        raise ConfigurationError(
            "invalid idempotency configuration: payload settings must map names to strings"
        )
    return _cached_settings(json.dumps(settings, sort_keys=True))


@lru_cache(maxsize=64)
def _cached_settings(settings_json: str) -> IdempotencySettings:
    return load_settings(json.loads(settings_json))


def _describe(problem: Any) -> str:
    location = ".".join(str(part) for part in problem["loc"]) or "configuration"
    message = str(problem["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}"
