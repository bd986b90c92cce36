"""The provable key (sfn_idempotency.flow.provable_key), run by the engine's JSONata, against the real
Powertools package: every event in the proven domain gets Powertools' key and validation
hash; every other event is sent to the ComputeKey Lambda (the expression ends with a named $error),
whose key, through the engine, is Powertools' too (the event as each flavour hands it the Lambda).
1,000 events a path in the suite (examples of 100 events), ten times as many under ``make fuzz``."""

from __future__ import annotations

import itertools
import json
import random
import string
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sfn_idempotency.flow.provable_key import NO_KEY, NOT_PROVABLE, idempotency_block, is_provable
from sfn_idempotency.lambdas.compute_key.errors import IdempotencyKeyError
from sfn_idempotency.lambdas.compute_key.keys import is_missing, select
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
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
BATCH = 100  # events evaluated in one engine call
HASHES = ["md5", "sha256", "sha1", "sha384", "sha512"]
# The flow's flavour decides what its key Lambda receives: the event as sent (JSONPath) or as
# JSONata writes it (5.0 as 5).
FLAVOURS = ("JSONPath", "JSONata")
MACHINE_NUMBERS = itertools.count()


def value(rng: random.Random, *, outside: bool = False, depth: int = 0) -> Any:
    """A JSON value: of the domain (printable ASCII text without '"' or '\\', booleans, null); or,
    ``outside``, of any kind (integers, some written as whole floats, floats, integers beyond 2^53,
    non-ASCII text, quotes, backslashes, control characters) as well. Drawn from ``rng``, seeded by
    hypothesis: thousands of events a second, each one example."""
    kinds = ["text", "text", "boolean", "null"]
    kinds += ["integer", "float", "foreign text", "huge"] if outside else []
    kinds += ["list", "object"] if depth < 3 else []
    kind = rng.choice(kinds)
    if kind == "text":
        return _text(rng)
    if kind == "foreign text":
        return rng.choice(['say "hi"', "back\\slash", "tab\there", "é", "日本", "line\n", "\u007f"])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        number = rng.choice([1, -1]) * rng.choice([0, rng.randint(1, 99), rng.randint(1, 2**53 - 1)])
        return float(number) if rng.random() < 0.3 else number  # 5.0 is written 5 by JSONata
    if kind == "float":
        return rng.choice([0.5, -2.25, 1e-7, 3.14159, 1e21, 0.1 + 0.2])
    if kind == "huge":
        return rng.choice([2**53, -(2**60), 2**70])
    if kind == "list":
        return [value(rng, outside=outside, depth=depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "object":
        keys = [_text(rng) for _ in range(rng.randint(0, 3))]
        return {key: value(rng, outside=outside, depth=depth + 1) for key in keys}
    return None


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(DOMAIN_CHARACTERS) for _ in range(rng.randint(0, 8)))


def event(rng: random.Random, draw: Callable[[], Any], *, with_text: bool) -> dict[str, Any]:
    """An object event with the fields the forms read, each of any kind ``draw`` gives (``a`` often
    an object of them); ``s`` (JSON text, which holds quotes) only ``with_text``."""
    drawn: dict[str, Any] = {
        "a": draw() if rng.random() < 0.3 else {"b": draw(), "c": draw(), "k-1": draw()},
        "b": draw() if rng.random() < 0.3 else {"c": draw()},
        "c": draw(),
    }
    for optional in ("k-1", "z"):
        if rng.random() < 0.5:
            drawn[optional] = draw()
    if with_text:
        drawn["s"] = json.dumps({"a": draw(), "b": draw(), **({"c": draw()} if rng.random() < 0.5 else {})})
    return drawn


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


def _configured(form: tuple[str, str], hash_function: str = "md5") -> IdempotencySettings:
    key_path, validation_path = form
    return example_settings(
        IDEMPOTENCY_EVENT_KEY_JMESPATH=key_path,
        IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH=validation_path,
        IDEMPOTENCY_HASH_FUNCTION=hash_function,
    )


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


# A seed does not shrink: a failure names its event instead.
SUITE = settings(
    max_examples=examples(5),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@given(
    form=st.sampled_from(FORMS),
    hash_function=st.sampled_from(HASHES),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
@settings(SUITE, max_examples=examples(10))
def test_an_event_in_the_domain_gets_powertools_key_and_validation(
    local_cloud: LocalCloud, form: tuple[str, str], hash_function: str, seed: int
):
    # Given a provable configuration and a batch of events whose selections lie in the domain
    rng = random.Random(seed)
    key_path, validation_path = form
    # (a form that reads JSON text needs it; the whole event holds none, or it would hold quotes)
    with_text = "powertools_json" in key_path + validation_path or key_path != ""
    configured = _configured(form, hash_function)
    batch: list[dict[str, Any]] = []
    for _ in range(BATCH * 20):
        candidate = event(rng, lambda: value(rng), with_text=with_text)
        if (
            _has_key(key_path, candidate)
            and _provable(key_path, candidate)
            and (not validation_path or _provable(validation_path, candidate))
        ):
            batch.append(candidate)
        if len(batch) == BATCH:
            break
    assert len(batch) == BATCH  # (the events hold a key in the domain often enough)

    # When the engine evaluates the expression for each of them
    blocks = _blocks(local_cloud, idempotency_block(configured, event="$event"), batch)

    # Then each key and validation hash is the one the real Powertools computes
    for sent, block in zip(batch, blocks, strict=True):
        assert block["key"] == powertools_key(
            sent, prefix="orders", jmespath=key_path, hash_function=hash_function
        )
        expected = powertools_validation(sent, jmespath=validation_path, hash_function=hash_function)
        assert block["validation"] == (expected if validation_path else ""), sent


def _both_paths(flavour: str, block: str, key_function_arn: str, configured: IdempotencySettings) -> str:
    """A machine that keys each item of its input both ways: the ComputeKey Lambda, as the
    flavour's flow hands it the event (JSONPath: as sent; JSONata: as JSONata writes it), and the
    provable key (a JSONata state, as Claim is in either flavour), whose refusal keeps its last words."""
    fast = {
        "StartAt": "Block",
        "States": {"Block": {"Type": "Pass", "QueryLanguage": "JSONata", "End": True}},
    }
    fast["States"]["Block"]["Output"] = (
        "{% ($b := " + block + "; {'key': $b.key, 'validation': $b.validation}) %}"
    )
    reason = (
        "{% ($c := $states.input.refused.Cause; $merge([$sift($states.input, function($v, $k) "
        "{ $k != 'refused' }), {'refused': $substring($c, $length($c) - 60)}])) %}"
    )
    settings = configured.to_environment()
    if flavour == "JSONPath":
        items: dict[str, Any] = {"ItemSelector": {"event.$": "$$.Map.Item.Value"}}
        keyed: dict[str, Any] = {
            "Parameters": {
                "FunctionName": key_function_arn,
                "Payload": {"settings": settings, "event.$": "$.event"},
            },
            "ResultSelector": {
                "key.$": "$.Payload.idempotency.key",
                "validation.$": "$.Payload.idempotency.validation",
            },
            "ResultPath": "$.lambda",
        }
        provable: dict[str, Any] = {"ResultPath": "$.fast", "Catch": [{"ResultPath": "$.refused"}]}
    else:
        items = {"ItemSelector": {"event": "{% $states.context.Map.Item.Value %}"}}
        keyed = {
            "Arguments": {
                "FunctionName": key_function_arn,
                "Payload": {"settings": settings, "event": "{% $states.input.event %}"},
            },
            "Output": "{% $merge([$states.input, {'received': $states.result.Payload.event, 'lambda': "
            "{'key': $states.result.Payload.idempotency.key, 'validation': "
            "$states.result.Payload.idempotency.validation}}]) %}",
        }
        provable = {
            "Output": "{% $merge([$states.input, {'fast': $states.result}]) %}",
            "Catch": [{"Output": "{% $merge([$states.input, {'refused': $states.errorOutput}]) %}"}],
        }
    provable["Catch"][0].update({"ErrorEquals": ["States.QueryEvaluationError"], "Next": "Reason"})
    processor = {
        "ProcessorConfig": {"Mode": "INLINE"},
        "StartAt": "Lambda",
        "States": {
            "Lambda": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                **keyed,
                "Next": "Provable",
            },
            "Provable": {"Type": "Parallel", "Branches": [fast], **provable, "End": True},
            "Reason": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": reason, "End": True},
        },
    }
    machine = {"QueryLanguage": flavour, "StartAt": "Each", "States": {"Each": {"Type": "Map", **items}}}
    machine["States"]["Each"].update({"ItemProcessor": processor, "End": True})
    return json.dumps(machine)


@pytest.mark.parametrize("flavour", FLAVOURS)
@given(form=st.sampled_from(FORMS[1:]), seed=st.integers(min_value=0, max_value=2**32 - 1))
@SUITE
def test_every_event_gets_powertools_key_by_one_path_or_the_other(
    local_cloud: LocalCloud, flavour: str, form: tuple[str, str], seed: int
):
    # Given events of every kind: in the domain, with numbers, non-ASCII text, quotes, no key
    rng = random.Random(seed)
    key_path, validation_path = form
    configured = _configured(form)
    batch = [event(rng, lambda: value(rng, outside=rng.random() < 0.5), with_text=True) for _ in range(BATCH)]
    key_function_arn = local_cloud.idempotency_substitutions()["IdempotencyKeyFunctionArn"]  # inline steps'
    block = idempotency_block(configured, event="$states.input.event")
    machine = local_cloud.create_state_machine(
        f"both-paths-{next(MACHINE_NUMBERS)}", _both_paths(flavour, block, key_function_arn, configured), {}
    )

    # When the engine keys each of them both ways
    result = local_cloud.run(machine, batch)
    assert result.status == "SUCCEEDED", result.cause

    # Then the key Lambda's key is Powertools' for the event as it received it, and the provable key
    # either gives the very same key and validation hash or names why the Lambda must
    # (both paths taken: about a third of the events the provable key claims, the rest it refuses)
    assert 0 < sum("fast" in item for item in result.output) < BATCH
    for sent, item in zip(batch, result.output, strict=True):
        received, by_lambda = (item["received"] if flavour == "JSONata" else sent), item["lambda"]
        expected = (
            powertools_key(received, prefix="orders", jmespath=key_path)
            if _has_key(key_path, received)
            else None
        )
        assert by_lambda["key"] == expected, sent
        if "fast" in item:
            (fast,) = item["fast"]
            assert fast == {"key": by_lambda["key"], "validation": by_lambda["validation"]}, sent
        elif item["refused"].endswith(NO_KEY):  # (the cause quotes the expression, which names both)
            assert _readable(key_path, received)
            assert not _has_key(key_path, received)
        else:
            assert item["refused"].endswith(NOT_PROVABLE), item["refused"]
            # (a number JSONata cannot hold exactly sends the whole event to the Lambda, which keeps it)
            assert (
                not _provable(key_path, received)
                or (validation_path and not _provable(validation_path, received))
                or not _exact(sent)
            ), sent


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
