"""What the provable key (sfn_idempotency.flow.provable_key) relies on in Step Functions' JSONata that
no recording shows: each a TestState or ValidateStateMachineDefinition request, its answer on the
engine pinned by the suite, compared with AWS's by ``make aws-check`` (ledger L50, "not yet observed").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

DOMAIN_CLASS = r"/[^ !#-\[\]-~]/"


@dataclass(frozen=True)
class Probe:
    name: str
    ask: Callable[[Any], Any]  # a Step Functions client -> what the fast path reads of the answer
    expected: Any


def _output(expression: str, given: str = "{}") -> Callable[[Any], Any]:
    state = {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% " + expression + " %}", "End": True}

    def ask(sfn: Any) -> Any:
        answer = sfn.test_state(definition=json.dumps(state), input=given)
        return json.loads(answer["output"]) if answer.get("status") == "SUCCEEDED" else answer.get("error")

    return ask


def _validates(definition: dict[str, Any]) -> Callable[[Any], Any]:
    def ask(sfn: Any) -> Any:
        return sfn.validate_state_machine_definition(definition=json.dumps(definition))["result"]

    return ask


_RENDERED = '{"a": ["x", true, null]}'
_JSONATA_CLAIM_IN_JSONPATH = {
    "StartAt": "Claim",
    "States": {
        "Claim": {
            "Type": "Pass",
            "QueryLanguage": "JSONata",
            "Output": "{% {'key': $hash($string($states.input), 'MD5')} %}",
            "Next": "Read",
        },
        "Read": {"Type": "Pass", "InputPath": "$.key", "End": True},
    },
}

PROBES = (
    Probe(
        "$hash hashes the text's UTF-8 bytes (MD5)",
        _output(f"$hash('{_RENDERED}', 'MD5')"),
        hashlib.md5(_RENDERED.encode()).hexdigest(),
    ),
    Probe(
        "$hash hashes the text's UTF-8 bytes (SHA-256)",
        _output(f"$hash('{_RENDERED}', 'SHA-256')"),
        hashlib.sha256(_RENDERED.encode()).hexdigest(),
    ),
    Probe(
        "the domain's class matches a quote, a backslash, a newline, non-ASCII; not printable ASCII",
        _output(
            "["
            + ", ".join(
                f"$contains({text}, {DOMAIN_CLASS})"
                for text in ("'a\"b'", "'a\\\\b'", "'x\\n'", "'é'", "'ok ~!#[]{}'")
            )
            + "]"
        ),
        [True, True, True, True, False],
    ),
    Probe("an empty array kept as a field's value", _output("$lookup({'v': []}, 'v')"), []),
    Probe("an object without keys has none", _output("$count($keys({}))"), 0),
    Probe("a function is a value of its own type", _output("$type(function() { 1 })"), "function"),
    Probe(
        "an epoch in milliseconds written as digits",
        _output("$formatInteger(1796622667831, '0')"),
        "1796622667831",
    ),
    Probe("a number's input text is not kept (5.0 is 5)", _output("$string($states.input)", "5.0"), "5"),
    Probe("a JSONata state in a JSONPath machine is valid", _validates(_JSONATA_CLAIM_IN_JSONPATH), "OK"),
)


def check(sfn: Any, out: TextIO) -> int:
    """Each probe asked of ``sfn``; the number whose answer differs from the engine's, each printed."""
    differing = 0
    for probe in PROBES:
        answer = probe.ask(sfn)
        same = answer == probe.expected
        differing += not same
        print(
            f"  {'same' if same else 'DIFFERS'}  {probe.name}" + ("" if same else f": {answer!r}"), file=out
        )
    return differing
