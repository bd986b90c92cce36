"""A module the record function imports from its layer (/opt/python, as on Lambda)."""


def record_item(order_id: str, **fields: object) -> dict[str, object]:
    return {"id": order_id, **fields}
