"""Helpers for state-machine runs on the local engine (fixtures come from sfn_idempotency's plugin)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.settings import example_settings

GATE_TIMEOUT_SECONDS = 20


class CountedPattern:
    """One of moto's compiled URL patterns, noting in ``matched`` each text it is asked to match."""

    def __init__(self, pattern: Any, matched: list[str]) -> None:
        self.pattern = pattern
        self.matched = matched

    def match(self, text: str) -> Any:
        self.matched.append(text)
        return self.pattern.match(text)


def counted_patterns(pairs: list[tuple[str, Any]], matched: list[str]) -> list[tuple[str, CountedPattern]]:
    """moto's (service, URL pattern) pairs, each pattern counted into ``matched``."""
    return [(service, CountedPattern(pattern, matched)) for service, pattern in pairs]


class Gate:
    """A business step whose first call places the order only when the test opens the gate;
    later calls go straight through. ``fail_with`` makes the gated call raise instead."""

    def __init__(self, fail_with: Exception | None = None) -> None:
        self.entered = threading.Event()
        self._open = threading.Event()
        self._fail_with = fail_with
        self._first = threading.Lock()

    def open(self) -> None:
        self._open.set()

    def handler(self, event: Any, context: Any) -> Any:
        if self._first.acquire(blocking=False):
            self.entered.set()
            if not self._open.wait(GATE_TIMEOUT_SECONDS):
                raise TimeoutError("the test never opened the gate")
            if self._fail_with is not None:
                raise self._fail_with
        return place_order(event)


@pytest.fixture
def gate() -> Iterator[Gate]:
    gate = Gate()
    yield gate
    gate.open()


class TwoGates:
    """A business step whose first two calls each wait for their own gate."""

    def __init__(self) -> None:
        self.entered = [threading.Event(), threading.Event()]
        self.gates = [threading.Event(), threading.Event()]
        self._calls = itertools.count()

    def handler(self, event: Any, context: Any) -> Any:
        call = next(self._calls)
        if call < 2:
            self.entered[call].set()
            if not self.gates[call].wait(GATE_TIMEOUT_SECONDS):
                raise TimeoutError("the test never opened the gate")
        return place_order(event)

    def open_all(self) -> None:
        for gate in self.gates:
            gate.set()


ServiceFactory = Callable[..., IdempotentService]


@pytest.fixture
def inline() -> bool:
    """Whether the services are a Task wrapped inline; modules that run their scenarios on both
    override it with a parametrized fixture."""
    return False


@pytest.fixture
def query_language() -> str:
    """The flow's flavour; modules that run their scenarios in both override it."""
    return "JSONPath"


FLAVOURS = ["JSONPath", "JSONata"]


def keeps_its_event(service: IdempotentService) -> bool:
    """A wrapped JSONPath step keeps its input as it came (KeepEvent) before its JSONata Claim."""
    return service.inline and service.query_language == "JSONPath"


def claim_path(service: IdempotentService) -> list[str]:
    """The states of a first claim, by the provable key."""
    return ["KeepEvent", "Claim"] if keeps_its_event(service) else ["Claim"]


def keyless_path(service: IdempotentService) -> list[str]:
    """The states before a run without a record (no key, or disabled)."""
    return [*claim_path(service), "RouteByEvent"]


@pytest.fixture
def idempotent_service(local_cloud: LocalCloud, inline: bool, query_language: str) -> IdempotentService:
    return IdempotentService(local_cloud, inline=inline, query_language=query_language)


@pytest.fixture
def make_service(local_cloud: LocalCloud, inline: bool, query_language: str) -> ServiceFactory:
    """Deploy the workflow with configuration overrides (``IDEMPOTENCY_*`` names) and a business handler."""
    counter = iter(range(1, 1000))

    def make(business_handler: Any = None, **overrides: str) -> IdempotentService:
        kwargs = {"business_handler": business_handler} if business_handler else {}
        return IdempotentService(
            local_cloud,
            example_settings({}, **overrides),
            name=f"workflow{next(counter)}",
            inline=inline,
            query_language=query_language,
            **kwargs,
        )

    return make


def put_crashed_claim(service: IdempotentService, event: Any, lease_ends_ms: int) -> str:
    """The INPROGRESS record an execution that crashed left for ``event``'s key, its lease ending
    at ``lease_ends_ms``; the key."""
    key = service.key_for(event)
    assert key is not None
    now_s = service.cloud.clock.now_ms() // 1000
    service.cloud.dynamodb.put_item(
        TableName=service.table_name,
        Item={
            "id": {"S": key},
            "status": {"S": "INPROGRESS"},
            "expiration": {"N": str(now_s + 3600)},
            "in_progress_expiration": {"N": str(lease_ends_ms)},
            "owner": {"S": "arn:aws:states:us-east-1:123456789012:execution:idempotency:crashed"},
        },
    )
    return key


def item_values(record: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    """A DynamoDB item as {attribute: (type, value)}."""
    assert record is not None
    return {name: next(iter(value.items())) for name, value in record.items()}
