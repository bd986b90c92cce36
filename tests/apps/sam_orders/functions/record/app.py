"""Python: records the priced order in the table, with a module from its layer."""

import json
import os
from decimal import Decimal

import boto3
from order_records import record_item  # type: ignore[import-not-found]  # from its layer (/opt/python)


def handler(event, context):
    table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
    if "Records" in event:  # from the queue: each body is an order
        for record in event["Records"]:
            order = json.loads(record["body"])
            table.put_item(Item=record_item(order["orderId"], source="queue"))
        return {"recorded": len(event["Records"])}
    table.put_item(
        Item=record_item(event["orderId"], total=Decimal(str(event["total"])), stage=event["stage"])
    )
    return {**event, "recorded": True}
