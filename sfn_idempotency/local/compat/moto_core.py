"""moto's own plumbing, under every service (fixes 57, 81, 101, 111, 122, 124, 127, 128, 133 and
143, speed: no behaviour changes; fixes 97, 149 and 150).

57. Every look-up of a service's backend (``dynamodb_backends[account][region]``, many per Task)
    took moto's one global lock, listed the accounts and searched the registry of backends by
    equality. A backend for an account that is already there is answered without them: moto only
    adds an account under the lock, and its reset removes the account with the registration.
81. moto's Batch integration imports ``moto.batch`` for one enum, and ``moto.batch`` imports its
    models and through them all of EC2 (its instance types, regions and zones): about 2 s of every
    engine's start, for a service few machines call. The package is registered without running its
    ``__init__``; its backends load when first asked for (moto's backend registry asks for
    ``batch_backends`` when a Batch request first arrives).
101. moto lists each service's regions with ``boto3.Session().get_available_regions``, a new
    session each time, and botocore reads the service's whole API model to learn its endpoint
    prefix: EC2's region table did it three times at its import (its 4 MB model each time), 0.6 s
    of the first stack a deployment makes. The answer depends only on the installed botocore's
    data, so each (service, partition) is answered once per process.
111. ``serve`` (moto's server) asks, for every request, whether its host names a moto module, and
    moto answered by listing its package's folder and asking the file system of each entry whether
    it is a folder: 7 % of ``serve``'s time on a plain StartExecution and DescribeExecution. The
    installed package does not change while the process runs, so the folder is listed once.
122. moto serializes an answer by asking, for each member of its shape, six alias providers (and
     botocore's ``xform_name`` for each alias) which attribute of the result may hold it: a sixth
     of the time moto's server took to answer a DescribeExecution. The aliases depend only on the
     picker's class, the result's class, the member's name and its shape (with the structure it
     was last met in), so each shape keeps them. A result with a ``Meta`` of its own, or a class
     that answers attributes itself (``__getattr__``), is asked every time, as before.
124. Each request's action name (``DescribeExecution``) became its method's name
     (``describe_execution``) through moto's regular expressions, at every request. A name's
     method name never changes: each is converted once (the most recent 512 names are kept).
127. In process, moto's stub of botocore found each request's service by matching its URL against
     the URL pattern of every service in turn, up to 183 regular expressions (Step Functions is
     the 167th), at every call. The first service whose pattern matches depends only on the URL,
     so each URL's is found once (the most recent 1,024 URLs are kept); the rest (pass-through,
     allow lists, the service's own URLs) is moto's, at every call, and a URL whose service has
     no handler for it, or no service at all, goes to moto's own walk. Once answered, the request
     drops werkzeug's reference to itself in its WSGI environ (``werkzeug.request``): a cycle per
     call, which only the garbage collector freed, a fourth of the cyclic garbage of a run.
128. moto drew each random text (every answer's 52-character request id) one ``random.choice`` at
     a time: six Python calls per character, 314 of the 2,888 calls ``serve`` made to answer a
     DescribeExecution. Each character is now drawn as ``choice`` draws it (``getrandbits`` of the
     pool's bit length, again while out of range), so a seeded moto draws the same texts and
     leaves its generator in the same state.
133. Every request's root URL (``raw_url``, which moto hands each service, starts with it) was
     built by werkzeug from its scheme, host and mount point, each part quoted and the whole
     turned from a URI into an IRI, at every request. It depends on those three texts only: each
     is built once (the most recent 256 are kept).
143. Each start of moto's mock (every LocalCloud's, one per test) built a ``requests`` response
     for each of seven HTTP methods and each of 183 services' URL patterns: 1,288 objects whose
     fields never change, about a third of a start, and a share of the garbage collector's passes
     over the whole process that each start's allocations set off. Each (method, URL pattern,
     callback) is built once; a start registers the same response again, its record of calls
     emptied, in moto's order. A response asked for with anything else is built as before.
97. An action moto has not implemented raised a NotImplementedError out of the request: a
    traceback on ``serve``'s stderr, an HTTP 500 page, and the calling Task failed with a Python
    ``KeyError`` in its cause (a public app's ``transcribe:createVocabularyFilter``). It is now an
    error answer in the service's protocol, HTTP 501 ``NotImplemented``, that names the action,
    so a Task fails with the service's error name and a sentence.
149. A request to a JSON or REST-JSON service (Step Functions, DynamoDB, EventBridge, SQS,
     Lambda...), from ``serve``'s clients and a Task's alike, whose body is not UTF-8, not JSON,
     not an object, or whose members are not of the kinds its API model gives them (an ARN given
     as a number, an input given as an object), is refused 400 ``SerializationException`` in the
     words of AWS's request framework (Coral: "class java.lang.Boolean can not be converted to an
     String", recorded), Jackson's for a text that is not JSON, before moto reads it: moto failed
     on it (``'NoneType' object has no attribute 'rpartition'``, ``KeyError: 'TableName'``), an
     HTTP 500 page and a traceback. An empty body, or ``null``, is an empty request. A member a
     DynamoDB or Step Functions operation requires that is missing, and a DynamoDB member that
     breaks its constraints (lengths, ranges, enums, patterns of the installed botocore's model),
     are refused 400 ``ValidationException`` in Coral's words ("1 validation error detected: Value
     null at 'item' failed to satisfy constraint: Member must not be null", recorded from a
     DynamoDB Task). A table name that is not an ARN is held to DynamoDB's naming rules, which the
     model no longer carries since it takes an ARN there too: the pattern ``[a-zA-Z0-9_.-]+``
     (recorded: ``Value '/…' at 'tableName'``, a DynamoDB Task) and 3 to 255 characters
     (documented); moto answered ``ResourceNotFoundException``.
150. An exception that escapes a service's handling of a request ``serve`` answers (an engine
     bug) is answered 500 ``InternalFailure`` in the service's protocol, with AWS's words for it,
     and one line in the log instead of a traceback; werkzeug answered an HTML page. In process
     (the interpreter's own calls) it still raises, where the caller's tests see it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any
from xml.sax.saxutils import escape as xml_escape

from sfn_idempotency.local.compat.answers import (
    constraint_broken,
    jackson_refusal,
    read_json_text,
    validation_message,
)
from sfn_idempotency.local.compat.patching import Patch, kept_on

_LOG = logging.getLogger("sfn_idempotency.local")


def _known_accounts_without_the_lock(original: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    def create_account_specific_backend(self: Any, account_id: str) -> None:
        if dict.__contains__(self, account_id):
            return  # created, and registered, under the lock before; a reset would have removed it
        original(self, account_id)

    return create_account_specific_backend


def _unimplemented_as_an_answer(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def call_action(self: Any) -> Any:
        try:
            return original(self)
        except NotImplementedError:
            message = f"The local engine does not implement {self.service_name} {self._get_action()}"
            headers = {**self.response_headers, "x-amzn-ErrorType": "NotImplemented"}
            if "json" in str(self.headers.get("Content-Type", "")):
                body = json.dumps({"__type": "NotImplemented", "message": message})
                headers["Content-Type"] = "application/x-amz-json-1.1"
            else:
                body = (
                    "<ErrorResponse><Error><Type>Sender</Type><Code>NotImplemented</Code>"
                    f"<Message>{xml_escape(message)}</Message></Error></ErrorResponse>"
                )
                headers["Content-Type"] = "text/xml"
            return NOT_IMPLEMENTED, *self._enrich_response(headers, body)  # the request id, as moto's own

    return call_action


NOT_IMPLEMENTED = 501
BAD_REQUEST = 400
INTERNAL_FAILURE = 500
SERIALIZATION_EXCEPTION = "SerializationException"
VALIDATION_EXCEPTION = "ValidationException"
# AWS's common error's words (the APIs' "Common Errors": InternalFailure, HTTP 500).
INTERNAL_FAILURE_MESSAGE = (
    "The request processing has failed because of an unknown error, exception or failure."
)
# How Coral, AWS's request framework, names a JSON value's class, and each kind of member it
# converts one to (recorded: "class java.lang.Boolean can not be converted to an String").
_CORAL_VALUES = {
    bool: "java.lang.Boolean",
    int: "com.amazon.coral.value.json.numbers.TruncatingBigNumber",
    float: "com.amazon.coral.value.json.numbers.TruncatingBigNumber",
    str: "java.lang.String",
}
_CORAL_KINDS = {
    "string": "String",
    "blob": "ByteBuffer",
    "boolean": "Boolean",
    "integer": "Integer",
    "long": "Long",
    "float": "Float",
    "double": "Double",
    "timestamp": "Date",
    "structure": "Map",
    "map": "Map",
    "list": "List",
}
_NUMBERS = frozenset({"integer", "long", "float", "double", "timestamp"})


def _checked_and_answered(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fixes 149 and 150, around one request's dispatch to its service's responses class."""

    def dispatch(self: Any, request: Any, full_url: Any = None, headers: Any = None) -> Any:
        from werkzeug.exceptions import HTTPException

        refusal = _json_body_refusal(self, request)
        if refusal is not None:
            return refusal
        if not getattr(request, "from_wsgi_server", False):
            return original(self, request, full_url, headers)
        try:
            return original(self, request, full_url, headers)
        except HTTPException:
            raise  # an answer moto means (5.2.5's errors), which its server writes
        except Exception as error:
            _LOG.warning(
                "serve: %s %s failed inside the engine: %s: %s",
                self.service_name,
                request.headers.get("X-Amz-Target") or request.path,
                type(error).__name__,
                error,
            )
            return _error_answer(self, request, INTERNAL_FAILURE, "InternalFailure", INTERNAL_FAILURE_MESSAGE)

    return dispatch


def _json_body_refusal(response: Any, request: Any) -> tuple[int, dict[str, str], str] | None:
    """Fix 149: why a JSON request's body cannot be its operation's members, in AWS's words."""
    model = _service_model(response)
    if model is None or model.protocol not in _JSON_PROTOCOLS:
        return None
    raw = request.get_data()
    if model.protocol == "rest-json" and not raw.strip():
        return None  # the members are in the path, the query or the headers (a GET's): no route looked up
    operation = _operation(model, response, request)
    if operation is None or operation.input_shape is None:
        return None  # an unknown operation: fix 20 answers it
    body_members = _body_members(operation.input_shape)
    if model.protocol == "rest-json" and body_members is None:
        return None  # the body is a payload of its own (a blob, a document)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return _serialization_refusal(response, request, f"Invalid UTF-8 start byte 0x{raw[error.start]:02x}")
    try:
        members = read_json_text(text) if text.strip() else None
    except json.JSONDecodeError as error:
        return _serialization_refusal(response, request, jackson_refusal(error))
    except ValueError as error:  # NaN, Infinity
        return _serialization_refusal(response, request, f"Non-standard token '{error}'")
    if members is None:
        members = {}
    if not isinstance(members, dict):
        return _serialization_refusal(response, request, _kind_refused(members, operation.input_shape) or "")
    for name, shape in (body_members or {}).items():
        why = _kind_refused(members.get(name), shape)
        if why is not None:
            return _serialization_refusal(response, request, why)
    problems = _validation_problems(response.boto3_service_name, members, operation.input_shape, model)
    if not problems:
        return None
    return _error_answer(response, request, BAD_REQUEST, VALIDATION_EXCEPTION, validation_message(problems))


_JSON_PROTOCOLS = ("json", "rest-json")


def _service_model(response: Any) -> Any:
    from moto.core.responses import get_service_model

    try:
        return get_service_model(response.boto3_service_name)
    except Exception:  # a service botocore does not model (moto's own API): nothing to check
        return None


def _operation(model: Any, response: Any, request: Any) -> Any:
    """The operation a request calls: its X-Amz-Target's (JSON), or the one its path and method
    match (REST)."""
    from botocore.model import OperationNotFoundError

    if model.protocol == "json":
        try:
            return model.operation_model(str(request.headers.get("X-Amz-Target") or "").rpartition(".")[2])
        except OperationNotFoundError:
            return None
    from moto.core.responses import get_service_router

    try:
        return get_service_router(response.boto3_service_name).match(request)[0]
    except Exception:  # no route: moto answers it as it does
        return None


def _body_members(shape: Any) -> dict[str, Any] | None:
    """The members a request's JSON body holds: those not in its path, query or headers; None when
    the body is a payload of its own (a blob, a document)."""
    payload = shape.serialization.get("payload")
    if payload is not None:
        member = shape.members[payload]
        return dict(member.members) if member.type_name == "structure" else None
    return {
        name: member for name, member in shape.members.items() if not member.serialization.get("location")
    }


def _serialization_refusal(response: Any, request: Any, why: str) -> tuple[int, dict[str, str], str]:
    return _error_answer(response, request, BAD_REQUEST, SERIALIZATION_EXCEPTION, why)


# The services whose requests Coral's validation checks, in its words (recorded: DynamoDB's "Value
# null at 'item'"; Step Functions' "Value '1001' at 'maxResults'"); SQS words a missing member its
# own way (MissingParameter, recorded), which moto's action answers.
_CORAL_VALIDATED = frozenset({"dynamodb", "stepfunctions"})
# Of those, the ones whose constraints (patterns, lengths, ranges, enums) this fix checks: Step
# Functions' are fix 21's.
_CONSTRAINED_SERVICES = frozenset({"dynamodb"})
# DynamoDB's naming rules for a table given by name (its developer guide; the pattern's words
# recorded): the model's TableName takes an ARN as well, so it carries neither.
_TABLE_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_.-]+")
_TABLE_NAME_LENGTHS = (3, 255)


def _validation_problems(service: str, members: dict[str, Any], shape: Any, model: Any) -> list[str]:
    """Coral's validation: the members the operation requires that are missing, then the
    constraints each member breaks, named as Coral names them (``tableName``)."""
    problems = []
    if service in _CORAL_VALIDATED:
        problems = [
            f"Value null at '{_coral_name(name)}' failed to satisfy constraint: Member must not be null"
            for name in shape.required_members
            if members.get(name) is None
        ]
    if service in _CONSTRAINED_SERVICES:
        problems += [
            problem
            for name, member in shape.members.items()
            if (problem := constraint_broken(_coral_name(name), member, members.get(name))) is not None
        ]
        problems += _table_name_problems(members.get("TableName"))
    return problems


def _table_name_problems(table_name: Any) -> list[str]:
    if not isinstance(table_name, str) or table_name.startswith("arn:"):
        return []
    shortest, longest = _TABLE_NAME_LENGTHS
    broken = f"Value '{table_name}' at 'tableName' failed to satisfy constraint: Member must"
    if len(table_name) < shortest:
        return [f"{broken} have length greater than or equal to {shortest}"]
    if len(table_name) > longest:
        return [f"{broken} have length less than or equal to {longest}"]
    if not _TABLE_NAME_PATTERN.fullmatch(table_name):
        return [f"{broken} satisfy regular expression pattern: {_TABLE_NAME_PATTERN.pattern}"]
    return []


def _coral_name(name: str) -> str:
    return name[:1].lower() + name[1:]


def _kind_refused(value: Any, shape: Any) -> str | None:
    """Coral's words for the first value (depth first) that is not of its member's kind, if any."""
    kind = shape.type_name
    if value is None:
        return None
    if isinstance(value, dict):
        if kind == "structure":
            refusals = (_kind_refused(value.get(name), member) for name, member in shape.members.items())
        elif kind == "map":
            refusals = (_kind_refused(item, shape.value) for item in value.values())
        else:
            return "Start of structure or map found where not expected."
        return next((refusal for refusal in refusals if refusal is not None), None)
    if isinstance(value, list):
        if kind != "list":
            return "Start of list found where not expected"
        return next((r for item in value if (r := _kind_refused(item, shape.member)) is not None), None)
    if _scalar_fits(value, kind):
        return None
    return f"class {_CORAL_VALUES[type(value)]} can not be converted to an {_CORAL_KINDS.get(kind, kind)}"


def _scalar_fits(value: Any, kind: str) -> bool:
    """A text where a number is expected is read as a number when it is one (never stricter)."""
    if kind in ("string", "blob"):
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool) or value in ("true", "false")
    if kind in _NUMBERS:
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                return kind == "timestamp"  # an ISO 8601 text
            return True
        return not isinstance(value, bool)
    return False  # a scalar where a structure, a map or a list is expected


def _error_answer(
    response: Any, request: Any, status: int, code: str, message: str
) -> tuple[int, dict[str, str], str]:
    """An error in the service's protocol: JSON for a JSON or REST-JSON service, else AWS's XML."""
    from moto.utilities.aws_headers import gen_amzn_requestid_long

    headers = {"x-amzn-ErrorType": code}
    request_id = gen_amzn_requestid_long(headers)  # as moto's own answers draw theirs
    model = _service_model(response)
    targeted = bool(request.headers.get("X-Amz-Target"))
    protocol = model.protocol if model is not None else "json" if targeted else "query"
    if protocol in _JSON_PROTOCOLS:
        version = model.metadata.get("jsonVersion", "1.0") if model is not None else "1.0"
        headers["Content-Type"] = (
            f"application/x-amz-json-{version}" if protocol == "json" else "application/json"
        )
        return status, headers, json.dumps({"__type": code, "message": message})
    headers["Content-Type"] = "text/xml"
    body = (
        f"<ErrorResponse><Error><Type>{'Sender' if status < INTERNAL_FAILURE else 'Receiver'}</Type>"
        f"<Code>{code}</Code><Message>{xml_escape(message)}</Message></Error>"
        f"<RequestId>{request_id}</RequestId></ErrorResponse>"
    )
    return status, headers, body


def _regions_listed_once(_original: Callable[..., list[str]]) -> Callable[..., list[str]]:
    """botocore's own steps, with the service's endpoint prefix (the one thing it reads the API
    model for) and each answer kept."""
    from botocore.exceptions import UnknownServiceError

    prefixes: dict[str, str | None] = {}
    answers: dict[tuple[str, str, bool], list[str]] = {}
    lock = threading.Lock()

    def get_available_regions(
        self: Any, service_name: str, partition_name: str = "aws", allow_non_regional: bool = False
    ) -> list[str]:
        key = (service_name, partition_name, allow_non_regional)
        with lock:
            if key not in answers:
                if service_name not in prefixes:
                    try:
                        metadata = self.get_service_data(service_name)["metadata"]
                        prefixes[service_name] = metadata.get("endpointPrefix", service_name)
                    except UnknownServiceError:
                        prefixes[service_name] = None
                prefix = prefixes[service_name]
                resolver = self._get_internal_component("endpoint_resolver")
                answers[key] = (
                    []
                    if prefix is None
                    else resolver.get_available_endpoints(prefix, partition_name, allow_non_regional)
                )
            return list(answers[key])

    return get_available_regions


def _modules_listed_once(original: Callable[[], Any]) -> Callable[[], tuple[str, ...]]:
    listed: tuple[str, ...] | None = None

    def list_of_moto_modules() -> tuple[str, ...]:
        nonlocal listed
        if listed is None:
            listed = tuple(original())
        return listed

    return list_of_moto_modules


_POSSIBLE_KEYS = "_sfn_local_possible_keys"  # on a member's shape: its aliases, by fix 122's slot
_ASK_EACH_TIME: Any = object()  # kept for a result class that answers attributes itself


def _possible_keys_kept(
    original: Callable[[Any, Any], Iterable[str]],
) -> Callable[[Any, Any], Iterable[str]]:
    from moto.core.serialize import DEFAULT_ALIAS_PROVIDERS

    def get_possible_keys(self: Any, context: Any) -> Iterable[str]:
        result, shape = context.obj, context.shape
        if shape is None or self.alias_providers is not DEFAULT_ALIAS_PROVIDERS:
            return original(self, context)
        if type(result) is not dict and "Meta" in getattr(result, "__dict__", ()):
            return original(self, context)  # ExplicitAlias reads this result's own aliases
        kept: dict[tuple[Any, ...], tuple[str, ...]] = kept_on(shape, _POSSIBLE_KEYS)
        # the structure the member was last met in: moto sets it before it asks (ShapePrefixAlias)
        slot = (type(self), result.__class__, context.key, getattr(shape, "parent", None))
        keys = kept.get(slot)
        if keys is None:
            asks_itself = hasattr(result.__class__, "__getattr__")
            keys = kept[slot] = _ASK_EACH_TIME if asks_itself else tuple(original(self, context))
        return original(self, context) if keys is _ASK_EACH_TIME else keys

    return get_possible_keys


_ACTION_NAMES_KEPT = 512


def _action_names_converted_once(original: Callable[[str], str]) -> Callable[[str], str]:
    return functools.lru_cache(maxsize=_ACTION_NAMES_KEPT)(original)


_ROOT_URLS_KEPT = 256


def _root_urls_built_once(original: Callable[..., str]) -> Callable[..., str]:
    """Fix 133: werkzeug's ``get_current_url``, its answers for a root URL (no path) kept."""
    root_url = functools.lru_cache(maxsize=_ROOT_URLS_KEPT)(original)

    def get_current_url(
        scheme: str,
        host: str,
        root_path: str | None = None,
        path: str | None = None,
        query_string: bytes | None = None,
    ) -> str:
        if path is None:  # werkzeug then reads no query string
            return root_url(scheme, host, root_path)
        return original(scheme, host, root_path, path, query_string)

    return get_current_url


_URLS_KEPT = 1024


@functools.lru_cache(maxsize=_URLS_KEPT)
def _first_service_matching(clean_url: str) -> str | None:
    """The first service, in moto's order, whose URL pattern matches ``clean_url``."""
    from moto import backend_index

    return next(
        (service for service, pattern in backend_index.backend_url_patterns if pattern.match(clean_url)), None
    )


def _service_found_once(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """moto's ``BotocoreStubber.process_request``, step for step, with each URL's first service found
    once; a URL that service has no handler for goes to moto's own walk of the services after it."""
    import re

    from moto import backends
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.base_backend import BackendDict
    from moto.core.config import passthrough_service, passthrough_url, service_whitelisted
    from moto.core.exceptions import HTTPException, ServiceNotWhitelisted
    from moto.core.request import normalize_request
    from moto.core.utils import get_equivalent_url_in_aws_domain
    from moto.moto_api import recorder

    def process_request(self: Any, request: Any) -> Any:
        parsed_url, _ = get_equivalent_url_in_aws_domain(request.url)
        clean_url = f"{parsed_url.scheme}://{parsed_url.netloc}{parsed_url.path}"
        service = _first_service_matching(clean_url)
        if service is None or passthrough_url(clean_url):
            return original(self, request)  # no service's URL, or not moto's to answer
        if passthrough_service(service):
            return None
        if not service_whitelisted(service):
            raise ServiceNotWhitelisted(service)
        backend_dict = backends.get_backend(service)
        if isinstance(backend_dict, BackendDict):
            regions = backend_dict[DEFAULT_ACCOUNT_ID]
            backend = regions["us-east-1"] if "us-east-1" in regions else regions["aws"]
        else:
            backend = backend_dict["global"]
        for url, method_to_execute in backend.urls.items():
            if re.compile(url).match(clean_url):
                normalized_request = normalize_request(request)
                try:
                    recorder._record_request(normalized_request)
                    return method_to_execute(
                        normalized_request, normalized_request.raw_url, normalized_request.headers
                    )
                except HTTPException as e:
                    return e.code, e.get_headers(), e.get_body()
                finally:
                    normalized_request.environ.pop("werkzeug.request", None)  # werkzeug's cycle
        return original(self, request)

    return process_request


# Kept beside the fix, not in it: every LocalCloud's start installs the fixes again.
_built_responses: dict[tuple[str, Any, Any], Any] = {}
_built_responses_lock = threading.Lock()


def _url_responses_built_once(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 143: moto's ``CallbackResponse`` as its mock's start makes them, each one built once."""

    def callback_response(*, method: str, url: Any, callback: Any, **others: Any) -> Any:
        if others:
            return original(method=method, url=url, callback=callback, **others)
        key = (method, url, callback)
        with _built_responses_lock:
            response = _built_responses.get(key)
            if response is None:
                response = _built_responses[key] = original(method=method, url=url, callback=callback)
            else:
                response.calls.reset()  # a start's responses record only that start's calls
        return response

    return callback_response


def _random_texts_drawn_in_one_loop(original: Callable[..., str]) -> Callable[..., str]:
    import random
    import string

    from moto.moto_api._internal.moto_random import MotoRandom

    if MotoRandom._randbelow is not random.Random._randbelow_with_getrandbits:  # type: ignore[attr-defined]
        return original  # a generator that draws otherwise: moto's own steps

    def get_random_string(
        self: Any, length: int = 20, include_digits: bool = True, lower_case: bool = False
    ) -> str:
        pool = string.ascii_letters + string.digits if include_digits else string.ascii_letters
        size, draw = len(pool), self.getrandbits
        bits = size.bit_length()
        characters = []
        for _ in range(length):
            drawn = draw(bits)
            while drawn >= size:  # random.Random._randbelow_with_getrandbits, as choice uses it
                drawn = draw(bits)
            characters.append(pool[drawn])
        text = "".join(characters)
        return text.lower() if lower_case else text

    return get_random_string


PATCHES: tuple[Patch, ...] = (
    Patch(143, "moto.core.models", "CallbackResponse", _url_responses_built_once),
    Patch(133, "werkzeug.sansio.request", "get_current_url", _root_urls_built_once),
    Patch(
        128,
        "moto.moto_api._internal.moto_random:MotoRandom",
        "get_random_string",
        _random_texts_drawn_in_one_loop,
    ),
    Patch(127, "moto.core.botocore_stubber:BotocoreStubber", "process_request", _service_found_once),
    Patch(124, "moto.core.responses", "camelcase_to_underscores", _action_names_converted_once),
    Patch(122, "moto.core.serialize:XFormedAttributePicker", "get_possible_keys", _possible_keys_kept),
    Patch(111, "moto.backends", "list_of_moto_modules", _modules_listed_once),
    Patch(101, "botocore.session:Session", "get_available_regions", _regions_listed_once),
    Patch(97, "moto.core.responses:BaseResponse", "call_action", _unimplemented_as_an_answer),
    # (fix 150 too: one wrapper refuses a body before moto reads it, and answers what escapes moto)
    Patch(149, "moto.core.responses:BaseResponse", "_dispatch", _checked_and_answered),
    Patch(
        57,
        "moto.core.base_backend:BackendDict",
        "_create_account_specific_backend",
        _known_accounts_without_the_lock,
    ),
)


DEFERRED_PACKAGE = "moto.batch"
DEFERRED_NAMES = {"batch_backends": "moto.batch.models"}  # what moto.batch's __init__ exports


def defer_batch_models() -> None:
    """Fix 81: register ``moto.batch`` whose exports import on first use (no-op once imported)."""
    if DEFERRED_PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(DEFERRED_PACKAGE)
    if spec is None or spec.loader is None:
        return
    package = importlib.util.module_from_spec(spec)

    def exported(name: str) -> Any:
        if name not in DEFERRED_NAMES:
            raise AttributeError(f"module {DEFERRED_PACKAGE!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(DEFERRED_NAMES[name]), name)
        setattr(package, name, value)
        return value

    package.__getattr__ = exported  # type: ignore[method-assign]  # PEP 562: a module's __getattr__
    sys.modules[DEFERRED_PACKAGE] = package
