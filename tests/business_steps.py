"""A non-Lambda business step used by the local and the synth tests alike."""

SQS_SEND_STEP = {
    "Resource": "arn:aws:states:::sqs:sendMessage",
    "Parameters": {"QueueUrl": "${OrdersQueueUrl}", "MessageBody.$": "$.event"},
    "ResultSelector": {"messageId.$": "$.MessageId"},
}
