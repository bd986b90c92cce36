"""The provable key: the key, validation hash and clock values the ComputeKey Lambda computes, as one
JSONata expression, for the JMESPath forms whose JSONata translation gives Powertools' selection.

The forms: a chain of fields (``detail.orderId``), a multi-select list or hash of such chains
(``[a, b.c]``, ``{id: a}``), ``powertools_json(...)`` of one, and the whole event (no expression).
Powertools renders the selection as ``json.dumps(sort_keys=True)`` and hashes its bytes; the
expression renders it the same way for the domain a property test proves identical (strings of
printable ASCII without ``"`` or ``\\``, booleans and null, in objects and arrays: no numbers, since
JSONata reads ``5.0`` as ``5``). A selection outside that domain, a missing key and a disabled step
end the expression with ``$error``: the state's Catch sends the event through the ComputeKey
Lambda, the one implementation of every key.
"""

from __future__ import annotations

import json
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from sfn_idempotency.lambdas.compute_key.computation import wait_schedule
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings

MILLISECONDS_PER_SECOND = 1000
PLACEHOLDER = "ProvableKey"  # in the flow's Claim: its expression, written at build time
# In the release workflow's KeyedRelease: the expression on the ended execution's input.
ENDED_EXECUTION_PLACEHOLDER = "ProvableKeyOfEndedExecution"
ENDED_EXECUTION_INPUT = "$parse($states.input.detail.input)"
# The states that key by the expression (the flow's Claim, and its route for what Claim cannot key;
# the release workflow's KeyedRelease); where the settings are never provable, ComputeKey takes
# their place.
PROVABLE_KEY_STATES = ("Claim", "RouteByEvent", "KeyedRelease")
LAMBDA_KEYED_START = "ComputeKey"
# An event whose JSON text is longer than this goes to the ComputeKey Lambda: at up to 3 UTF-8 bytes a
# character, it and the flow's envelope (under 1 KiB) always fit the 256 KiB a state carries, so
# Claim's output never fails after its write (the Lambda's path names a larger event's failure). So
# does an event with a number JSONata cannot hold exactly (beyond 2^53): Claim's output carries the
# event as JSONata writes it (a whole-number float as an integer, 5.0 as 5, as the JSONata flow does).
LONGEST_EVENT_CHARACTERS = 85_000
# Powertools' hash names (hashlib's) and Step Functions' $hash names for the same digests.
HASH_ALGORITHMS = {
    "md5": "MD5",
    "sha1": "SHA-1",
    "sha256": "SHA-256",
    "sha384": "SHA-384",
    "sha512": "SHA-512",
}
# The words each fallback ends the expression with (a Choice reads them in the error's cause).
NOT_PROVABLE = "sfn-idempotency: the key is not provable for this event"
NO_KEY = "sfn-idempotency: the event holds no key"
DISABLED = "sfn-idempotency: idempotency is disabled"

# The helper functions every expression defines: JMESPath's field access (null for what is missing
# or not an object's), Powertools' missing-key rule, the proven domain and json.dumps(sort_keys=True),
# each also for a multi-select list (a function: see _translated). The class of the characters
# outside the domain has no backslash before its closing bracket: JSONata's lexer (jsonata-js's and
# its Python port's alike) would not see that bracket close the class, and refuse the expression.
_HELPERS = r"""
  $field := function($v, $k) { $type($v) = 'object' and $exists($lookup($v, $k)) ? $lookup($v, $k) : null };
  $json := function($v) { $type($v) = 'string' ? $parse($v) : $error('%(not_provable)s') };
  $item := function($x) { $exists($lookup($x, 'v')) ? $lookup($x, 'v') : null };
  $provable := function($v) {(
    $t := $type($v);
    $t = 'string' ? $not($contains($v, /[^ !#-\[\]-~]/)) :
    $t = 'boolean' or $t = 'null' ? true :
    $t = 'array' ? $reduce($v, function($ok, $x) { $ok and $provable($x) }, true) :
    $t = 'function' ? $reduce($v(), function($ok, $x) { $ok and $provable($item($x)) }, true) :
    $t = 'object' ? $count($keys($v)) = 0 or
      $reduce($keys($v), function($ok, $k) { $ok and $provable($k) and $provable($lookup($v, $k)) }, true) :
    false
  )};
  $rendered := function($v) {(
    $t := $type($v);
    $t = 'string' ? '"' & $v & '"' :
    $t = 'boolean' ? ($v ? 'true' : 'false') :
    $t = 'null' ? 'null' :
    $t = 'array' ? '[' & $join([$map($v, function($x) { $rendered($x) })], ', ') & ']' :
    $t = 'function' ? '[' & $join([$map($v(), function($x) { $rendered($item($x)) })], ', ') & ']' :
    '{' & $join([$map($sort($keys($v)), function($k) { '"' & $k & '": ' & $rendered($lookup($v, $k)) })], ', ') & '}'
  )};
  $missing := function($v) {(
    $t := $type($v);
    $t = 'null' or ($t = 'string' and $v = '') or
    ($t = 'array' and $reduce($v, function($none, $x) { $none and $type($x) = 'null' }, true)) or
    ($t = 'function' and $reduce($v(), function($none, $x) { $none and $type($item($x)) = 'null' }, true)) or
    ($t = 'object' and ($count($keys($v)) = 0 or
      $reduce($keys($v), function($none, $k) { $none and $type($lookup($v, $k)) = 'null' }, true)))
  )};
  $exact := function($v) {(
    $t := $type($v);
    $t = 'number' ? $abs($v) <= 9007199254740991 :
    $t = 'array' ? $reduce($v, function($ok, $x) { $ok and $exact($x) }, true) :
    $t = 'object' ? $count($keys($v)) = 0 or $reduce($keys($v), function($ok, $k) { $ok and $exact($lookup($v, $k)) }, true) :
    true
  )};
  $digest := function($v) { $provable($v) ? $hash($rendered($v), %(algorithm)s) : $error('%(not_provable)s') };
"""


def selection(expression: str, source: str = "$states.input") -> str | None:
    """The JSONata expression that selects what JMESPath ``expression`` selects from ``source``
    (JMESPath's nulls included), or None when the expression is not one of the provable forms."""
    if not expression:
        return source
    try:
        tree = jmespath.compile(expression).parsed
    except JMESPathError:
        return None
    return _translated(tree, source)


def _translated(node: dict[str, Any], current: str) -> str | None:
    kind, children = node["type"], node.get("children", [])
    if kind == "field":
        return f"$field({current}, {json.dumps(node['value'])})"
    if kind == "current":
        return current
    if kind == "subexpression":
        left = _translated(children[0], current)
        return None if left is None else _translated(children[1], f"({left})")
    if kind == "function_expression" and node["value"] == "powertools_json" and len(children) == 1:
        argument = _translated(children[0], current)
        return None if argument is None else f"$json({argument})"
    if kind == "multi_select_list":
        items = [_translated(child, current) for child in children]
        if any(item is None for item in items):
            return None
        # A list is a function answering its items, each wrapped in an object: no JSON value is a
        # function, and an array constructor would splice an item that is itself an empty array.
        wrapped = ", ".join(f'{{"v": {item}}}' for item in items)
        return f"($type({current}) = 'null' ? null : function() {{ [{wrapped}] }})"
    if kind == "multi_select_dict":
        pairs = []
        for pair in children:
            value = _translated(pair["children"][0], current)
            if value is None:
                return None
            pairs.append(f"{json.dumps(pair['value'])}: {value}")
        return f"($type({current}) = 'null' ? null : {{{', '.join(pairs)}}})"
    return None


def is_provable(settings: IdempotencySettings) -> bool:
    """Whether the settings' key (and validation) can be computed by the expression."""
    return (
        settings.hash_function in HASH_ALGORITHMS
        and selection(settings.event_key_jmespath) is not None
        and (
            not settings.payload_validation_jmespath
            or selection(settings.payload_validation_jmespath) is not None
        )
    )


def idempotency_block(settings: IdempotencySettings, event: str = "$states.input") -> str:
    """The JSONata expression (without ``{% %}``) of the ``idempotency`` block the ComputeKey Lambda
    answers for ``event``, or an ``$error`` that sends the event to the Lambda (a key that is not
    provable, none, or a disabled step). Clock values are the state's entry time, the same across
    the state's retries; the claim token is unique to this entry of this state (the execution, the
    state, its entry time and the Map item it runs for)."""
    key_selection = selection(settings.event_key_jmespath, "$event")
    validation_selection = (
        selection(settings.payload_validation_jmespath, "$event")
        if settings.payload_validation_jmespath
        else None
    )
    algorithm = HASH_ALGORITHMS.get(settings.hash_function)
    if (
        key_selection is None
        or algorithm is None
        or (settings.payload_validation_jmespath and validation_selection is None)
    ):
        return f"$error('{NOT_PROVABLE}')"
    # raise_on_no_key: a missing key is the Lambda's to refuse, with IdempotencyKeyError.
    no_key = NOT_PROVABLE if settings.raise_on_no_key else NO_KEY
    disabled = f"$error('{DISABLED}')" if settings.disabled else "false"
    waits = wait_schedule(settings)
    lease_ms = settings.lease * MILLISECONDS_PER_SECOND
    helpers = _HELPERS % {"algorithm": json.dumps(algorithm), "not_provable": NOT_PROVABLE}
    validation = f"$digest({validation_selection})" if validation_selection else "''"
    # One line: whitespace between tokens is all a line break is to JSONata, and a one-line
    # expression is what every validator of the definition reads as one.
    return " ".join(
        line.strip()
        for line in f"""(
  $event := {event};
  $length($string($event)) > {LONGEST_EVENT_CHARACTERS} ? $error('{NOT_PROVABLE}') : {disabled};
{helpers}
  $exact($event) ? true : $error('{NOT_PROVABLE}');
  $selection := {key_selection};
  $missing($selection) ? $error('{no_key}') : (
    $key := {json.dumps(settings.key_prefix)} & '#' & $digest($selection);
    $nowMs := $toMillis($states.context.State.EnteredTime);
    $now := $floor($nowMs / {MILLISECONDS_PER_SECOND});
    {{
      "disabled": false,
      "hasKey": true,
      "key": $key,
      "validation": {validation},
      "now": $now,
      "nowMs": $nowMs,
      "nowMsText": $formatInteger($nowMs, '0'),
      "expiration": $now + {settings.expires_after_seconds},
      "inProgressExpiration": $nowMs + {lease_ms},
      "completedExpiration": $now + {settings.lease + settings.expires_after_seconds},
      "timeoutSeconds": {settings.timeout_seconds},
      "maxClaimAttempts": {settings.max_claim_attempts},
      "waitSchedule": {json.dumps(waits)},
      "maxWaits": {len(waits)},
      "claimToken": $hash($states.context.Execution.Id & '#' & $states.context.State.Name & '#' &
        $states.context.State.EnteredTime & '#' & $string($states.context.Map.Item.Index), 'MD5')
    }}
  )
)""".splitlines()
        if line.strip()
    )


def substitutions(settings: IdempotencySettings, definition: str) -> dict[str, str]:
    """The provable-key placeholders of ``definition`` filled for ``settings``: in either flow's Claim
    (``${ProvableKey}``...) the expression, what a run without a record reads, and the words of the
    two errors that mean "no record" (RouteByEvent tells them from "not provable"); in the release
    workflow, the expression on the ended execution's input; none in another definition. Each lands
    inside a JSON string: the engine's ``render`` escapes it, as the constructs do for
    CloudFormation, which substitutes text as it is."""
    filled: dict[str, str] = {}
    if f"${{{ENDED_EXECUTION_PLACEHOLDER}}}" in definition:
        filled[ENDED_EXECUTION_PLACEHOLDER] = idempotency_block(settings, ENDED_EXECUTION_INPUT)
    if f"${{{PLACEHOLDER}}}" in definition:
        keyless = {"disabled": settings.disabled, "hasKey": False, "timeoutSeconds": settings.timeout_seconds}
        filled.update(
            {
                PLACEHOLDER: idempotency_block(settings),
                "KeylessIdempotency": json.dumps(keyless),
                "NoKeyWords": NO_KEY,
                "DisabledWords": DISABLED,
            }
        )
    return filled


def keyed_as_settings_allow(definition: str, settings: IdempotencySettings) -> str:
    """``definition`` (a standalone flow's or the release workflow's text, as its placeholders
    stand) without its provable-key states where ``settings`` can never be proven: they would only
    add states to every run. Any other definition unchanged."""
    if is_provable(settings) or not substitutions(settings, definition):
        return definition
    return json.dumps(without_provable_key(json.loads(definition)), indent=2)


def with_provable_key(flow: dict[str, Any], settings: IdempotencySettings) -> dict[str, Any]:
    """``flow`` (a parsed JSONata idempotency flow: a wrapped JSONata step's) claiming by the provable
    key, ``settings`` written in; keyed by the ComputeKey Lambda alone where ``settings`` are not
    provable (a Claim that can key no event would only add two states to every run)."""
    if not is_provable(settings):
        return without_provable_key(flow)
    return json.loads(written_in(json.dumps(flow), settings))  # type: ignore[no-any-return]


def written_in(definition: str, settings: IdempotencySettings) -> str:
    """``definition`` with its provable-key placeholders filled for ``settings`` (escaped, as each
    lands inside a JSON string) and every other placeholder left as it stands."""
    for name, value in substitutions(settings, definition).items():
        definition = definition.replace(f"${{{name}}}", json.dumps(value)[1:-1])
    return definition


def without_provable_key(flow: dict[str, Any]) -> dict[str, Any]:
    """``flow`` (a parsed idempotency flow or release workflow) keyed by the ComputeKey Lambda alone:
    where its settings can never be proven, the provable-key states would only add states to every
    run. What led to them leads to ComputeKey."""
    states = flow["States"]
    for name in PROVABLE_KEY_STATES:
        states.pop(name, None)
    flow["StartAt"] = _keyed_by_the_lambda(flow["StartAt"])
    for state in states.values():
        for transition in [state, *state.get("Choices", ()), *state.get("Catch", ())]:
            for field in ("Next", "Default"):
                if field in transition:
                    transition[field] = _keyed_by_the_lambda(transition[field])
    return flow


def _keyed_by_the_lambda(target: str) -> str:
    return LAMBDA_KEYED_START if target in PROVABLE_KEY_STATES else target
