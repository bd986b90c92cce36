"""Every bad IDEMPOTENCY_* value fails at cold start with a message that names it."""

from __future__ import annotations

import pytest

from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.lambdas.compute_key.settings import load_settings

VALID = {"IDEMPOTENCY_KEY_PREFIX": "orders"}


def test_defaults_match_powertools_defaults():
    # Given only the required prefix; When loaded
    settings = load_settings(VALID)

    # Then the remaining values are Powertools' defaults
    assert settings.event_key_jmespath == ""
    assert settings.payload_validation_jmespath == ""
    assert settings.raise_on_no_key is False
    assert settings.expires_after_seconds == 3600
    assert settings.hash_function == "md5"
    assert settings.disabled is False


def test_round_trips_through_the_environment():
    # Given settings with every field set
    environment = {
        "IDEMPOTENCY_KEY_PREFIX": "p",
        "IDEMPOTENCY_EVENT_KEY_JMESPATH": "powertools_json(body).id",
        "IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH": "amount",
        "IDEMPOTENCY_RAISE_ON_NO_KEY": "true",
        "IDEMPOTENCY_EXPIRES_AFTER_SECONDS": "600",
        "IDEMPOTENCY_HASH_FUNCTION": "sha256",
        "IDEMPOTENCY_TIMEOUT_SECONDS": "20",
        "POWERTOOLS_IDEMPOTENCY_DISABLED": "1",
    }
    # When loaded and written back; Then nothing changed
    settings = load_settings(environment)
    assert load_settings(settings.to_environment()) == settings
    assert settings.disabled is True
    assert settings.raise_on_no_key is True


def test_the_longest_key_prefix_a_record_id_can_hold_loads():
    # Given a prefix whose record ids are exactly DynamoDB's 2048-byte partition key (md5: 32 hex digits)
    settings = load_settings({"IDEMPOTENCY_KEY_PREFIX": "p" * 2015})
    # Then it loads as it is
    assert len(settings.key_prefix) == 2015


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({}, "IDEMPOTENCY_KEY_PREFIX: Field required"),
        ({"IDEMPOTENCY_KEY_PREFIX": ""}, "IDEMPOTENCY_KEY_PREFIX: String should have at least 1 character"),
        ({"IDEMPOTENCY_KEY_PREFIX": "  "}, "IDEMPOTENCY_KEY_PREFIX: must not be blank"),
        (
            {**VALID, "IDEMPOTENCY_HASH_FUNCTION": "md6"},
            "IDEMPOTENCY_HASH_FUNCTION: 'md6' is not a fixed-length",
        ),
        ({**VALID, "IDEMPOTENCY_HASH_FUNCTION": "shake_128"}, "'shake_128' is not a fixed-length hashlib"),
        ({**VALID, "IDEMPOTENCY_HASH_FUNCTION": "new"}, "'new' is not a usable hashlib algorithm"),
        (
            {**VALID, "IDEMPOTENCY_EVENT_KEY_JMESPATH": "orders[?"},
            "IDEMPOTENCY_EVENT_KEY_JMESPATH: JMESPath 'orders[?' does not compile",
        ),
        (
            {**VALID, "IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH": "powertools_jsn(body)"},
            "JMESPath 'powertools_jsn(body)' calls unknown function(s) powertools_jsn",
        ),
        (
            {**VALID, "IDEMPOTENCY_EXPIRES_AFTER_SECONDS": "0"},
            "IDEMPOTENCY_EXPIRES_AFTER_SECONDS: Input should be greater",
        ),
        (
            {**VALID, "IDEMPOTENCY_EXPIRES_AFTER_SECONDS": "soon"},
            "IDEMPOTENCY_EXPIRES_AFTER_SECONDS: Input should be a valid integer",
        ),
        (
            {**VALID, "IDEMPOTENCY_TIMEOUT_SECONDS": "0"},
            "IDEMPOTENCY_TIMEOUT_SECONDS: Input should be greater",
        ),
        (
            {**VALID, "IDEMPOTENCY_RAISE_ON_NO_KEY": "maybe"},
            "IDEMPOTENCY_RAISE_ON_NO_KEY: Input should be a valid boolean",
        ),
        (
            {**VALID, "POWERTOOLS_IDEMPOTENCY_DISABLED": "perhaps"},
            "POWERTOOLS_IDEMPOTENCY_DISABLED: Input should be a valid boolean",
        ),
        (
            {**VALID, "IDEMPOTENCY_KEY_PREFIX": "p" * 2016},
            "each record's id ('<prefix>#<md5 hex digest>') would be 2049 bytes, and DynamoDB's "
            "partition key holds 2048 at most",
        ),
        (
            {**VALID, "IDEMPOTENCY_KEY_PREFIX": "é" * 1000, "IDEMPOTENCY_HASH_FUNCTION": "sha256"},
            "would be 2065 bytes",
        ),
        (
            {**VALID, "IDEMPOTENCY_EXPIRES_AFTER_SECONDS": "30", "IDEMPOTENCY_TIMEOUT_SECONDS": "60"},
            "IDEMPOTENCY_EXPIRES_AFTER_SECONDS (30) must be at least the lease (60 s",
        ),
    ],
)
def test_bad_values_fail_with_a_message_naming_the_variable(environment, message):
    # Given a bad environment; When loaded; Then one clear ConfigurationError
    with pytest.raises(ConfigurationError) as raised:
        load_settings(environment)
    assert message in str(raised.value)
    assert str(raised.value).startswith("invalid idempotency configuration: ")
