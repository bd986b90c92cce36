"""Looking up and listing a machine's executions (fix 82, speed: no behaviour changes).

82. moto found an execution by walking its machine's list (DescribeExecution, GetExecutionHistory,
    and every item of a ListExecutions page, which fixes 44 and 48 describe again), and listed a page
    by sorting all of the machine's executions, then walking them to the page's token: each call grew
    with the executions a machine ever had. An execution is now found through an index of ARNs, and
    a page is read backwards from the newest execution, or from its token's, which the index places.

A machine's list grows at its end (moto appends each execution as it starts; a deleted machine takes
its list with it), so each index catches up with the list's new end when asked; what removes
executions (a retention limit) drops the index, which the next look-up builds again. A list that is not in
start order, which executions started together can leave when they take the same microsecond or
append out of turn, is listed by moto's own sort, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, keep

_BACKEND = "moto.stepfunctions.models:StepFunctionBackend"
_PAGINATOR = "moto.utilities.paginator:Paginator"
_PAGE_ATTRIBUTES = ["start_date", "execution_arn"]  # moto's PAGINATION_MODEL for list_executions
_PAGE_DEFAULT = 100


class _Index:
    """One machine's executions by ARN, with their places in its list, and whether the list is
    in start order so far."""

    def __init__(self) -> None:
        self.places: dict[str, int] = {}
        self.seen = 0
        self.in_start_order = True
        self.lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Index:
        return _Index()  # each start copies its machine, executions left out (fix 19): none indexed

    def catch_up(self, executions: list[Any]) -> None:
        with self.lock:
            end = len(executions)
            for place in range(self.seen, end):
                execution = executions[place]
                self.places[execution.execution_arn] = place
                if place and not executions[place - 1].start_date < execution.start_date:
                    self.in_start_order = False  # a tie, or out of turn: moto's stable sort decides
            self.seen = max(self.seen, end)


_ATTRIBUTE = "_sfn_local_execution_index"
_indexes_lock = threading.Lock()


def _index_of(machine: Any) -> _Index:
    index: _Index | None = machine.__dict__.get(_ATTRIBUTE)
    if index is None:
        with _indexes_lock:
            index = machine.__dict__.setdefault(_ATTRIBUTE, _Index())
    assert index is not None
    index.catch_up(machine.executions)
    return index


def forget_index(machine: Any) -> None:
    """After executions were removed from the machine's list (sfn_idempotency.local.retention)."""
    machine.__dict__.pop(_ATTRIBUTE, None)


def _found(machine: Any, arn: str) -> Any:
    """The machine's execution named ``arn``, or None."""
    index = _index_of(machine)
    place = index.places.get(arn)
    if place is None or place >= len(machine.executions):
        return None
    execution = machine.executions[place]
    return execution if execution.execution_arn == arn else None


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

        machine = self.describe_state_machine(state_machine_arn)
        index = _index_of(machine)
        if not index.in_start_order:
            return original(
                self,
                state_machine_arn,
                status_filter=status_filter,
                max_results=max_results,
                next_token=next_token,
            )
        # moto's paginator, for its tokens and its refusals of a token that is not one of them
        paginator = Paginator(
            max_results=max_results,
            max_results_default=_PAGE_DEFAULT,
            starting_token=next_token,
            unique_attribute=_PAGE_ATTRIBUTES,
            param_values_to_check={"status_filter": status_filter},
        )
        start = len(machine.executions) - 1
        token = paginator._parsed_token
        if token is not None:
            arn = str(token["uniqueAttributes"]).split("|", 1)[-1]
            found = _found(machine, arn)
            listed = found is not None and (not status_filter or found.status == status_filter)
            if not listed or not paginator._check_predicate(found):
                raise InvalidToken("Resource not found!")  # as moto's paginator refuses it
            start = index.places[arn]
            if machine.executions[start] is not found:  # the list was pruned meanwhile: moto's walk
                return original(
                    self,
                    state_machine_arn,
                    status_filter=status_filter,
                    max_results=max_results,
                    next_token=next_token,
                )
        limit = int(paginator._max_results)
        page = list(_newest_first(machine.executions, start, status_filter, limit + 1))
        if len(page) > limit:
            return page[:limit], paginator._build_next_token(page[limit])
        return page, None

    return list_executions


def _newest_first(executions: list[Any], start: int, status: str | None, wanted: int) -> Iterator[Any]:
    taken = 0
    for place in range(start, -1, -1):
        execution = executions[place]
        if status and execution.status != status:
            continue
        yield execution
        taken += 1
        if taken == wanted:
            return


PATCHES: tuple[Patch, ...] = (
    Patch(82, _BACKEND, "describe_execution", _described_through_the_index),
    Patch(82, _BACKEND, "list_executions", _listed_newest_first),
    Patch(82, _BACKEND, "_get_state_machine_for_execution", keep),
    Patch(82, _BACKEND, "_validate_execution_arn", keep),
    Patch(82, _PAGINATOR, "_parse_starting_token", keep),  # sets the _parsed_token read above
    Patch(82, _PAGINATOR, "_check_predicate", keep),
    Patch(82, _PAGINATOR, "_build_next_token", keep),
)
