"""Looking up and listing a machine's executions (fixes 82 and 120, speed: no behaviour changes).

82. moto found an execution by walking its machine's list (DescribeExecution, GetExecutionHistory,
    and every item of a ListExecutions page, which fixes 44 and 48 describe again), and listed a page
    by sorting all of the machine's executions, then walking them to the page's token: each call grew
    with the executions a machine ever had. An execution is now found through an index of ARNs, and
    a page is read backwards from the newest execution, or from its token's, which the index places.

120. Before each start, moto walked the machine's executions for one of the same name (fix 64 spares
    only the names the engine draws): the walk grew with every execution a named start followed.
    The index knows the first execution of each name; only a name in use goes to moto's walk,
    which answers the running one of the same input, or refuses in moto's words.

A machine's list grows at its end (moto appends each execution as it starts; a deleted machine takes
its list with it), so each index catches up with the list's new end when asked. The index keeps the
executions in moto's own order, by start time with ties in the order they were added, so executions
that started together in one microsecond, or were appended out of turn, list exactly as moto's stable
sort lists them. What removes executions (a retention limit) does so while holding the index, which
it then drops; the next look-up builds it again.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, keep

_BACKEND = "moto.stepfunctions.models:StepFunctionBackend"
_MACHINE = "moto.stepfunctions.models:StateMachine"
_PAGINATOR = "moto.utilities.paginator:Paginator"
_PAGE_ATTRIBUTES = ["start_date", "execution_arn"]  # moto's PAGINATION_MODEL for list_executions
_PAGE_DEFAULT = 100


class _Index:
    """One machine's executions by ARN, and in moto's listing order."""

    def __init__(self) -> None:
        self.by_arn: dict[str, tuple[Any, int]] = {}  # the execution, and its place in the list
        self.names: set[str] = set()  # every name an execution on the list has (fix 120)
        # (start date, -place, execution), ascending: moto's order (newest first, ties as added) reversed
        self.ordered: list[tuple[Any, int, Any]] = []
        self.seen = 0
        self.sortable = True  # False if start dates cannot be compared: moto's own sort decides
        self.lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> None:
        # Each start copies its machine, executions left out (moto's snapshot for the execution):
        # the copy has none to index, and an empty index kept by every execution's copy is memory.
        return None

    def catch_up(self, executions: list[Any]) -> None:
        with self.lock:
            end = len(executions)
            for place in range(self.seen, end):
                execution = executions[place]
                self.by_arn[execution.execution_arn] = (execution, place)
                self.names.add(execution.name)
                if self.sortable:
                    try:
                        bisect.insort(self.ordered, (execution.start_date, -place, execution))
                    except TypeError:
                        self.sortable = False
            self.seen = max(self.seen, end)

    def found(self, arn: str) -> Any:
        entry = self.by_arn.get(arn)
        return None if entry is None else entry[0]

    def page(self, after: Any, status: str | None, wanted: int) -> list[Any]:
        """Up to ``wanted`` executions from ``after`` (or from the newest) down, as moto lists them."""
        with self.lock:
            ordered = self.ordered
            start = len(ordered) - 1
            if after is not None:
                start = bisect.bisect_left(ordered, (after.start_date, -self.by_arn[after.execution_arn][1]))
            page: list[Any] = []
            for rank in range(start, -1, -1):
                execution = ordered[rank][2]
                if status and execution.status != status:
                    continue
                page.append(execution)
                if len(page) == wanted:
                    break
            return page


_ATTRIBUTE = "_sfn_local_execution_index"
_indexes_lock = threading.Lock()


def _index_of(machine: Any) -> _Index:
    index: _Index | None = machine.__dict__.get(_ATTRIBUTE)
    if index is None:
        with _indexes_lock:
            index = machine.__dict__.get(_ATTRIBUTE)
            if index is None:
                index = machine.__dict__[_ATTRIBUTE] = _Index()
    index.catch_up(machine.executions)
    return index


@contextmanager
def pruning(machine: Any) -> Iterator[None]:
    """Hold the machine's index while executions are removed from its list, then drop it
    (sfn_idempotency.local.capabilities.retention)."""
    index: _Index | None = machine.__dict__.get(_ATTRIBUTE)
    with index.lock if index is not None else nullcontext():
        yield
        machine.__dict__.pop(_ATTRIBUTE, None)


def _found(machine: Any, arn: str) -> Any:
    """The machine's execution named ``arn``, or None."""
    return _index_of(machine).found(arn)


def _described_through_the_index(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    def describe_execution(self: Any, execution_arn: str) -> Any:
        self._validate_execution_arn(execution_arn)
        try:
            machine = self._get_state_machine_for_execution(execution_arn)
        except Exception:
            return original(self, execution_arn)  # moto's own refusal, in its words
        found = _found(machine, execution_arn)
        return found if found is not None else original(self, execution_arn)

    return describe_execution


def _named_starts_look_in_the_index(
    original: Callable[[Any, str, Any], Any],
) -> Callable[[Any, str, Any], Any]:
    def handle_name_input_idempotency(self: Any, name: str, execution_input: Any) -> Any:
        if name not in _index_of(self).names:
            return None
        return original(self, name, execution_input)

    return handle_name_input_idempotency


def _listed_newest_first(original: Callable[..., Any]) -> Callable[..., Any]:
    def list_executions(
        self: Any,
        state_machine_arn: str,
        status_filter: str | None = None,
        max_results: int | None = None,
        next_token: str | None = None,
    ) -> Any:
        from moto.core.exceptions import InvalidToken
        from moto.utilities.paginator import Paginator

        moto = partial(
            original,
            self,
            state_machine_arn,
            status_filter=status_filter,
            max_results=max_results,
            next_token=next_token,
        )
        machine = self.describe_state_machine(state_machine_arn)
        index = _index_of(machine)
        if not index.sortable:
            return moto()
        # moto's paginator, for its tokens and its refusals of a token that is not one of them
        paginator = Paginator(
            max_results=max_results,
            max_results_default=_PAGE_DEFAULT,
            starting_token=next_token,
            unique_attribute=_PAGE_ATTRIBUTES,
            param_values_to_check={"status_filter": status_filter},
        )
        after = None
        token = paginator._parsed_token
        if token is not None:
            after = index.found(_token_arn(token["uniqueAttributes"]))
            listed = after is not None and (not status_filter or after.status == status_filter)
            if not listed or not paginator._check_predicate(after):
                raise InvalidToken("Resource not found!")  # as moto's paginator refuses it
        limit = int(paginator._max_results)
        page = index.page(after, status_filter, limit + 1)
        if len(page) > limit:
            return page[:limit], paginator._build_next_token(page[limit])
        return page, None

    return list_executions


def _token_arn(unique_attributes: Any) -> str:
    """The execution ARN in a token of moto's paginator: the last of its unique attributes, which
    moto 5.2.6 lists and 5.2.5 joined with ``|`` (a start date never holds one)."""
    if isinstance(unique_attributes, list):
        return str(unique_attributes[-1])
    return str(unique_attributes).split("|", 1)[-1]


PATCHES: tuple[Patch, ...] = (
    Patch(82, _BACKEND, "describe_execution", _described_through_the_index),
    Patch(82, _BACKEND, "list_executions", _listed_newest_first),
    Patch(82, _BACKEND, "_get_state_machine_for_execution", keep),
    Patch(82, _BACKEND, "_validate_execution_arn", keep),
    Patch(82, _PAGINATOR, "_parse_starting_token", keep),  # sets the _parsed_token read above
    Patch(82, _PAGINATOR, "_check_predicate", keep),
    Patch(82, _PAGINATOR, "_build_next_token", keep),
    Patch(120, _MACHINE, "_handle_name_input_idempotency", _named_starts_look_in_the_index),
)
