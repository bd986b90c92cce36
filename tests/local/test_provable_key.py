"""The provable key (sfn_idempotency.flow.provable_key), run by the engine's JSONata, against the real
Powertools package: every event in the proven domain gets Powertools' key and validation hash;
every other event is sent to the ComputeKey Lambda (the expression ends with a named $error)."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfn_idempotency.flow.provable_key import NO_KEY, NOT_PROVABLE, idempotency_block, is_provable
from sfn_idempotency.lambdas.compute_key.errors import IdempotencyKeyError
from sfn_idempotency.lambdas.compute_key.keys import is_missing, select
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.settings import example_settings
from tests.properties import examples
from tests.unit.powertools_reference import powertools_key, powertools_validation

pytestmark = pytest.mark.property

# Printable ASCII without '"' and '\\': the domain's characters.
DOMAIN_CHARACTERS = "".join(sorted(set(string.printable[:95]) - {'"', "\\"}))
# (event-key JMESPath, validation JMESPath): each provable form, alone and combined.
FORMS = [
    ("", ""),
    ("a", ""),
    ("a.b", "c"),
    ('a."k-1"', ""),
    ("[a, b.c]", "a"),
    ("{x: a, y: b.c}", ""),
    ("powertools_json(s).a", "powertools_json(s)"),
    ("powertools_json(s).[a, b]", ""),
    ("a.[b, c]", "[a]"),
]
BATCH = 40  # events evaluated in one TestState call (about 16 with a key in the domain)
HASHES = ["md5", "sha256", "sha1", "sha384", "sha512"]


def domain_values() -> st.SearchStrategy[Any]:
    text = st.text(alphabet=DOMAIN_CHARACTERS, max_size=8)
    scalars = st.one_of(text, st.booleans(), st.none())
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=8,
    )


@st.composite
def events(draw: st.DrawFn, values: st.SearchStrategy[Any], *, with_text: bool = True) -> dict[str, Any]:
    """An object event with the fields the forms read, each of any kind; ``s`` (JSON text, which
    holds quotes) only ``with_text``."""
    event = draw(
        st.fixed_dictionaries(
            {"a": values, "b": st.one_of(values, st.fixed_dictionaries({"c": values})), "c": values},
            optional={"k-1": values, "z": values},
        )
    )
    if with_text:
        event["s"] = json.dumps(
            draw(st.fixed_dictionaries({"a": values, "b": values}, optional={"c": values}))
        )
    return event


def test_every_form_of_the_design_is_provable():
    for key_path, validation_path in FORMS:
        assert is_provable(
            example_settings(
                IDEMPOTENCY_EVENT_KEY_JMESPATH=key_path,
                IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH=validation_path,
            )
        )
    # And what JSONata cannot compute as Powertools does is not
    for key_path in ("a[0]", "a[*].b", "length(a)", "powertools_base64(a)", "a || b"):
        assert not is_provable(example_settings(IDEMPOTENCY_EVENT_KEY_JMESPATH=key_path))
    assert not is_provable(example_settings(IDEMPOTENCY_HASH_FUNCTION="blake2b"))


def _blocks(cloud: LocalCloud, block: str, inputs: list[Any]) -> list[dict[str, Any]]:
    state = {
        "Type": "Pass",
        "QueryLanguage": "JSONata",
        "Output": "{% [$map($states.input, function($event) { " + block + " })] %}",
        "End": True,
    }
    answer = cloud.test_state(definition=json.dumps(state), input=json.dumps(inputs))
    assert answer["status"] == "SUCCEEDED", answer.get("cause")
    return json.loads(answer["output"])  # type: ignore[no-any-return]


@given(
    form=st.sampled_from(FORMS),
    hash_function=st.sampled_from(HASHES),
    with_text=st.booleans(),
    data=st.data(),
)
@settings(
    max_examples=examples(25),
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
def test_an_event_in_the_domain_gets_powertools_key_and_validation(
    local_cloud: LocalCloud, form: tuple[str, str], hash_function: str, with_text: bool, data: st.DataObject
):
    # Given a provable configuration and events whose selections lie in the proven domain
    key_path, validation_path = form
    # (a form that reads JSON text needs it; the whole event holds none, or it would hold quotes)
    with_text = "powertools_json" in key_path + validation_path or (with_text and key_path != "")
    batch = data.draw(st.lists(events(domain_values(), with_text=with_text), min_size=BATCH, max_size=BATCH))
    configured = example_settings(
        IDEMPOTENCY_EVENT_KEY_JMESPATH=key_path,
        IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH=validation_path,
        IDEMPOTENCY_HASH_FUNCTION=hash_function,
    )
    with_key = [
        event
        for event in batch
        if _has_key(key_path, event)
        and _readable(validation_path, event)
        and _in_domain(select(key_path, event))
        and _in_domain(select(validation_path, event) if validation_path else None)
    ]

    # When the engine evaluates the expression for each of them
    blocks = _blocks(local_cloud, idempotency_block(configured, event="$event"), with_key)

    # Then each key and validation hash is the one the real Powertools computes
    for event, block in zip(with_key, blocks, strict=True):
        assert block["key"] == powertools_key(
            event, prefix="orders", jmespath=key_path, hash_function=hash_function
        )
        expected = powertools_validation(event, jmespath=validation_path, hash_function=hash_function)
        assert block["validation"] == (expected if validation_path else "")


OUTSIDE = st.one_of(
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(min_size=1, max_size=6).filter(lambda text: any(c not in DOMAIN_CHARACTERS for c in text)),
)


@given(
    form=st.sampled_from(FORMS[1:]),
    event=events(st.one_of(domain_values(), OUTSIDE, st.lists(OUTSIDE, min_size=1, max_size=2))),
)
@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_other_event_is_sent_to_the_key_lambda(
    local_cloud: LocalCloud, form: tuple[str, str], event: Any
):
    # Given an event whose selection may lie outside the domain, or hold no key
    key_path, validation_path = form
    configured = example_settings(
        IDEMPOTENCY_EVENT_KEY_JMESPATH=key_path, IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH=validation_path
    )
    state = {
        "Type": "Pass",
        "QueryLanguage": "JSONata",
        "Output": "{% " + idempotency_block(configured) + " %}",
        "End": True,
    }

    # When the engine evaluates the expression
    answer = local_cloud.test_state(definition=json.dumps(state), input=json.dumps(event))

    # Then it computes Powertools' key, or names why the Lambda must
    if answer["status"] == "SUCCEEDED":
        block = json.loads(answer["output"])
        assert block["key"] == powertools_key(event, prefix="orders", jmespath=key_path)
    elif answer["cause"].endswith(NO_KEY):  # (the cause quotes the expression, which names both)
        assert _readable(key_path, event)
        assert not _has_key(key_path, event)
    else:
        assert answer["cause"].endswith(NOT_PROVABLE), answer["cause"]
        # (a number JSONata cannot hold exactly sends the whole event to the Lambda, which keeps it)
        assert (
            not _provable(key_path, event)
            or (validation_path and not _provable(validation_path, event))
            or not _exact(event)
        )


def _provable(path: str, event: Any) -> bool:
    return _readable(path, event) and _in_domain(select(path, event))


def _has_key(key_path: str, event: Any) -> bool:
    """Powertools finds a key (an event it cannot read, powertools_json of no text, is the Lambda's)."""
    return _readable(key_path, event) and not is_missing(select(key_path, event))


def _readable(path: str, event: Any) -> bool:
    try:
        select(path, event)
    except IdempotencyKeyError:
        return False
    return True


def _exact(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return abs(value) <= 2**53 - 1
    if isinstance(value, list):
        return all(_exact(item) for item in value)
    if isinstance(value, dict):
        return all(_exact(item) for item in value.values())
    return True


def _in_domain(value: Any) -> bool:
    if isinstance(value, str):
        return all(character in DOMAIN_CHARACTERS for character in value)
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, list):
        return all(_in_domain(item) for item in value)
    if isinstance(value, dict):
        return all(_in_domain(key) and _in_domain(item) for key, item in value.items())
    return False
