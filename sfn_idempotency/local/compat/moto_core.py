"""moto's own plumbing, under every service (fixes 57, 81, 101 and 111, speed: no behaviour
changes; fix 97).

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
97. An action moto has not implemented raised a NotImplementedError out of the request: a
    traceback on ``serve``'s stderr, an HTTP 500 page, and the calling Task failed with a Python
    ``KeyError`` in its cause (a public app's ``transcribe:createVocabularyFilter``). It is now an
    error answer in the service's protocol, HTTP 501 ``NotImplemented``, that names the action,
    so a Task fails with the service's error name and a sentence.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import threading
from collections.abc import Callable
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


PATCHES: tuple[Patch, ...] = (
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
