"""moto's S3, SNS and Secrets Manager, answering as AWS does (recorded), for every caller: a Task's
aws-sdk call and a test's own client alike.

- Fix 25 (S3): every object is encrypted with SSE-S3 unless asked otherwise (AWS's default since
  January 2023), and its answers say so (``ServerSideEncryption: AES256``); an object stored with a
  checksum has ``ChecksumType: FULL_OBJECT`` (a single-part upload's). moto said neither.
- Fix 31 (SNS): a FIFO topic refuses a message without ``MessageGroupId`` as AWS does
  (``InvalidParameter``, "Invalid parameter: The MessageGroupId parameter is required for FIFO
  topics", the words moto's own PublishBatch uses; moto's Publish said ``MissingParameter``), and
  Publish to a FIFO topic answers the message's ``SequenceNumber``.
- Fix 32 (Secrets Manager): a secret's name may hold only letters, digits and ``/_+=.@!-``; AWS
  refuses any other with ``ValidationException`` and its words (moto created the secret).
- Fix 103 (SQS): SendMessage without a ``MessageBody`` is ``MissingParameter``, "The request must
  contain the parameter MessageBody." (recorded); moto failed on the missing body with Python's
  ``object of type 'NoneType' has no len()``.
- Fix 104 (SNS): a subscription whose SQS queue does not exist does not fail the Publish: on AWS
  the publisher's call succeeds and only that delivery fails, on SNS's side (its delivery policy,
  a dead-letter queue if the subscription has one). moto raised the queue's error out of Publish,
  so a Task failed with ``SNS.AWS.SimpleQueueService.NonExistentQueueException``.
- Fix 152 (SNS): Publish to a topic that does not exist is ``NotFound``, "Topic does not exist"
  (recorded: the Task's cause); moto looked for a mobile endpoint of that ARN when it found no
  topic and said "Endpoint does not exist".
- Fix 162 (SNS): a Lambda subscription gets the topic's notification as SNS delivers it to Lambda
  (``Records[0].Sns``: its message id, topic ARN, subject or null, attributes as published, the
  signature; the subscription's ARN as ``EventSubscriptionArn``), invoked asynchronously (fix 161).
  moto invoked it with a fixed sample (topic ``arn:aws:sns:EXAMPLE``, subject ``TestInvoke``, a
  ``Test`` attribute), whatever was published, and waited for it.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.lambda_runtime import invoke_asynchronously
from sfn_idempotency.local.compat.patching import Patch

LOG = logging.getLogger(__name__)
_S3_MODELS = "moto.s3.models"
_SNS_MODELS = "moto.sns.models"
_DEFAULT_ENCRYPTION = "AES256"
_SINGLE_PART_CHECKSUM = "FULL_OBJECT"
_CHECKSUM_HEADER_PREFIX = "x-amz-checksum-"
_CHECKSUM_TYPE_HEADER = "x-amz-checksum-type"
_ENDPOINT_MARK = ":endpoint/"  # a mobile platform endpoint's ARN: arn:aws:sns:<region>:<account>:endpoint/...
_FIFO_GROUP_REQUIRED = "Invalid parameter: The MessageGroupId parameter is required for FIFO topics"
# SNS numbers each FIFO topic's messages with a 128-bit, increasing number, written in 20 or more digits.
_SEQUENCE_DIGITS = 20
_sequence = itertools.count(10**19)
_SECRET_NAME = re.compile(r"[A-Za-z0-9/_+=.@!-]+")
_INVALID_SECRET_NAME = (
    "Invalid name. Must be a valid name containing alphanumeric characters, or any of the following: -/_+=.@!"
)
_sequence_lock = threading.Lock()


def _encrypted_by_default(original: property) -> property:
    def response_dict(self: Any) -> dict[str, Any]:
        headers: dict[str, Any] = original.fget(self)  # type: ignore[misc]
        if self.encryption is None:
            headers.setdefault("x-amz-server-side-encryption", _DEFAULT_ENCRYPTION)
        return headers

    return property(response_dict)


def _checksum_type_of_single_part_uploads(original: Any) -> Any:
    @functools.wraps(original)
    def put_object(self: Any) -> Any:
        status, headers, body = original(self)
        checksums = [name for name in headers if name.startswith(_CHECKSUM_HEADER_PREFIX)]
        if checksums and _CHECKSUM_TYPE_HEADER not in headers:
            headers[_CHECKSUM_TYPE_HEADER] = _SINGLE_PART_CHECKSUM
            stored = self.backend.get_object(self.bucket_name, self.parse_key_name())
            if stored is not None and not stored.checksum_type:
                stored.checksum_type = _SINGLE_PART_CHECKSUM
        return status, headers, body

    return put_object


def _fifo_topics_need_a_group(original: Any) -> Any:
    @functools.wraps(original)
    def publish(self: Any, message: str, arn: str | None = None, *args: Any, **kwargs: Any) -> Any:
        from moto.sns.exceptions import SNSInvalidParameter

        topic = self.topics.get(arn) if arn else None
        if topic is not None and topic.fifo_topic and not kwargs.get("group_id"):
            raise SNSInvalidParameter(_FIFO_GROUP_REQUIRED)
        return original(self, message, arn, *args, **kwargs)

    return publish


def _missing_topics_named(original: Any) -> Any:
    @functools.wraps(original)
    def publish(self: Any, message: str, arn: str | None = None, *args: Any, **kwargs: Any) -> Any:
        from moto.sns.exceptions import SNSNotFoundError

        if arn and _ENDPOINT_MARK not in arn and arn not in self.topics and not kwargs.get("phone_number"):
            raise SNSNotFoundError("Topic does not exist")
        return original(self, message, arn, *args, **kwargs)

    return publish


def _fifo_sequence_numbers(original: Any) -> Any:
    @functools.wraps(original)
    def publish(self: Any) -> Any:
        from moto.core.responses import ActionResult

        answer = original(self)
        topic = self.backend.topics.get(self._get_param("TopicArn") or self._get_param("TargetArn"))
        if topic is None or not topic.fifo_topic or not isinstance(answer.result, dict):
            return answer
        with _sequence_lock:
            sequence_number = str(next(_sequence)).zfill(_SEQUENCE_DIGITS)
        return ActionResult({**answer.result, "SequenceNumber": sequence_number})

    return publish


def _secret_names_checked(original: Any) -> Any:
    @functools.wraps(original)
    def create_secret(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        from moto.secretsmanager.exceptions import ValidationException

        if not _SECRET_NAME.fullmatch(name):
            raise ValidationException(_INVALID_SECRET_NAME)
        return original(self, name, *args, **kwargs)

    return create_secret


def string_to_sign(notification: dict[str, Any]) -> str:
    """What SNS signs for a notification: each present field's name and value on their own lines,
    in this order (documented: "Verifying the signatures of Amazon SNS messages")."""
    fields = ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type")
    return "".join(f"{name}\n{notification[name]}\n" for name in fields if name in notification)


def _signed_as_the_topic_asks(original: Any) -> Any:
    """A notification is signed with SHA1 and says ``SignatureVersion`` 1, unless its topic's
    ``SignatureVersion`` attribute asks for 2 (SHA256) (recorded: test_sns_task_service); moto
    always signed with SHA256, said 2, and left the Subject out of what it signed."""
    import base64

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    def get_post_data(
        self: Any, message: str, message_id: str, subject: str | None, *args: Any, **kwargs: Any
    ) -> Any:
        notification = original(self, message, message_id, subject, *args, **kwargs)
        # CreateTopic keeps its attributes under snake-case names, SetTopicAttributes as given.
        asked = getattr(self.topic, "SignatureVersion", None) or getattr(
            self.topic, "signature_version", None
        )
        version = str(asked or "1")
        digest = hashes.SHA256() if version == "2" else hashes.SHA1()
        signature = self.private_key().sign(string_to_sign(notification).encode(), padding.PKCS1v15(), digest)
        notification.update(SignatureVersion=version, Signature=base64.b64encode(signature).decode())
        return notification

    return get_post_data


def _a_body_required(original: Callable[..., Any]) -> Callable[..., Any]:
    from moto.sqs.exceptions import MissingParameter

    def send_message(self: Any, queue_name: str, message_body: Any, *args: Any, **kwargs: Any) -> Any:
        if message_body is None:
            raise MissingParameter("MessageBody")
        return original(self, queue_name, message_body, *args, **kwargs)

    return send_message


def received(
    subscription: Any, message: str, message_attributes: dict[str, Any] | None, message_structure: str | None
) -> str | None:
    """``message`` as ``subscription`` receives it, as moto's ``Subscription.publish`` decides: None
    when its filter policy holds it back; of a JSON message structure, its protocol's own message."""
    matcher = subscription._filter_policy_matcher
    if matcher is not None and not matcher.matches(message_attributes, message):
        return None
    if message_structure == "json":
        return str(subscription._parse_message_structure(message, subscription.protocol))
    return message


def _lambda_notified_as_sns_does(original: Callable[..., None]) -> Callable[..., None]:
    def publish(
        self: Any,
        message: str,
        message_id: str,
        subject: str | None = None,
        message_attributes: dict[str, Any] | None = None,
        message_structure: str | None = None,
        **rest: Any,
    ) -> None:
        if self.protocol != "lambda":
            original(
                self,
                message,
                message_id,
                subject=subject,
                message_attributes=message_attributes,
                message_structure=message_structure,
                **rest,
            )
            return
        notified = received(self, message, message_attributes, message_structure)
        if notified is None:
            return
        invoke_asynchronously(
            self.endpoint,
            json.dumps(
                {"Records": [_lambda_record(self, notified, message_id, subject, message_attributes)]}
            ),
            f"SNS {self.topic.name}",
        )

    return publish


def _lambda_record(
    subscription: Any, message: str, message_id: str, subject: str | None, attributes: dict[str, Any] | None
) -> dict[str, Any]:
    """One record of SNS's event for Lambda: the notification SNS signs (fix 52), its URLs spelt
    ``Url`` as Lambda's event spells them, the subject null and the attributes empty when absent."""
    notification = subscription.get_post_data(message, message_id, subject)
    return {
        "EventSource": "aws:sns",
        "EventVersion": "1.0",
        "EventSubscriptionArn": subscription.arn,
        "Sns": {
            "Type": notification["Type"],
            "MessageId": message_id,
            "TopicArn": notification["TopicArn"],
            "Subject": subject or None,
            "Message": message,
            "Timestamp": notification["Timestamp"],
            "SignatureVersion": notification["SignatureVersion"],
            "Signature": notification["Signature"],
            "SigningCertUrl": notification["SigningCertURL"],
            "UnsubscribeUrl": notification["UnsubscribeURL"],
            "MessageAttributes": attributes or {},
        },
    }


def _deliveries_fail_alone(original: Callable[..., None]) -> Callable[..., None]:
    from moto.sqs.exceptions import QueueDoesNotExist

    def publish(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            original(self, *args, **kwargs)
        except QueueDoesNotExist:
            LOG.debug("SNS delivery to %s failed: the queue does not exist", self.endpoint)

    return publish


PATCHES: tuple[Patch, ...] = (
    Patch(104, f"{_SNS_MODELS}:Subscription", "publish", _deliveries_fail_alone),
    Patch(162, f"{_SNS_MODELS}:Subscription", "publish", _lambda_notified_as_sns_does),
    Patch(103, "moto.sqs.models:SQSBackend", "send_message", _a_body_required),
    Patch(25, f"{_S3_MODELS}:FakeKey", "response_dict", _encrypted_by_default),
    Patch(25, "moto.s3.responses:S3Response", "put_object", _checksum_type_of_single_part_uploads),
    Patch(31, f"{_SNS_MODELS}:SNSBackend", "publish", _fifo_topics_need_a_group),
    Patch(152, f"{_SNS_MODELS}:SNSBackend", "publish", _missing_topics_named),
    Patch(31, "moto.sns.responses:SNSResponse", "publish", _fifo_sequence_numbers),
    Patch(52, f"{_SNS_MODELS}:Subscription", "get_post_data", _signed_as_the_topic_asks),
    Patch(32, "moto.secretsmanager.models:SecretsManagerBackend", "create_secret", _secret_names_checked),
)
