"""moto's own plumbing, under every service (fixes 57, 81, 101, 111, 122 and 124, speed: no
behaviour changes; fix 97).

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
97. An action moto has not implemented raised a NotImplementedError out of the request: a
    traceback on ``serve``'s stderr, an HTTP 500 page, and the calling Task failed with a Python
    ``KeyError`` in its cause (a public app's ``transcribe:createVocabularyFilter``). It is now an
    error answer in the service's protocol, HTTP 501 ``NotImplemented``, that names the action,
    so a Task fails with the service's error name and a sentence.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any
from xml.sax.saxutils import escape as xml_escape

from sfn_idempotency.local.compat.patching import Patch


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
        kept: dict[tuple[Any, ...], tuple[str, ...]] | None = shape.__dict__.get(_POSSIBLE_KEYS)
        if kept is None:
            kept = shape.__dict__[_POSSIBLE_KEYS] = {}
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


PATCHES: tuple[Patch, ...] = (
    Patch(124, "moto.core.responses", "camelcase_to_underscores", _action_names_converted_once),
    Patch(122, "moto.core.serialize:XFormedAttributePicker", "get_possible_keys", _possible_keys_kept),
    Patch(111, "moto.backends", "list_of_moto_modules", _modules_listed_once),
    Patch(101, "botocore.session:Session", "get_available_regions", _regions_listed_once),
    Patch(97, "moto.core.responses:BaseResponse", "call_action", _unimplemented_as_an_answer),
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
