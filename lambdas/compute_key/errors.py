"""Errors whose class names become the Step Functions ``Error`` of a failed execution."""


class IdempotencyKeyError(Exception):
    """The event has no usable idempotency key, or the key expression could not be evaluated."""


class ConfigurationError(Exception):
    """An ``IDEMPOTENCY_*`` environment variable holds a bad value; raised at cold start."""


# The flow's business state calls the key Lambda through this qualifier, which ComputeKey never uses,
# instead of the business function when its run holds no claim (the redrive fence).
FENCE_QUALIFIER = "$LATEST"


class IdempotencyRedriveFenceError(Exception):
    """The business step's call reached the redrive fence: a redriven execution resumed at its
    business step without a claim made in this run. The flow catches it and claims the key again."""
