"""Activities: a state whose Resource is an activity ARN waits for a worker to ask for its task
(``GetActivityTask``, a long poll of up to 60 s), then for ``SendTaskSuccess`` or
``SendTaskFailure``, with ``SendTaskHeartbeat`` in between; ``HeartbeatSeconds`` and
``TimeoutSeconds`` end it in ``States.HeartbeatTimeout`` and ``States.Timeout``.
Docs: https://docs.aws.amazon.com/step-functions/latest/dg/concepts-activities.html

moto's interpreter schedules the task and awaits its outcome (ActivityCallbackEndpoint), and its
API creates, describes, lists and deletes activities; but the two never met (every execution got an
empty activity store) and there was no GetActivityTask. This module joins them: one queue of
pending tasks per activity, which executions fill and workers drain.

``ActivityWorker`` runs a Python function as an activity's worker in a test, through the API.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, add, apply_capability

LONG_POLL_SECONDS = 60.0  # how long GetActivityTask waits for a task before it answers without one
WAKE_INTERVAL_SECONDS = 0.01  # how often a closing worker wakes its poll until its thread has left
_CALLBACKS = "moto.stepfunctions.parser.asl.eval.callback.callback:CallbackPoolManager"
_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"


class TaskQueue:
    """One activity's scheduled tasks, oldest first; ``poll`` waits for one."""

    def __init__(self) -> None:
        self._tasks: deque[Any] = deque()
        self._changed = threading.Condition()
        self._woken = 0  # bumped by wake(): every poll waiting then returns empty-handed

    def add_task(self, task: Any) -> None:
        with self._changed:
            self._tasks.append(task)
            self._changed.notify()

    def poll(self, timeout: float) -> Any | None:
        with self._changed:
            woken = self._woken
            self._changed.wait_for(lambda: self._tasks or self._woken != woken, timeout)
            return self._tasks.popleft() if self._tasks else None

    def wake(self) -> None:
        with self._changed:
            self._woken += 1
            self._changed.notify_all()


_queues: dict[str, TaskQueue] = {}
_queues_lock = threading.Lock()


def queue(activity_arn: str) -> TaskQueue:
    with _queues_lock:
        return _queues.setdefault(activity_arn, TaskQueue())


def forget() -> None:
    """Drop every pending task and wake every poll (the cloud is closing)."""
    with _queues_lock:
        queues = list(_queues.values())
        _queues.clear()
    for pending in queues:
        pending.wake()


def _backend(activity_arn: str) -> Any:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    _, _, _, region, account, *_ = activity_arn.split(":")
    return stepfunctions_parser_backends[account][region]


class _ActivityStore:
    """What the interpreter looks an activity up in: the activities the API created, live."""

    def get(self, activity_arn: str) -> TaskQueue:
        # The error the activity state turns into its failure (moto's own lookup raised another).
        from moto.stepfunctions.parser.api import ActivityDoesNotExist

        try:
            exists = activity_arn in _backend(activity_arn).activities
        except (ValueError, KeyError):
            exists = False
        if not exists:
            raise ActivityDoesNotExist(f"Activity Does Not Exist: '{activity_arn}'")
        return queue(activity_arn)


_STORE = _ActivityStore()


def _executions_share_the_store(original: Callable[..., None]) -> Callable[..., None]:
    def init(self: Any, activity_store: Any) -> None:
        original(self, activity_store=_STORE)

    return init


def _endpoint(backend: Any, task_token: str) -> Any | None:
    """The waiting activity state of a running execution that issued ``task_token``."""
    for execution in backend._get_executions("RUNNING"):
        environment = getattr(execution.exec_worker, "env", None)
        endpoint = environment.callback_pool_manager.get(task_token) if environment is not None else None
        if endpoint is not None:
            return endpoint
    return None


def _get_activity_task(self: Any) -> Any:
    """``GetActivityTask``: the oldest task of a running execution, or, after the long poll, none."""
    from moto.core.responses import ActionResult

    activity_arn = str(self._get_param("activityArn"))
    worker_name = self._get_param("workerName")
    backend = self.stepfunction_backend
    backend.describe_activity(activity_arn)  # refuses an invalid ARN, or one that does not exist
    pending = queue(activity_arn)
    while (task := pending.poll(LONG_POLL_SECONDS)) is not None:
        endpoint = _endpoint(backend, task.task_token)
        if endpoint is None:
            continue  # its execution ended (stopped, timed out) before any worker asked
        endpoint.notify_activity_task_start(worker_name)
        return ActionResult({"taskToken": task.task_token, "input": task.task_input})
    return ActionResult({})


PATCHES: tuple[Patch, ...] = (Patch(CAPABILITY, _CALLBACKS, "__init__", _executions_share_the_store),)


def install() -> None:
    """Join moto's interpreter to its activities, and answer GetActivityTask."""
    apply_capability("activities", PATCHES)
    add(_RESPONSES, "get_activity_task", _get_activity_task)


# -- a worker for tests ----------------------------------------------------------------------------
ActivityHandler = Callable[[Any], Any]


class ActivityWorker:
    """Runs ``handler`` as the worker of ``activity_arn`` until closed (``with ActivityWorker(...)``).

    Each task's input is parsed from JSON and handed to ``handler``; what it returns is sent with
    SendTaskSuccess, what it raises with SendTaskFailure (the exception's class name as the error,
    its message as the cause). With ``heartbeat_seconds``, SendTaskHeartbeat is sent that often
    while the handler runs. ``tasks`` counts the tasks it took.
    """

    def __init__(
        self,
        stepfunctions: Any,
        activity_arn: str,
        handler: ActivityHandler,
        *,
        worker_name: str = "local-worker",
        heartbeat_seconds: float | None = None,
    ) -> None:
        self._sfn = stepfunctions
        self.activity_arn = activity_arn
        self._handler = handler
        self._worker_name = worker_name
        self._heartbeat_seconds = heartbeat_seconds
        self._stop = threading.Event()
        self._polling = threading.Event()
        self._thread = threading.Thread(target=self._work, name=f"activity-{worker_name}", daemon=True)
        self.tasks = 0

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        deadline = time.monotonic() + LONG_POLL_SECONDS
        # One wake is lost when the worker has passed its stop check but its poll has not begun
        # waiting yet (that poll then sleeps out its minute): wake while it polls, until it has left.
        while self._thread.is_alive() and time.monotonic() < deadline:
            if self._polling.is_set():
                queue(self.activity_arn).wake()
            self._thread.join(WAKE_INTERVAL_SECONDS)

    def _work(self) -> None:
        while not self._stop.is_set():
            self._polling.set()
            try:
                task = self._sfn.get_activity_task(
                    activityArn=self.activity_arn, workerName=self._worker_name
                )
            finally:
                self._polling.clear()
            if "taskToken" in task and not self._stop.is_set():
                self.tasks += 1
                self._run(task["taskToken"], task.get("input") or "null")

    def _run(self, token: str, task_input: str) -> None:
        done = threading.Event()
        beating = threading.Thread(target=self._beat, args=(token, done), daemon=True)
        if self._heartbeat_seconds is not None:
            beating.start()
        try:
            output = self._handler(json.loads(task_input))
        except Exception as error:
            done.set()
            _answer(
                self._sfn.send_task_failure, taskToken=token, error=type(error).__name__, cause=str(error)
            )
            return
        done.set()
        _answer(self._sfn.send_task_success, taskToken=token, output=json.dumps(output))

    def _beat(self, token: str, done: threading.Event) -> None:
        assert self._heartbeat_seconds is not None
        while not done.wait(self._heartbeat_seconds):
            _answer(self._sfn.send_task_heartbeat, taskToken=token)


def _answer(send: Callable[..., Any], **request: Any) -> None:
    """Send the task's answer; a task that already ended (timed out, stopped) takes none, as on AWS."""
    from botocore.exceptions import ClientError

    try:
        send(**request)
    except ClientError as error:
        if error.response["Error"]["Code"] not in _ENDED_TASK_ERRORS:
            raise


_ENDED_TASK_ERRORS = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})
