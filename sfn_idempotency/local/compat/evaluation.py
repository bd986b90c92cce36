"""How moto's interpreter evaluates: its threads, its copies of a program's state, its timestamps,
its logs, its frames (fixes 59, 63, 65, 66, 84, 85, 110, 116, 121, 126 and 129, speed: no
behaviour changes).

59. moto ran every program (the machine's, each Map iteration's, each Parallel branch's) in a
    thread of its own and joined it, only to stop waiting at its TimeoutSeconds. A program without
    one is joined without a limit, so it runs in its caller's thread.
63. Likewise moto ran every Task's work in a thread of its own and waited for it up to the Task's
    TimeoutSeconds, which is 99999999 s when the state sets none (nor a heartbeat, which brings a
    default of 60 s). Waiting that long is waiting for the end, so such a Task's work runs in its
    state's thread; moto's code around it (what it returns, raises and assigns) is unchanged.
65. moto deep-copies a program's state at every state and every frame (a Map iteration opens
    one). A running or ended program's state holds a state's name and a field's name, text or
    None, so a copy of its attributes is a deep copy, without ``deepcopy``'s generic walk.
66. Every history event's timestamp was written with ``strftime``. For a four-digit year, its
    fields joined from tables of their two- and three-digit texts are the same text (milliseconds
    truncated, as ``[:-3]`` truncated microseconds; the offset left out, as ``strftime`` left it
    out), in a quarter of the time ``isoformat`` took to write it.
84. moto put every thread its interpreter starts (each execution's, Map iteration's, Parallel
    branch's, callback wait's) on a list that nothing reads and nothing empties: each ended thread,
    its events and what its target held stayed for the life of the process. The list now keeps the
    threads that are alive.
85. moto deep-copies a workflow's JSON values (its input, each state's result, a Task's
    parameters, what a path selects, the evaluation stack) with ``copy.deepcopy``, whose generic
    walk (a memo and a dispatch per object) was the largest cost of the interpreter's own. Dicts,
    lists and scalars are now copied by a walk that knows them; anything else still goes through
    ``copy.deepcopy``. (A JSON value has no shared parts, so keeping them shared, as the memo did,
    never mattered.)
110. moto writes a component as text by walking its attributes, the whole tree below it: a
    Parallel named each branch's thread after its program's text, and every state that failed
    wrote its own text into an ERROR log line, each time, whether or not a logger took the line
    (the engine's take none). A branch's thread is named without it, and a failure's line is
    written only for a logger that takes it.
116. A Map deep-copied its iterations' results with ``copy.deepcopy`` (fix 85's generic walk, a
    memo entry per object) when it gathered them; each result is a JSON value, copied by fix 85's
    walk.
121. A frame (each Map iteration's, each Parallel branch's) was built with an event manager, a
    callback pool and a Map run pool of its own, which ``as_inner_frame_of`` then replaced with
    its opener's: each with a lock, an ordered dict or an id counter, made for nothing at every
    iteration. While an environment opens a frame, the frame is built with its opener's.
126. Each frame deep-copied its opener's State context (a state's name, entry time and retry
    count) and program state, and every look at a program's state copied it again, each through
    ``copy.deepcopy``'s generic walk (a memo, a dispatch and a ``keep_alive`` per object): a
    ninth of the calls a Map iteration made. The context is JSON, copied by fix 85's walk; a
    running or ended program's state by fix 65's copy of its attributes; any other state still
    by ``copy.deepcopy``.
129. A state's input was deep-copied each time it was read, also to be written as JSON into the
    state's entered and exited events, which keep only the text: a third of the copies an
    execution made. Those two read the input itself. (moto never changes a state's input in
    place: it replaces it, and every other reader still gets a copy.)
"""

from __future__ import annotations

import copy
import datetime
import logging
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, add, keep

LOG = logging.getLogger(__name__)
_COMPONENT_PACKAGE = "moto.stepfunctions.parser.asl.component"
_EXECUTE_STATE_MODULE = f"{_COMPONENT_PACKAGE}.state.exec.execute_state"
_PROGRAM_STATE_MODULE = "moto.stepfunctions.parser.asl.eval.program_state"
_EVENT_MANAGER_MODULE = "moto.stepfunctions.parser.asl.eval.event.event_manager"
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment"
_NAMES_ONLY_PROGRAM_STATES = ("ProgramRunning", "ProgramEnded")  # attributes: str or None only
_FIRST_FOUR_DIGIT_YEAR = 1000  # strftime's %Y does not pad a shorter year
_TWO_DIGITS = tuple(f"{number:02d}" for number in range(100))  # a month, day, hour, minute, second
_THREE_DIGITS = tuple(f"{number:03d}" for number in range(1000))  # milliseconds
_MICROSECONDS_PER_MILLISECOND = 1000


def _programs_without_a_timeout_run_in_place(
    original: Callable[[Any, Any], None],
) -> Callable[[Any, Any], None]:
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    def eval(self: Any, env: Any) -> None:
        if self.timeout_seconds is not None:
            original(self, env)
            return
        env.next_state_name = self.start_at.start_at_name
        try:
            EvalComponent.eval(self, env)
        except Exception:
            # What escaped the program's thread ended it, logged, not raised: so here too.
            LOG.exception("a program ended with an exception")

    return eval


class _TaskTimeouts(threading.local):
    unlimited = False  # whether the Task this thread is about to run has no timeout of its own


_task_timeouts = _TaskTimeouts()


def task_runs_in_place() -> bool:
    """Whether the Task this thread is about to start has no timeout of its own (fix 63: its work
    runs in this thread, and nothing waits for it)."""
    return _task_timeouts.unlimited


def _noting_a_task_without_a_timeout(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds

    def evaluate_with_timeout(self: Any, env: Any) -> None:
        timeout = self.timeout
        _task_timeouts.unlimited = (
            type(timeout) is TimeoutSeconds
            and timeout.timeout_seconds == TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS
        )
        original(self, env)  # it starts its Task's worker next: ``_tasks_without_a_timeout_run_in_place``

    return evaluate_with_timeout


class _InPlace:
    """A Task's work run by its caller at ``start``, as a thread that was joined at once."""

    def __init__(self, target: Callable[[], None]) -> None:
        self._target = target

    def start(self) -> None:
        self._target()  # moto's target catches everything, and hands it back through its own lists

    def is_alive(self) -> bool:  # fix 84's list asks; the work ran (or runs) on its caller's thread
        return False


def _tasks_without_a_timeout_run_in_place(original: type[threading.Thread]) -> Callable[..., Any]:
    def task_worker(*, target: Callable[[], None], daemon: bool) -> threading.Thread | _InPlace:
        if _task_timeouts.unlimited:
            _task_timeouts.unlimited = False  # the Task's own work may evaluate states of its own
            return _InPlace(target)
        return original(target=target, daemon=daemon)

    return task_worker


def _attributes_copied(self: Any, memo: dict[int, Any]) -> Any:
    copied = object.__new__(type(self))
    copied.__dict__.update(self.__dict__)
    return copied


def _written_without_strftime(original: Callable[[Any], str]) -> Callable[[Any], str]:
    def iso_8601_datetime_with_milliseconds(value: Any = None) -> str:
        if not isinstance(value, datetime.datetime) or value.year < _FIRST_FOUR_DIGIT_YEAR:
            return original(value)
        return (
            f"{value.year}-{_TWO_DIGITS[value.month]}-{_TWO_DIGITS[value.day]}T{_TWO_DIGITS[value.hour]}"
            f":{_TWO_DIGITS[value.minute]}:{_TWO_DIGITS[value.second]}"
            f".{_THREE_DIGITS[value.microsecond // _MICROSECONDS_PER_MILLISECOND]}Z"
        )

    return iso_8601_datetime_with_milliseconds


class LiveThreads(list[threading.Thread]):
    """moto's ``TMP_THREADS``, keeping the threads that are alive: ended ones are dropped whenever
    the list has doubled since it was last pruned (so an append costs the same, however many ran)."""

    _FLOOR = 64

    def __init__(self) -> None:
        super().__init__()
        self._prune_at = self._FLOOR
        self._lock = threading.Lock()

    def append(self, thread: threading.Thread) -> None:
        with self._lock:
            super().append(thread)
            if len(self) >= self._prune_at:
                self[:] = [kept for kept in self if kept.is_alive()]
                self._prune_at = max(self._FLOOR, 2 * len(self))


JSON_SCALARS = frozenset({str, int, float, bool, type(None)})  # a JSON value's types that hold no other


def copied_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, scalars); other objects by ``copy.deepcopy``."""
    kind = type(value)
    if kind in JSON_SCALARS:
        return value
    # A member that is a scalar (most of them) is taken without a call.
    if kind is dict:
        return {key: item if type(item) in JSON_SCALARS else copied_json(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in JSON_SCALARS else copied_json(item) for item in value]
    return copy.deepcopy(value)


# What the patched modules call ``copy``: ``deepcopy`` is fix 85's; ``copy`` is the module's own.
_JSON_COPIES = types.SimpleNamespace(deepcopy=copied_json, copy=copy.copy)
_JSON_COPYING_MODULES = (  # each copies only the workflow's JSON values with copy.deepcopy
    "moto.stepfunctions.parser.asl.eval.states",
    f"{_COMPONENT_PACKAGE}.common.string.string_expression",
    f"{_COMPONENT_PACKAGE}.state.exec.execute_state",
    f"{_COMPONENT_PACKAGE}.common.path.result_path",
    f"{_COMPONENT_PACKAGE}.state.exec.state_task.service.state_task_service",
)

_live_threads = LiveThreads()
_THREAD_KEEPERS = (  # every moto module that appends to TMP_THREADS, each with its own name for it
    "moto.stepfunctions.parser.utils",
    f"{_COMPONENT_PACKAGE}.program.program",
    f"{_COMPONENT_PACKAGE}.test_state.program.test_state_program",
    f"{_COMPONENT_PACKAGE}.state.exec.state_map.iteration.inline_iteration_component",
    f"{_COMPONENT_PACKAGE}.state.exec.state_task.service.state_task_service_callback",
    f"{_COMPONENT_PACKAGE}.state.exec.state_parallel.branch_worker",
    f"{_COMPONENT_PACKAGE}.state.exec.execute_state",  # every Task's worker, in place or a thread
    "moto.stepfunctions.parser.backend.execution_worker",
)


# -- fix 110: a component's text, written only when it is read --------------------------------------
_EVAL_COMPONENT = f"{_COMPONENT_PACKAGE}.eval_component"


def _formatted_by_its_class(_original: Callable[[Any, str], str]) -> Callable[[Any, str], str]:
    """A program formatted into text (a Parallel branch's thread name is ``f"BranchWorker_${program}"``)
    is named by its class; ``str()`` and ``repr()`` still walk it."""

    def format_program(self: Any, spec: str) -> str:
        return format(type(self).__name__, spec)

    return format_program


def _logged_when_taken(original: Callable[..., None]) -> Callable[..., None]:
    logger = sys.modules[_EVAL_COMPONENT].LOG

    def log(self: Any, **exception: Any) -> None:  # moto names the exception's parameter
        if logger.isEnabledFor(logging.ERROR):
            original(self, **exception)

    return log


# -- fix 116: a Map's gathered results, copied by fix 85's walk ---------------------------------------
def _results_copied_as_json(_original: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.job import JobClosed

    def get_closed_jobs(self: Any) -> list[Any]:
        with self._mutex:
            closed = [JobClosed(job.job_index, copied_json(job.job_output)) for job in self._closed_jobs]
        return sorted(closed, key=lambda job: job.job_index)

    return get_closed_jobs


# -- fix 121: a frame built with its opener's event manager and pools -----------------------------------
class _Opening(threading.local):
    opener: Any = None  # the environment opening a frame in this thread, while it does


_opening = _Opening()


def _frame_opened_by(original: Callable[..., Any]) -> Callable[..., Any]:
    def open_frame(self: Any, *args: Any, **kwargs: Any) -> Any:
        _opening.opener = self
        try:
            return original(self, *args, **kwargs)
        finally:
            _opening.opener = None

    return open_frame


def _openers_own(attribute: str) -> Callable[[type], Callable[..., Any]]:
    """What a frame's constructor makes in place of ``original(...)``: its opener's ``attribute``,
    which ``as_inner_frame_of`` assigns to the frame next; outside an opening, a new one."""

    def build(original: type) -> Callable[..., Any]:
        def made(*args: Any, **kwargs: Any) -> Any:
            opener = _opening.opener
            return getattr(opener, attribute) if opener is not None else original(*args, **kwargs)

        return made

    return build


# -- fix 126: a frame's copies, by what they are -------------------------------------------------------
def _frame_copies(original: types.ModuleType) -> types.SimpleNamespace:
    """What the environment module calls ``copy``: its ``deepcopy`` knows a frame's State context
    (JSON) and the names-only program states; ``copy`` is the module's own."""
    module = sys.modules[_PROGRAM_STATE_MODULE]
    names_only = tuple(getattr(module, state) for state in _NAMES_ONLY_PROGRAM_STATES)

    def deepcopy(value: Any) -> Any:
        if type(value) in names_only:
            return _attributes_copied(value, {})
        return copied_json(value)  # JSON by its walk; anything else by copy.deepcopy

    return types.SimpleNamespace(deepcopy=deepcopy, copy=original.copy)


# -- fix 129: a state's input written into its events without a copy -----------------------------------
class _Writing(threading.local):
    input_out: bool = False  # this thread writes a state's input into an event, and keeps only the text


_writing = _Writing()


def state_input(env: Any) -> Any:
    """A state's input itself, not a copy: for a reader that changes nothing in it (moto replaces
    a state's input, never changes it in place)."""
    return env.states._states_data["input"]


def _input_read_in_place(original: Callable[..., Any]) -> Callable[..., Any]:
    def get_input(self: Any, query: str | None = None) -> Any:
        if query is None and _writing.input_out:
            return self._states_data["input"]
        return original(self, query)

    return get_input


def _writing_the_input_out(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def event_details(self: Any, env: Any) -> Any:
        _writing.input_out = True
        try:
            return original(self, env)
        finally:
            _writing.input_out = False

    return event_details


PATCHES: tuple[Patch, ...] = (
    Patch(
        59, f"{_COMPONENT_PACKAGE}.program.program:Program", "eval", _programs_without_a_timeout_run_in_place
    ),
    Patch(
        63,
        f"{_EXECUTE_STATE_MODULE}:ExecutionState",
        "_evaluate_with_timeout",
        _noting_a_task_without_a_timeout,
    ),
    Patch(63, _EXECUTE_STATE_MODULE, "Thread", _tasks_without_a_timeout_run_in_place),
    *(Patch(65, _PROGRAM_STATE_MODULE, state, keep) for state in _NAMES_ONLY_PROGRAM_STATES),
    Patch(66, _EVENT_MANAGER_MODULE, "iso_8601_datetime_with_milliseconds", _written_without_strftime),
    *(Patch(84, module, "TMP_THREADS", lambda _original: _live_threads) for module in _THREAD_KEEPERS),
    *(Patch(85, module, "copy", lambda _original: _JSON_COPIES) for module in _JSON_COPYING_MODULES),
    Patch(110, f"{_COMPONENT_PACKAGE}.program.program:Program", "__format__", _formatted_by_its_class),
    Patch(110, f"{_EVAL_COMPONENT}:EvalComponent", "_log_failure_event_exception", _logged_when_taken),
    Patch(110, f"{_EVAL_COMPONENT}:EvalComponent", "_log_exception", _logged_when_taken),
    Patch(
        116,
        f"{_COMPONENT_PACKAGE}.state.exec.state_map.iteration.job:JobPool",
        "get_closed_jobs",
        _results_copied_as_json,
    ),
    Patch(121, f"{_ENVIRONMENT}:Environment", "open_frame", _frame_opened_by),
    Patch(121, f"{_ENVIRONMENT}:Environment", "open_inner_frame", _frame_opened_by),
    Patch(121, _ENVIRONMENT, "EventManager", _openers_own("event_manager")),
    Patch(121, _ENVIRONMENT, "CallbackPoolManager", _openers_own("callback_pool_manager")),
    Patch(121, _ENVIRONMENT, "MapRunRecordPoolManager", _openers_own("map_run_record_pool_manager")),
    Patch(126, _ENVIRONMENT, "copy", _frame_copies),
    Patch(129, "moto.stepfunctions.parser.asl.eval.states:States", "get_input", _input_read_in_place),
    *(
        Patch(129, f"{_COMPONENT_PACKAGE}.state.state:CommonStateField", details, _writing_the_input_out)
        for details in ("_get_state_entered_event_details", "_get_state_exited_event_details")
    ),
)


def install_program_state_copies() -> None:
    """Fix 65: ``deepcopy`` uses a class's own ``__deepcopy__``, which these states lacked."""
    for state in _NAMES_ONLY_PROGRAM_STATES:
        add(f"{_PROGRAM_STATE_MODULE}:{state}", "__deepcopy__", _attributes_copied)
