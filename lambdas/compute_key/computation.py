"""Turns one event into everything the state machine needs to claim, complete and expire a record."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .clock import Clock
from .errors import IdempotencyKeyError
from .keys import idempotency_key, validation_hash
from .settings import IdempotencySettings

MILLISECONDS_PER_SECOND = 1000
FIRST_WAIT_SECONDS = 1  # a duplicate's waits for the first run: 1, 2, 4... s, each at most
LONGEST_WAIT_SECONDS = 30  # this long, all of them together within the lease


class KeyComputation(BaseModel):
    """The ``idempotency`` block of the state: all numbers the ASL uses come from here."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    disabled: bool
    has_key: bool
    key: str | None
    validation: str
    now: int  # epoch s
    now_ms: int  # epoch ms
    now_ms_text: str  # the same, as text: a Choice compares it with a record's lease (a DynamoDB N)
    expiration: int  # epoch s: when a claimed record may be claimed again (and the TTL)
    in_progress_expiration: int  # epoch ms: when the lease ends (settings.lease after now)
    completed_expiration: int  # epoch s: expiry written on completion (see completed_expiration())
    timeout_seconds: int  # the business step's TimeoutSeconds
    max_claim_attempts: int
    # The waits of a duplicate that finds the key in progress (empty: it fails at once).
    wait_schedule: list[int]
    max_waits: int
    # Unique to this computation, so to one claim attempt: the owner is "<execution id>#<token>",
    # which fences two claims of one execution (Map items, a retried step) from each other too.
    claim_token: str


def key_of(event: Any, settings: IdempotencySettings) -> str | None:
    """The idempotency key of ``event`` under ``settings`` (None: the event holds no key)."""
    return idempotency_key(
        event,
        key_prefix=settings.key_prefix,
        expression=settings.event_key_jmespath,
        hash_function=settings.hash_function,
    )


def compute(event: Any, settings: IdempotencySettings, clock: Clock) -> KeyComputation:
    now_ms = clock.now_ms()
    now = now_ms // MILLISECONDS_PER_SECOND
    key = None
    validation = ""
    if not settings.disabled:
        key = key_of(event, settings)
        if key is None and settings.raise_on_no_key:
            raise IdempotencyKeyError(
                f"No data found to create a hashed idempotency key (JMESPath {settings.event_key_jmespath!r})"
            )
        validation = validation_hash(
            event, expression=settings.payload_validation_jmespath, hash_function=settings.hash_function
        )
    waits = wait_schedule(settings)
    return KeyComputation(
        disabled=settings.disabled,
        has_key=key is not None,
        key=key,
        validation=validation,
        now=now,
        now_ms=now_ms,
        now_ms_text=str(now_ms),
        expiration=now + settings.expires_after_seconds,
        in_progress_expiration=now_ms + settings.lease * MILLISECONDS_PER_SECOND,
        completed_expiration=completed_expiration(now, settings),
        timeout_seconds=settings.timeout_seconds,
        max_claim_attempts=settings.max_claim_attempts,
        wait_schedule=waits,
        max_waits=len(waits),
        claim_token=uuid.uuid4().hex,
    )


def completed_expiration(now: int, settings: IdempotencySettings) -> int:
    """Expiry of a COMPLETED record.

    The business step finishes at most ``lease`` seconds after ``now``; counting the replay
    window from that bound keeps every result for at least ``expires_after_seconds`` after it was
    produced, without a second clock read (another Lambda call) at completion.
    """
    return now + settings.lease + settings.expires_after_seconds


def wait_schedule(settings: IdempotencySettings) -> list[int]:
    """A waiting duplicate's backoff: 1, 2, 4... seconds (each at most LONGEST_WAIT_SECONDS), as
    many as fit together in the lease (or the shorter IDEMPOTENCY_MAX_WAIT_SECONDS), so a wait never
    outlasts the claim it waits for. (Its clock values are its own start's, so it never takes the
    claim it waits for over: when the schedule is used up, it fails as a duplicate does at once.)"""
    if not settings.wait_for_in_progress:
        return []
    longest = min(settings.max_wait_seconds or settings.lease, settings.lease)
    schedule: list[int] = []
    wait = FIRST_WAIT_SECONDS
    while sum(schedule) + wait <= longest:
        schedule.append(wait)
        wait = min(wait * 2, LONGEST_WAIT_SECONDS)
    return schedule
