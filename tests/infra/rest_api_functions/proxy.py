"""A Lambda proxy integration's handler: it answers what API Gateway passed it."""

import json


def handler(event, context):
    if event["path"].endswith("/broken"):
        return {"body": {"not": "a string"}}  # a malformed proxy answer: API Gateway's 502
    answer = {
        "httpMethod": event["httpMethod"],
        "resource": event["resource"],
        "path": event["path"],
        "pathParameters": event["pathParameters"],
        "queryStringParameters": event["queryStringParameters"],
        "body": event["body"],
        "stage": event["requestContext"]["stage"],
    }
    return {"statusCode": 200, "headers": {"X-Handled-By": context.function_name}, "body": json.dumps(answer)}
