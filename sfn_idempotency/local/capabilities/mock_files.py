"""Step Functions Local's mocked service integrations (``MockConfigFile.json``), on moto's interpreter.

An execution started as ``<stateMachineArn>#<TestCase>`` runs that test case of the file: a Task
the test case names answers from its mocked responses, every other Task runs for real. The file,
as Step Functions Local and LocalStack read it::

    {"StateMachines": {"<machine name>": {"TestCases": {"<test case>": {"<state>": "<response>"}}}},
     "MockedResponses": {"<response>": {"0": {"Return": ...}, "1-2": {"Throw": {"Error": ..., "Cause": ...}}}}}

The n-th time a state runs in one execution (a retry, a loop, a Map item), it takes the n-th
response; running it past the last is an error that names the state and the test case.

moto's interpreter already evaluates a mocked Task (moto.stepfunctions.parser.mocking); its file
loader is a stub. This module loads and checks the file, reads it again when it changes, selects a
test case from the ARN, and counts runs per state.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability

MOCK_CONFIG_VARIABLE = "SFN_MOCK_CONFIG"  # the variable Step Functions Local and LocalStack read
TEST_CASE_SEPARATOR = "#"
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")
_MOCKING = "moto.stepfunctions.parser.mocking.mock_config"
_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment:Environment"
_WORKER = "moto.stepfunctions.parser.backend.execution_worker:ExecutionWorker"

MockConfigInput = str | os.PathLike[str] | Mapping[str, Any]
Fail = Callable[[str, str], NoReturn]  # raises MockConfigError for a place in the file


class MockConfigError(ValueError):
    """A mock configuration that cannot be used: one line naming the file, the place and the fault."""


class MockTestCaseNotFound(LookupError):
    """``arn#TestCase`` names a machine or test case the file does not have."""


@dataclass(frozen=True)
class Response:
    """One numbered answer: ``Return`` (the integration's whole answer) or ``Throw``."""

    returns: Any = None
    error: str | None = None
    cause: str | None = None


@dataclass(frozen=True)
class MockConfig:
    """A checked mock configuration: per (machine, test case), each mocked state's answers in order."""

    source: str
    test_cases: Mapping[tuple[str, str], Mapping[str, tuple[Response, ...]]]

    @classmethod
    def parse(cls, raw: Any, source: str) -> MockConfig:
        """Check the whole document (every test case, every response) or raise MockConfigError."""
        fail = _failing(source)
        top = _object(raw, "the document", fail)
        responses = {
            name: _numbered(answers, f"MockedResponses.{name}", fail)
            for name, answers in _object(top.get("MockedResponses", {}), "MockedResponses", fail).items()
        }
        test_cases: dict[tuple[str, str], dict[str, tuple[Response, ...]]] = {}
        for machine, body in _object(top.get("StateMachines", {}), "StateMachines", fail).items():
            place = f"StateMachines.{machine}"
            cases = _object(_object(body, place, fail).get("TestCases", {}), f"{place}.TestCases", fail)
            for case, states in cases.items():
                mocked: dict[str, tuple[Response, ...]] = {}
                for state, response in _object(states, f"{place}.TestCases.{case}", fail).items():
                    at = f"{place}.TestCases.{case}.{state}"
                    if not isinstance(response, str):
                        fail(at, f"names a response by its name (a string), not {json.dumps(response)}")
                    if response not in responses:
                        fail(at, f"names the response {response!r}, which MockedResponses does not define")
                    mocked[state] = responses[response]
                test_cases[machine, case] = mocked
        return cls(source, test_cases)

    def test_case(self, machine: str, case: str) -> MockTestCase:
        states = self.test_cases.get((machine, case))
        if states is None:
            known = sorted(c for m, c in self.test_cases if m == machine)
            where = (
                f"test cases of {machine!r}: {', '.join(known)}"
                if known
                else f"no test cases for {machine!r}"
            )
            raise MockTestCaseNotFound(
                f"Mock test case {case!r} for state machine {machine!r} is not in {self.source} ({where})"
            )
        return MockTestCase(machine, case, states)


@dataclass
class MockTestCase:
    """One execution's test case: its answers, and how often each mocked state has run so far."""

    machine: str
    name: str
    states: Mapping[str, tuple[Response, ...]]
    _runs: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_response(self, state: str) -> Response:
        with self._lock:  # Map items and Parallel branches run the same state in threads of their own
            run = self._runs.get(state, 0)
            self._runs[state] = run + 1
        answers = self.states[state]
        if run >= len(answers):
            raise RuntimeError(
                f"state {state!r} ran {run + 1} times in mock test case {self.name!r} of state machine "
                f"{self.machine!r}, which has {len(answers)} response(s) for it"
            )
        return answers[run]


def _failing(source: str) -> Fail:
    def fail(place: str, problem: str) -> NoReturn:
        raise MockConfigError(f"{source}: {place}: {problem}")

    return fail


def _object(value: Any, place: str, fail: Fail) -> dict[str, Any]:
    if not isinstance(value, dict):
        fail(place, f"must be a JSON object, not {type(value).__name__}")
    return value


def _numbered(answers: Any, place: str, fail: Fail) -> tuple[Response, ...]:
    """``"0"``, ``"1-2"``...: numbered from 0 with no gap, each range in order."""
    spans: list[tuple[int, int, Response]] = []
    for key, answer in _object(answers, place, fail).items():
        match = _RANGE.fullmatch(key.strip())
        if match is None:
            fail(f"{place}.{key}", 'is not a response number ("0") or range ("1-2")')
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first:
            fail(f"{place}.{key}", f"is a range that ends ({last}) before it starts ({first})")
        spans.append((first, last, _response(answer, f"{place}.{key}", fail)))
    if not spans:
        fail(place, 'has no responses (number them from "0")')
    expected = 0
    for first, last, _ in sorted(spans, key=lambda span: span[0]):
        if first != expected:
            fail(place, f"numbering has a gap or an overlap: expected response {expected}, found {first}")
        expected = last + 1
    return tuple(response for first, last, response in sorted(spans) for _ in range(last - first + 1))


def _response(answer: Any, place: str, fail: Fail) -> Response:
    body = _object(answer, place, fail)
    kinds = [kind for kind in ("Return", "Throw") if kind in body]
    if len(kinds) != 1:
        fail(
            place,
            f"holds {' and '.join(kinds) or 'neither Return nor Throw'}: exactly one of Return or Throw",
        )
    if kinds == ["Return"]:
        return Response(returns=body["Return"])
    throw = _object(body["Throw"], f"{place}.Throw", fail)
    if not isinstance(throw.get("Error"), str):
        fail(f"{place}.Throw", "has no Error (a string)")
    cause = throw.get("Cause", "")
    if not isinstance(cause, str):
        fail(f"{place}.Throw.Cause", "must be a string")
    return Response(error=throw["Error"], cause=cause)


class MockConfigSource:
    """Where the configuration comes from: a dict, fixed; or a file, read again when it changes.

    ``current()`` answers the configuration, or raises the MockConfigError of the file as it is now
    (a missing file, malformed JSON, a bad response...): mocked starts are refused with it.
    ``on_change`` hears each new fault once, and the file's recovery, whoever read it.
    """

    def __init__(self, config: MockConfigInput, on_change: Callable[[str], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._stamp: tuple[int, int] | None = None
        self._config: MockConfig | None = None
        self._error: MockConfigError | None = None
        self._on_change = on_change
        if isinstance(config, Mapping):
            self._config = MockConfig.parse(
                copy.deepcopy(dict(config)), "the mock configuration given as a dict"
            )
        else:
            self._path = Path(config)

    @property
    def path(self) -> Path | None:
        return self._path

    def current(self) -> MockConfig:
        with self._lock:
            if self._path is not None:
                self._reload_if_changed(self._path)
            if self._error is not None:
                raise self._error
            assert self._config is not None
            return self._config

    def _reload_if_changed(self, path: Path) -> None:
        before = self._error
        try:
            status = path.stat()
        except OSError as error:
            self._stamp, self._error = None, MockConfigError(f"{path}: cannot read: {error.strerror}")
        else:
            stamp = (status.st_mtime_ns, status.st_size)
            if stamp == self._stamp:
                return
            self._stamp = stamp
            try:
                self._config, self._error = MockConfig.parse(_read_json(path), str(path)), None
            except MockConfigError as error:
                self._error = error
        if self._on_change is not None and str(before) != str(self._error):
            if self._error is not None:
                self._on_change(str(self._error))
            elif before is not None and self._config is not None:  # mended
                self._on_change(
                    f"mock configuration {path}: read again, {len(self._config.test_cases)} test case(s)"
                )


def keep_reading(source: MockConfigSource, stop: threading.Event, interval: float = 1.0) -> None:
    """Until ``stop``: read the file when it changes, so that a fault is said when it is saved."""
    while not stop.wait(interval):
        with contextlib.suppress(MockConfigError):
            source.current()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise MockConfigError(
            f"{path}: line {error.lineno} column {error.colno}: malformed JSON: {error.msg}"
        ) from None
    except UnicodeDecodeError:
        raise MockConfigError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise MockConfigError(f"{path}: cannot read: {error.strerror}") from None


# -- the engine's side -----------------------------------------------------------------------------
_active: MockConfigSource | None = None
# The test case a StartExecution request selected, for the execution worker it starts in this thread.
_selected: contextvars.ContextVar[MockTestCase | None] = contextvars.ContextVar(
    "sfn_mock_test_case", default=None
)


def activate(source: MockConfigSource | None) -> None:
    """The configuration that ``arn#TestCase`` starts use from now on (None: mocks are off)."""
    global _active
    _active = source


def _machine_name(state_machine_arn: str) -> str:
    parts = state_machine_arn.split(":")
    return parts[6] if len(parts) > 6 else state_machine_arn  # arn:aws:states:<r>:<a>:stateMachine:<name>


def _select(state_machine_arn: str, case: str) -> MockTestCase:
    if _active is None:
        raise MockTestCaseNotFound(
            f"Mock test case {case!r} was asked for, but no mock configuration is loaded "
            f"(set {MOCK_CONFIG_VARIABLE} or --mock-config for serve; LocalCloud(mock_config=...) in process)"
        )
    return _active.current().test_case(_machine_name(state_machine_arn), case)


def _starting_a_test_case(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``StartExecution`` / ``StartSyncExecution`` on ``arn#TestCase``: the machine at ``arn``, with
    the test case handed to the execution worker it starts (moto builds the worker in the request)."""

    def start(self: Any) -> Any:
        from moto.stepfunctions.parser.api import InvalidName

        arn = str(self._get_param("stateMachineArn") or "")
        base, separator, case = arn.partition(TEST_CASE_SEPARATOR)
        if not separator:
            return original(self)
        try:
            test_case = _select(base, case)
        except (MockTestCaseNotFound, MockConfigError) as error:
            raise InvalidName(str(error)) from None
        _set_param(self, "stateMachineArn", base)
        token = _selected.set(test_case)
        try:
            return original(self)
        finally:
            _selected.reset(token)

    return start


def _set_param(response: Any, name: str, value: str) -> None:
    body = json.loads(response.body or "{}")
    body[name] = value
    response.body = json.dumps(body)
    if isinstance(getattr(response, "params", None), dict):
        response.params[name] = value


def _constructed_with_the_test_case(original: Callable[..., None]) -> Callable[..., None]:
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("mock_test_case") is None and _selected.get() is not None:
            kwargs["mock_test_case"] = _selected.get()
        original(self, *args, **kwargs)

    return init


def _responding_in_turn(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The n-th run of a mocked state takes the n-th response (moto indexed by the retry count,
    which starts again at 0 in every loop iteration and Map item). TestState's own mocks (fix 29)
    stay moto's."""

    def current(env: Any) -> Any:
        from moto.stepfunctions.parser.mocking.mock_config import MockedResponseReturn, MockedResponseThrow

        if not isinstance(env.mock_test_case, MockTestCase):
            return original(env)
        response = env.mock_test_case.next_response(env.next_state_name)
        if response.error is not None:
            return MockedResponseThrow(0, 0, response.error, response.cause or "")
        return MockedResponseReturn(0, 0, copy.deepcopy(response.returns))

    return current


def _mocked_state(original: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def is_mocked_mode(env: Any) -> bool:
        test_case = env.mock_test_case
        if not isinstance(test_case, MockTestCase):
            return original(env)
        return env.next_state_name in test_case.states

    return is_mocked_mode


PATCHES: tuple[Patch, ...] = (
    Patch(CAPABILITY, _RESPONSES, "start_execution", _starting_a_test_case),
    # StartSyncExecution's answer is the engine's own (fix 14), added by compat.install first.
    Patch(CAPABILITY, _RESPONSES, "start_sync_execution", _starting_a_test_case),
    Patch(CAPABILITY, _WORKER, "__init__", _constructed_with_the_test_case),
    Patch(CAPABILITY, _ENVIRONMENT, "get_current_mocked_response", _responding_in_turn),
    Patch(CAPABILITY, _ENVIRONMENT, "is_mocked_mode", _mocked_state),
)


def install() -> None:
    """Teach moto's interpreter the file's test cases (after compat.install)."""
    apply_capability("mock files", PATCHES)
