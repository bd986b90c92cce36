"""Each notification SNS would send to an e-mail address or a phone, for whoever listens (``serve``
prints one line each). The engine sends no e-mail and no SMS: without this, an app whose README
says "you will get an e-mail" would show nothing at all (moto drops the message without a word).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability

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
        group_id: str | None = None,
        deduplication_id: str | None = None,
        message_structure: str | None = None,
    ) -> None:
        original(
            self,
            message,
            message_id,
            subject,
            message_attributes,
            group_id,
            deduplication_id,
            message_structure,
        )
        if self.protocol not in UNSENT_PROTOCOLS or not listeners:
            return
        matcher = self._filter_policy_matcher
        if matcher is not None and not matcher.matches(message_attributes, message):
            return
        if message_structure == "json":  # each protocol its own message, as SNS picks it
            message = self._parse_message_structure(message, self.protocol)
        notification = UnsentNotification(self.topic.name, self.protocol, self.endpoint, subject, message)
        for listener in list(listeners):
            listener(notification)

    return publish


PATCHES: tuple[Patch, ...] = (Patch(CAPABILITY, _SUBSCRIPTION, "publish", _told),)


def install() -> None:
    apply_capability("e-mail and SMS notifications shown", PATCHES)
