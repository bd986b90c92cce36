"""Each notification SNS would send to an e-mail address or a phone, for whoever listens (``serve``
prints one line each). The engine sends no e-mail and no SMS: without this, an app whose README
says "you will get an e-mail" would show nothing at all (moto drops the message without a word).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability
from sfn_idempotency.local.compat.services import received

_SUBSCRIPTION = "moto.sns.models:Subscription"
UNSENT_PROTOCOLS = ("email", "email-json", "sms")
_PREVIEW_CHARACTERS = 200


@dataclass(frozen=True)
class UnsentNotification:
    topic: str
    protocol: str
    endpoint: str
    subject: str | None
    message: str

    def line(self) -> str:
        """One line: the topic, to whom, the subject, the message's start."""
        text = " ".join(self.message.split())
        if len(text) > _PREVIEW_CHARACTERS:
            text = f"{text[:_PREVIEW_CHARACTERS]}…"
        subject = f" [{self.subject}]" if self.subject else ""
        return f"SNS {self.topic} to {self.protocol} {self.endpoint}{subject}: {text}"


listeners: list[Callable[[UnsentNotification], None]] = []


def _told(original: Callable[..., None]) -> Callable[..., None]:
    """``Subscription.publish``: a notification for an e-mail or SMS subscription, once its filter
    policy let it through, is told to the listeners; moto's own publish runs as before."""

    def publish(
        self: Any,
        message: str,
        message_id: str,
        subject: str | None = None,
        message_attributes: dict[str, Any] | None = None,
        message_structure: str | None = None,
        **rest: Any,
    ) -> None:
        original(
            self,
            message,
            message_id,
            subject=subject,
            message_attributes=message_attributes,
            message_structure=message_structure,
            **rest,
        )
        if self.protocol not in UNSENT_PROTOCOLS or not listeners:
            return
        unsent = received(self, message, message_attributes, message_structure)
        if unsent is None:
            return
        notification = UnsentNotification(self.topic.name, self.protocol, self.endpoint, subject, unsent)
        for listener in list(listeners):
            listener(notification)

    return publish


PATCHES: tuple[Patch, ...] = (Patch(CAPABILITY, _SUBSCRIPTION, "publish", _told),)


def install() -> None:
    apply_capability("e-mail and SMS notifications shown", PATCHES)
