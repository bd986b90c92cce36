"""The example configuration, and how IDEMPOTENCY_* variables override it as on the deployed Lambda."""

from __future__ import annotations

import pytest

from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.settings import EXAMPLE_ENVIRONMENT, example_settings


def test_example_keys_on_order_id():
    settings = example_settings({})
    assert settings.to_environment().items() >= EXAMPLE_ENVIRONMENT.items()
    assert settings.event_key_jmespath == "orderId"


def test_environment_overrides_the_example_and_flags_override_the_environment():
    # Given variables in the environment (and unrelated ones)
    environ = {
        "IDEMPOTENCY_KEY_PREFIX": "payments",
        "IDEMPOTENCY_TIMEOUT_SECONDS": "45",
        "POWERTOOLS_IDEMPOTENCY_DISABLED": "true",
        "HOME": "/somewhere",
    }
    # When settings are built with an explicit override on top
    settings = example_settings(environ, IDEMPOTENCY_TIMEOUT_SECONDS="50")
    # Then environment beats example, and the override beats the environment
    assert settings.key_prefix == "payments"
    assert settings.disabled is True
    assert settings.timeout_seconds == 50
    assert settings.event_key_jmespath == "orderId"


def test_a_bad_environment_value_fails_with_its_name():
    with pytest.raises(ConfigurationError, match="IDEMPOTENCY_EXPIRES_AFTER_SECONDS"):
        example_settings({"IDEMPOTENCY_EXPIRES_AFTER_SECONDS": "never"})
