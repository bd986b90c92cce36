"""What the engine reports as it happens, for whoever listens (``serve`` prints one line each): a
failed Task attempt, a failed run of a function a trigger invoked, an e-mail or SMS not sent.
Installed with a cloud; their listeners go when it closes."""

from __future__ import annotations

from sfn_idempotency.local.observability import (
    function_failures,
    function_logs,
    task_failures,
    unsent_notifications,
)


def install() -> None:
    function_logs.install()  # every invocation's log, in its function's group (not a report)
    task_failures.install()
    function_failures.install()
    unsent_notifications.install()


def forget_listeners() -> None:
    task_failures.listeners.clear()
    function_failures.listeners.clear()
    unsent_notifications.listeners.clear()
