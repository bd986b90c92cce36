"""Errors whose class names become the Step Functions ``Error`` of a failed execution."""


class IdempotencyKeyError(Exception):
    """The event has no usable idempotency key, or the key expression could not be evaluated."""


class ConfigurationError(Exception):
    """An ``IDEMPOTENCY_*`` environment variable holds a bad value; raised at cold start."""
