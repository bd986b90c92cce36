"""API Gateway's mapping templates, rendered with airspeed (LocalStack's Velocity engine for Python),
with the variables API Gateway documents
(https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html):
``$input`` (``body``, ``json``, ``path``, ``params``), ``$util``, ``$context`` and ``$stageVariables``.
JSONPath is jsonpath-ng's, as moto's interpreter uses it.

Velocity is Java: templates call Java's String, List and Map methods on what they hold. airspeed
answers the common ones; the rest that API Gateway's own examples and CDK's templates call are added
below, as Java defines them.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import airspeed
from airspeed import operators
from jsonpath_ng.ext.parser import parse as parse_json_path

ROOT = "$"
# Java's StringEscapeUtils.escapeJavaScript, which $util.escapeJavaScript is.
_JAVASCRIPT_ESCAPES = {'"': '\\"', "'": "\\'", "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f"}
_JAVASCRIPT_ESCAPES |= {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class TemplateError(ValueError):
    """A template that API Gateway would not render either (its text, a JSONPath)."""


class BodyNotJson(TemplateError):
    """``$input.json``/``$input.path`` of a body that is not JSON: API Gateway answers 400."""


# -- Java's methods on what a template holds ------------------------------------------------------
_JAVA_STRING_METHODS = {
    "toString": lambda self: self,
    "equals": lambda self, other: self == other,
    "equalsIgnoreCase": lambda self, other: isinstance(other, str) and self.lower() == other.lower(),
    "isEmpty": lambda self: not self,
    "toLowerCase": lambda self: self.lower(),
    "toUpperCase": lambda self: self.upper(),
    "trim": lambda self: self.strip(),
    "endsWith": lambda self, suffix: self.endswith(suffix),
    "replace": lambda self, old, new: self.replace(old, new),
    "split": lambda self, pattern: re.split(pattern, self),
    "lastIndexOf": lambda self, text: self.rfind(text),
    "charAt": lambda self, index: self[index],
    "concat": lambda self, other: self + other,
}
_JAVA_MAP_METHODS = {
    "containsKey": lambda self, key: key in self,
    "isEmpty": lambda self: not self,
    "size": lambda self: len(self),
    "values": lambda self: list(self.values()),
    "entrySet": lambda self: [{"key": key, "value": value} for key, value in self.items()],
}
# Velocity reads a bean property ``$x.empty`` as ``x.isEmpty()``.
_BEAN_PROPERTIES = {"empty": lambda value: not value}


class _NullCall(str):
    """What a method called on null gives: nothing, written as nothing and false in ``#if``, and so
    is every method called on it. airspeed gave None, which its ``#if`` takes as true (as API Gateway
    was recorded taking a null reference: ``#if($missing)``), so a template's
    ``#if($input.path('$.error').toString().equals("…"))`` held on a success, where Velocity's call
    on null is false (as the public templates written against API Gateway rely on)."""


_NULL_CALL = _NullCall("")


def _install_java_methods() -> None:
    """Add, never replace: a method airspeed already answers keeps its answer."""
    for kind, methods in ((str, _JAVA_STRING_METHODS), (dict, _JAVA_MAP_METHODS)):
        known = operators.__additional_methods__.setdefault(kind, {})
        for name, method in methods.items():
            known.setdefault(name, method)
    name_or_call = operators.NameOrCall
    if getattr(name_or_call, "_sfn_local_bean_properties", False):
        return
    calculate = name_or_call.calculate

    def with_bean_properties(self: Any, current_object: Any, loader: Any, top_namespace: Any) -> Any:
        if self.parameters is not None and (current_object is None or current_object is _NULL_CALL):
            return _NULL_CALL  # a method called on null
        property_of = _BEAN_PROPERTIES.get(self.name)
        if (
            property_of is not None
            and self.parameters is None
            and isinstance(current_object, str | list | dict)
        ):
            return property_of(current_object)
        return calculate(self, current_object, loader, top_namespace)

    name_or_call.calculate = with_bean_properties
    name_or_call._sfn_local_bean_properties = True


_install_java_methods()


# -- the variables -----------------------------------------------------------------------------
class Util:
    """``$util``."""

    def base64Encode(self, text: Any) -> str:
        return base64.b64encode(str(text or "").encode("utf-8")).decode("ascii")

    def base64Decode(self, text: Any) -> str:
        return base64.b64decode(str(text or "")).decode("utf-8", errors="replace")

    def escapeJavaScript(self, text: Any) -> str:
        return "".join(_JAVASCRIPT_ESCAPES.get(char, _unicode_escape(char)) for char in _text(text))

    def parseJson(self, text: Any) -> Any:
        try:
            return json.loads(str(text))
        except json.JSONDecodeError as error:
            raise TemplateError(f"$util.parseJson: not JSON ({error.msg})") from None

    def urlEncode(self, text: Any) -> str:
        return urllib.parse.quote_plus(_text(text))

    def urlDecode(self, text: Any) -> str:
        return urllib.parse.unquote_plus(_text(text))


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def _unicode_escape(char: str) -> str:
    return char if " " <= char < "\x7f" else f"\\u{ord(char):04x}"


@dataclass(frozen=True)
class Parameters:
    """A request's parameters as API Gateway passes them to a template (names as sent)."""

    path: Mapping[str, str] = field(default_factory=dict)
    querystring: Mapping[str, str] = field(default_factory=dict)
    header: Mapping[str, str] = field(default_factory=dict)


class Input:
    """``$input`` of one template: its body and the request's parameters."""

    def __init__(self, body: str, parameters: Parameters) -> None:
        self.body = body
        self._parameters = parameters

    def params(self, name: str | None = None) -> Any:
        """Every parameter (``{"path":…, "querystring":…, "header":…}``), or one by name: path, then
        query string, then header (header names without regard to case)."""
        if name is None:
            return {
                "path": dict(self._parameters.path),
                "querystring": dict(self._parameters.querystring),
                "header": dict(self._parameters.header),
            }
        for source in (self._parameters.path, self._parameters.querystring):
            if name in source:
                return source[name]
        headers = {header.lower(): value for header, value in self._parameters.header.items()}
        return headers.get(name.lower(), "")

    def json(self, path: str) -> str:
        """The selection as JSON text (an empty body is ``{}``)."""
        return json.dumps(self.path(path))

    def path(self, path: str) -> Any:
        """The selection as an object (an empty body is ``{}``)."""
        try:
            document: Any = json.loads(self.body) if self.body.strip() else {}
        except json.JSONDecodeError as error:
            # API Gateway's words (the SDK for Java's parser behind them says more).
            raise BodyNotJson(f"Could not parse request body into json: {error.msg}") from None
        if path == ROOT:
            return document
        matches = [match.value for match in _json_path(path).find(document)]
        if not matches:
            return None
        return matches[0] if len(matches) == 1 else matches


@functools.lru_cache(maxsize=256)
def _json_path(path: str) -> Any:
    try:
        return parse_json_path(path)
    except Exception as error:
        raise TemplateError(f"invalid JSONPath {path!r}: {error}") from None


@dataclass
class Rendered:
    """What a template produced: its text, and the status and headers it overrode."""

    text: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


def render(
    template: str,
    *,
    body: str,
    parameters: Parameters,
    context: Mapping[str, Any],
    stage_variables: Mapping[str, str],
) -> Rendered:
    """One template rendered; ``context`` is ``$context`` (its ``responseOverride`` added here)."""
    override: dict[str, Any] = {"status": None, "header": {}}
    namespace = {
        "input": Input(body, parameters),
        "util": Util(),
        "context": {**context, "responseOverride": override},
        "stageVariables": dict(stage_variables),
    }
    try:
        text = _compiled(template).merge(namespace)
    except Exception as error:
        # airspeed wraps what a variable raised (a body that is not JSON) in its own error, each
        # nesting level again; its own errors are a template that API Gateway refuses too.
        raise _raised_by_variable(error) or TemplateError(
            f"the mapping template cannot be rendered: {error}"
        ) from None
    status = override["status"]
    return Rendered(
        text=text.strip(),
        status=int(status) if status not in (None, "") else None,
        headers={name: str(value) for name, value in override["header"].items() if value is not None},
    )


def _raised_by_variable(error: BaseException | None) -> TemplateError | None:
    while error is not None:
        if isinstance(error, TemplateError):
            return error
        error = error.__cause__
    return None


@functools.lru_cache(maxsize=64)
def _compiled(template: str) -> Any:
    """Each template parsed once (a compiled template holds no request's values)."""
    return airspeed.Template(template)
