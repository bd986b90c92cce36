"""JSONata as Step Functions evaluates it, for compat fix 15: jsonata-python (a port of jsonata-java,
the evaluator LocalStack wires to the interpreter moto ported) plus the functions Step Functions adds.

Step Functions adds ``$partition``, ``$range``, ``$hash``, ``$random`` (with an optional seed),
``$uuid`` and ``$parse``, and does not support ``$eval``
(https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import uuid
from collections.abc import Callable
from typing import Any

from jsonata import Jsonata
from jsonata.utils import Utils
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

# $hash's algorithm names, as Step Functions spells them.
HASH_ALGORITHMS = {
    "MD5": "md5",
    "SHA-1": "sha1",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
}
MAX_RANGE_ITEMS = 1000  # as States.ArrayRange
_COMPILED_KEPT = 1024  # distinct expressions parsed and kept
_DECLARATION = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*):=")
_JSON = json.JSONDecoder()


class JSONataEvaluationError(Exception):
    """The expression failed to evaluate (a type error, a function Step Functions lacks...)."""


def evaluate(expression: str) -> Any:
    """The expression's value as JSON values (None: undefined or null); JSONataEvaluationError if it fails.

    moto hands over one text: ``($name:=<JSON>;...<expression>)``, the variables and ``$states``
    declared ahead of the state's expression. Parsing that text at every evaluation cost most of a
    JSONata workflow's time; the declarations are bound as values instead and each distinct
    expression is parsed once."""
    try:
        bindings, body = _declared_bindings(expression)
        result = _compiled(body).evaluate(None, bindings)
        # As the JVM bridge hands results over: JSON values only (a function is not one); JSONata
        # numbers are doubles, written without a fraction when whole (as AWS prints 2, not 2.0).
        return _whole_numbers_as_int(json.loads(json.dumps(result)))
    except JSONataEvaluationError:
        raise
    except Exception as error:
        raise JSONataEvaluationError(str(error)) from error


@functools.lru_cache(maxsize=_COMPILED_KEPT)
def _compiled(expression: str) -> Jsonata:
    compiled = Jsonata(expression)
    for name, function in STEP_FUNCTIONS_FUNCTIONS.items():
        compiled.register_lambda(name, function)
    return compiled


def _declared_bindings(expression: str) -> tuple[dict[str, Any], str]:
    """Split ``($a:=<JSON>;$b:=<JSON>;body)`` into ``{"a": ..., "b": ...}`` and ``(body)``. Binding a
    name to a JSON value ahead of a block is what the declaration does, so the meaning is the same."""
    if not (expression.startswith("(") and expression.endswith(")")):
        return {}, expression
    text = expression[1:-1]
    bindings: dict[str, Any] = {}
    position = 0
    while (declaration := _DECLARATION.match(text, position)) is not None:
        try:
            value, end = _JSON.raw_decode(text, declaration.end())
        except ValueError:
            break
        if not text.startswith(";", end):
            break
        bindings[declaration.group(1)] = _as_jsonata(value)
        position = end + 1
    return bindings, f"({text[position:]})"


def _whole_numbers_as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole_numbers_as_int(item) for item in value]
    if isinstance(value, dict):
        return {key: _whole_numbers_as_int(item) for key, item in value.items()}
    return value


def _partition(array: list[Any], chunk_size: float) -> list[list[Any]]:
    size = int(chunk_size)
    if not isinstance(array, list) or size < 1:
        raise JSONataEvaluationError("$partition takes an array and a chunk size of at least 1")
    return [array[start : start + size] for start in range(0, len(array), size)]


def _range(first: float, last: float, step: float) -> Any:
    if step == 0:
        raise JSONataEvaluationError("$range needs a step other than 0")
    count = max(0, int((last - first) // step) + 1)
    if count > MAX_RANGE_ITEMS:
        raise JSONataEvaluationError(f"$range makes at most {MAX_RANGE_ITEMS} items, this would be {count}")
    # A sequence, as JSONata's own functions return: one item alone is that item (recorded on AWS:
    # $range(1, 1, 1) is 1, not [1]).
    return Utils.create_sequence_from_iter(first + index * step for index in range(count))


def _hash(value: str, algorithm: str) -> str:
    name = HASH_ALGORITHMS.get(algorithm)
    if name is None or not isinstance(value, str):
        raise JSONataEvaluationError(f"$hash takes a string and one of {', '.join(HASH_ALGORITHMS)}")
    return hashlib.new(name, value.encode("utf-8")).hexdigest()


def _random(seed: float | None = None) -> float:
    return random.Random(seed).random() if seed is not None else random.random()


def _uuid() -> str:
    return str(uuid.uuid4())


def _parse(text: str) -> Any:
    try:
        return _as_jsonata(json.loads(text))
    except (TypeError, json.JSONDecodeError) as error:
        raise JSONataEvaluationError(f"$parse: not JSON text: {error}") from None


def _as_jsonata(value: Any) -> Any:
    """A JSON value as the evaluator holds it: JSON null is its NULL_VALUE (None means undefined)."""
    if value is None:
        return Utils.NULL_VALUE
    if isinstance(value, list):
        return [_as_jsonata(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_jsonata(item) for key, item in value.items()}
    return value


def _unsupported(name: str) -> Callable[..., Any]:
    def refuse(*_: Any) -> Any:
        raise JSONataEvaluationError(f"the JSONata function ${name} is not supported by Step Functions")

    return refuse


STEP_FUNCTIONS_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "partition": _partition,
    "range": _range,
    "hash": _hash,
    "random": _random,
    "uuid": _uuid,
    "parse": _parse,
    "eval": _unsupported("eval"),
}


def encode_declarations(bindings: dict[str, Any]) -> str:
    """``$name:=<JSON>;`` for each binding, a string value escaped as JSON text (moto wrote it between
    quotes as it was, so a quote in it broke the expression); other values as moto encodes them
    (its encoder also writes the context object's timestamps)."""
    return "".join(f"{name}:={_json_text(value)};" for name, value in bindings.items())


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    text: str = to_json_str(value, separators=(",", ":"))
    return text
