"""CloudWatch Logs filter patterns, as AWS documents their syntax ("Filter pattern syntax for metric
filters, subscription filters, filter log events and Live Tail",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html), for the
metric filters the engine evaluates. moto stores metric filters but never evaluates them.

Supported, as documented:
- the empty pattern (every event);
- term patterns: every term must appear (case-sensitive), ``"quoted terms"``, ``?term`` (any of the
  ``?`` terms), ``-term`` (must not appear);
- JSON patterns ``{ ... }``: selectors ``$.a.b``, ``$.a[0]``, ``$.['dotted.name']``; ``=`` and
  ``!=`` with strings (``*`` is a wildcard) or numbers, ``<``, ``<=``, ``>``, ``>=`` with numbers;
  ``IS NULL``, ``IS TRUE``, ``IS FALSE``, ``NOT EXISTS``; ``&&``, ``||`` (``&&`` binds tighter)
  and parentheses. A selector that is absent matches nothing but ``NOT EXISTS``.

Anything else (regular expressions ``%...%``, space-delimited ``[...]`` patterns) is refused with
PatternError rather than matched wrongly.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

Matcher = Callable[[str], bool]
ABSENT = object()  # what a selector picks where the event has nothing
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<op>&&|\|\||!=|<=|>=|=|<|>|\(|\)|\})
      | (?P<word>[^\s()&|=!<>{}"]+)
    )""",
    re.VERBOSE,
)
_SELECTOR_PART = re.compile(r"\.\['([^']*)'\]|\.([A-Za-z_][\w-]*)|\[(\d+)\]")


class PatternError(ValueError):
    """A filter pattern the engine cannot evaluate faithfully."""


def compile_pattern(pattern: str) -> Matcher:
    text = pattern.strip()
    if not text or text == '""':
        return lambda message: True
    if text.startswith("{"):
        return _json_matcher(text)
    if text.startswith("["):
        raise PatternError(f"space-delimited filter patterns are not supported here: {pattern!r}")
    return _term_matcher(text)


# -- term patterns ---------------------------------------------------------------------------------
def _term_matcher(text: str) -> Matcher:
    terms = [
        match[1] if match[1] is not None else match[2] for match in re.finditer(r'"([^"]*)"|(\S+)', text)
    ]
    required = [term for term in terms if not term.startswith(("?", "-"))]
    optional = [term[1:] for term in terms if term.startswith("?")]
    excluded = [term[1:] for term in terms if term.startswith("-") and len(term) > 1]

    def matches(message: str) -> bool:
        if any(term in message for term in excluded):
            return False
        if optional and not any(term in message for term in optional):
            return False
        return all(term in message for term in required)

    return matches


# -- JSON patterns ---------------------------------------------------------------------------------
def _json_matcher(text: str) -> Matcher:
    if not text.endswith("}"):
        raise PatternError(f"a JSON filter pattern ends with '}}': {text!r}")
    if "%" in text:
        raise PatternError(f"regular expressions in filter patterns are not supported here: {text!r}")
    parser = _Parser(text[1:-1])
    condition, required = parser.parse()

    needed = tuple(required)

    def matches(message: str) -> bool:
        # A string the pattern needs equal is in the event's text, JSON-quoted (its characters
        # need no escape): most events of a busy group are told apart without being parsed. (A
        # loop, not all() over a generator: this runs for every event and every filter.)
        for literal in needed:
            if literal not in message:
                return False
        try:
            document = _parsed(message)
        except ValueError:
            return False
        return condition(document)

    return matches


Condition = Callable[[Any], bool]
# A condition, and the JSON-quoted strings every event it matches has in its text.
Compiled = tuple[Condition, frozenset[str]]
_NEEDS_NO_ESCAPE = re.compile(r"[A-Za-z0-9 ._:/#@+-]+")


@functools.lru_cache(maxsize=256)
def _parsed(message: str) -> Any:
    """One event parsed once for all the filters of its group (the conditions only read it)."""
    return json.loads(message)


class _Parser:
    """or := and ('||' and)* ; and := atom ('&&' atom)* ; atom := '(' or ')' | comparison."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.position = 0

    def parse(self) -> Compiled:
        compiled = self._or()
        if self.position != len(self.tokens):
            raise PatternError(f"unexpected {self.tokens[self.position][1]!r} in the filter pattern")
        return compiled

    def _peek(self) -> str | None:
        return self.tokens[self.position][1] if self.position < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        if self.position >= len(self.tokens):
            raise PatternError("the filter pattern ends too early")
        token = self.tokens[self.position]
        self.position += 1
        return token

    def _or(self) -> Compiled:
        parts = [self._and()]
        while self._peek() == "||":
            self._take()
            parts.append(self._and())
        if len(parts) == 1:
            return parts[0]
        conditions = [condition for condition, _ in parts]
        required = frozenset.intersection(*(needed for _, needed in parts))
        return (lambda document: any(part(document) for part in conditions)), required

    def _and(self) -> Compiled:
        parts = [self._atom()]
        while self._peek() == "&&":
            self._take()
            parts.append(self._atom())
        if len(parts) == 1:
            return parts[0]
        conditions = [condition for condition, _ in parts]
        required = frozenset().union(*(needed for _, needed in parts))
        return (lambda document: all(part(document) for part in conditions)), required

    def _atom(self) -> Compiled:
        if self._peek() == "(":
            self._take()
            inner = self._or()
            if self._take()[1] != ")":
                raise PatternError("a '(' in the filter pattern is not closed")
            return inner
        kind, selector_text = self._take()
        if kind != "word" or not selector_text.startswith("$"):
            raise PatternError(f"a JSON filter pattern compares a selector ($.field), got {selector_text!r}")
        select = _selector(selector_text)
        kind, word = self._take()
        if kind == "word" and word in ("IS", "NOT"):
            return self._keyword(select, word), frozenset()
        if kind != "op" or word not in _COMPARISONS:
            raise PatternError(f"expected a comparison after {selector_text}, got {word!r}")
        value_kind, value = self._take()
        condition = _comparison(select, word, value_kind, value)
        text = json.loads(value) if value_kind == "string" else None
        needed = (
            word == "=" and isinstance(text, str) and _NEEDS_NO_ESCAPE.fullmatch(text) and "*" not in text
        )
        return condition, frozenset({json.dumps(text)} if needed else ())

    def _keyword(self, select: Callable[[Any], Any], word: str) -> Condition:
        _, what = self._take()
        if word == "NOT":
            if what != "EXISTS":
                raise PatternError(f"expected NOT EXISTS, got NOT {what}")
            return lambda document: select(document) is ABSENT
        tests: dict[str, Callable[[Any], bool]] = {
            "NULL": lambda value: value is None,
            "TRUE": lambda value: value is True,
            "FALSE": lambda value: value is False,
        }
        if what not in tests:
            raise PatternError(f"expected IS NULL, IS TRUE or IS FALSE, got IS {what}")
        test = tests[what]
        return lambda document: test(select(document))


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise PatternError(f"cannot read the filter pattern at {text[position:]!r}")
        kind = str(match.lastgroup)
        tokens.append((kind, match[kind]))
        position = match.end()
    return tokens


def _selector(text: str) -> Callable[[Any], Any]:
    parts: list[str | int] = []
    rest = text[1:]
    while rest:
        match = _SELECTOR_PART.match(rest)
        if match is None:
            raise PatternError(f"cannot read the selector {text!r}")
        quoted, name, index = match.groups()
        parts.append(int(index) if index is not None else (quoted if quoted is not None else name))
        rest = rest[match.end() :]

    def select(document: Any) -> Any:
        value = document
        for part in parts:
            if isinstance(part, int):
                if not (isinstance(value, list) and part < len(value)):
                    return ABSENT
            elif not (isinstance(value, dict) and part in value):
                return ABSENT
            value = value[part]
        return value

    return select


_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _comparison(select: Callable[[Any], Any], operator: str, kind: str, raw: str) -> Condition:
    number = _number(raw) if kind == "word" else None
    if number is not None:
        numeric = _NUMERIC[operator]

        def compare_number(document: Any) -> bool:
            value = select(document)
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
            return numeric(float(value), number)

        return compare_number
    if operator not in ("=", "!="):
        raise PatternError(f"{operator} compares numbers, got {raw!r}")
    text = json.loads(raw) if kind == "string" else raw
    wildcard = re.compile("".join(".*" if char == "*" else re.escape(char) for char in text), re.DOTALL)
    equal = operator == "="

    def compare_string(document: Any) -> bool:
        value = select(document)
        if not isinstance(value, str):
            return False
        return bool(wildcard.fullmatch(value)) == equal

    return compare_string


def value_at(selector: str, message: str) -> Any:
    """What ``$.selector`` (a filter pattern's selector) picks in a JSON event; ABSENT when the event
    is not JSON or has nothing there. A metric filter's value and dimensions are read so."""
    try:
        document = _parsed(message)
    except ValueError:
        return ABSENT
    return _cached_selector(selector)(document)


@functools.lru_cache(maxsize=256)
def _cached_selector(text: str) -> Callable[[Any], Any]:
    return _selector(text)


def _number(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None
