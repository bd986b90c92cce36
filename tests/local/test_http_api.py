"""The HTTP front door on `sfn-idempotency serve`: POST {apiEndpoint}/orders with an Idempotency-Key
header, through the same Velocity templates API Gateway renders and StartSyncExecution of the HTTP
workflow, answered with a real HTTP client (httpx) and curl."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.http.mapping_templates import Util
from tests.servers import clean_environment, read_ready_line, start_server

REQUEST_DEADLINE_SECONDS = 60
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    process = start_server()
    try:
        yield f"{read_ready_line(process)['apiEndpoint']}/orders"
    finally:
        process.kill()
        process.wait(REQUEST_DEADLINE_SECONDS)


def order(**changes: Any) -> dict[str, Any]:
    return {"orderId": f"o-{uuid.uuid4().hex[:8]}", "amount": 12, **changes}


def post(api: str, body: Any, key: str | None) -> httpx.Response:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return httpx.post(api, json=body, headers=headers, timeout=REQUEST_DEADLINE_SECONDS)


def new_key() -> str:
    return f"key-{uuid.uuid4()}"


def test_a_first_post_is_created_and_the_same_post_again_replays_it(api: str):
    # Given a new order and a new key
    body, key = order(), new_key()

    # When it is posted, and posted again (a client that timed out and retries)
    first = post(api, body, key)
    again = post(api, body, key)

    # Then the first is 201 with the placed order, the second the identical answer, marked replayed
    assert first.status_code == 201, first.text
    assert first.headers["content-type"] == "application/json"
    assert first.json()["orderId"] == body["orderId"]
    assert "idempotent-replayed" not in first.headers
    assert (again.status_code, again.content) == (201, first.content)
    assert again.headers["idempotent-replayed"] == "true"


def test_the_same_key_with_another_body_is_422(api: str):
    key = new_key()
    assert post(api, order(), key).status_code == 201

    refused = post(api, order(), key)

    assert refused.status_code == 422
    assert refused.headers["content-type"] == PROBLEM
    assert refused.json()["status"] == 422
    assert "another request body" in refused.json()["detail"]


@pytest.mark.parametrize(
    ("key", "detail"),
    [
        (None, "requires the Idempotency-Key header"),
        ("", "requires the Idempotency-Key header"),
        ("not a key!", "must be 1 to 255 characters"),
        ("k" * 256, "must be 1 to 255 characters"),
        ('quote"and\\backslash', "must be 1 to 255 characters"),
    ],
    ids=["missing", "empty", "spaces", "too-long", "json-breaking"],
)
def test_a_missing_or_bad_header_is_400_naming_it(api: str, key: str | None, detail: str):
    answer = post(api, order(), key)
    assert answer.status_code == 400
    assert answer.headers["content-type"] == PROBLEM
    assert detail in answer.json()["detail"]


def test_a_business_error_gets_its_configured_status_and_releases_the_key(api: str):
    # Given an order the payment gateway times out on (serve maps PaymentGatewayTimeout to 504)
    key, failing = new_key(), order(simulate={"error": "PaymentGatewayTimeout"})

    # When it is posted, and the client retries
    first, retried = post(api, failing, key), post(api, failing, key)

    # Then each is 504 naming the error, without a stack trace, and the retry ran again: the key was
    # released (a replay would say Idempotent-Replayed)
    for answer in (first, retried):
        assert answer.status_code == 504
        assert answer.headers["content-type"] == PROBLEM
        assert answer.json()["error"] == "PaymentGatewayTimeout"
        assert "Traceback" not in answer.text
        assert "stackTrace" not in answer.text
        assert "idempotent-replayed" not in answer.headers
    # And another configured error gets its own status (serve maps InvalidOrderError to 422)
    assert post(api, order(amount=-1), new_key()).status_code == 422


def test_an_unmapped_business_error_is_502_and_a_retry_runs_the_step_again(local_cloud: LocalCloud):
    # Given the front door in process, with a table that maps only InvalidOrderError
    service = IdempotentService(local_cloud)
    api = service.deploy_http_api(error_statuses={"InvalidOrderError": 409})
    endpoint = f"{api.start()}/orders"
    try:
        key, failing = new_key(), order(simulate={"error": "PaymentGatewayTimeout"})

        # When a request fails with an error the table does not name, and the client retries it
        answers = [post(endpoint, failing, key) for _ in range(2)]

        # Then both are 502 naming the error, and the business step ran twice: the claim was released
        assert [(a.status_code, a.json()["error"]) for a in answers] == [(502, "PaymentGatewayTimeout")] * 2
        assert service.business_runs == 2
        assert service.records() == []
        # And the error the table names gets its status
        assert post(endpoint, order(amount=-1), new_key()).status_code == 409
    finally:
        api.stop()


def test_thirty_two_concurrent_posts_place_the_order_once(api: str):
    # Given one key and one body whose business step takes a while
    key, body = new_key(), order(simulate={"delaySeconds": 2})

    # When 32 clients post it at once
    with ThreadPoolExecutor(max_workers=32) as pool:
        answers = list(pool.map(lambda _: post(api, body, key), range(32)))

    # Then every answer is the first body (201) or a 409 with a Retry-After in seconds
    created = [a for a in answers if a.status_code == 201]
    conflicts = [a for a in answers if a.status_code == 409]
    assert len(created) + len(conflicts) == 32, [a.status_code for a in answers]
    assert created, "the first post answers 201"
    assert conflicts, "the others arrived while the first was placing the order"
    placed = {a.json()["placedOrderId"] for a in created}
    assert len(placed) == 1, "the order was placed once"
    for conflict in conflicts:
        assert conflict.headers["content-type"] == PROBLEM
        assert 1 <= int(conflict.headers["retry-after"]) <= 300

    # And once the first has finished, retrying each 409 returns the first body
    for _ in conflicts:
        retried = post(api, body, key)
        assert (retried.status_code, retried.json()["placedOrderId"]) == (201, *placed)
        assert retried.headers["idempotent-replayed"] == "true"


def test_curl_gets_the_same_answers(api: str):
    key, body = new_key(), '{"orderId": "o-curl", "amount": 3}'

    def curl() -> tuple[str, str]:
        run = subprocess.run(
            ["curl", "-s", "-i", "-X", "POST", api, "-H", f"Idempotency-Key: {key}",
             "-H", "Content-Type: application/json", "-d", body],
            capture_output=True, text=True, timeout=REQUEST_DEADLINE_SECONDS, check=True, env=clean_environment(),
        )  # fmt: skip
        head, _, payload = run.stdout.replace("\r\n", "\n").partition("\n\n")
        return head, payload

    (first_head, first_body), (again_head, again_body) = curl(), curl()
    assert first_head.startswith("HTTP/1.1 201")
    assert again_head.startswith("HTTP/1.1 201")
    assert "Idempotent-Replayed: true" in again_head
    assert again_body == first_body


def test_util_escape_javascript_is_javas():
    # $util.escapeJavaScript escapes as Java's StringEscapeUtils does, apostrophe included (which is
    # why the request template undoes it before the text becomes JSON)
    escaped = Util().escapeJavaScript("a\"b'c\\d/e\nf\u00e9")
    assert escaped == "a\\\"b\\'c\\\\d\\/e\\nf\\u00e9"
    assert escaped.replace("\\'", "'") == "a\\\"b'c\\\\d\\/e\\nf\\u00e9"
