"""A web page on another origin, or on a host name that points here, gets nothing from `serve`
(issue 27); the console on its own origin keeps working (the rest of tests/console)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from selenium import webdriver

from tests.console.conftest import PAGE_DEADLINE_SECONDS, chromium, static_site
from tests.console.showcase import Showcase

pytestmark = pytest.mark.browser
REBOUND_HOST = "rebound.example"
# The page's script: each call as the console makes it, answered with what the page could read.
CALL_ENDPOINT = """
const [endpoint, target, service, body, done] = arguments;
fetch(endpoint, {
  method: "POST",
  headers: {
    "Content-Type": "application/x-amz-json-1.0",
    "X-Amz-Target": target,
    Authorization: `AWS4-HMAC-SHA256 Credential=page/20261201/us-east-1/${service}/aws4_request, SignedHeaders=host, Signature=x`,
  },
  body: JSON.stringify(body),
}).then(
  async (response) => done({read: true, status: response.status, text: await response.text()}),
  (error) => done({read: false, error: String(error)}),
);
"""
# A request a page can send without a preflight (a "simple" one): it reaches the server, and the
# page cannot read the answer; only the server can refuse to act on it.
SEND_BLIND = """
const [endpoint, body, done] = arguments;
fetch(endpoint, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body})
  .then(() => done("sent"), (error) => done(String(error)));
"""


@pytest.fixture(scope="module")
def foreign_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A blank page on another loopback port: another origin, as any web site is."""
    folder = tmp_path_factory.mktemp("a-web-site")
    (folder / "index.html").write_text(
        "<!doctype html><title>a web site</title><p>nothing to see", encoding="utf-8"
    )
    with static_site(folder) as url:
        yield f"{url}/"


def run_in_page(driver: webdriver.Chrome, script: str, *arguments: Any) -> Any:
    driver.set_script_timeout(PAGE_DEADLINE_SECONDS)
    return driver.execute_async_script(script, *arguments)


def test_a_page_on_another_origin_reads_nothing_and_starts_nothing(
    browser: webdriver.Chrome, served: Showcase, foreign_page: str
):
    # Given a web page on another loopback port, open in the user's browser
    machine = served.service.state_machine_arn
    before = served.cloud.executions(machine)
    browser.get(foreign_page)

    # When it lists the state machines and starts an execution, as the console would
    listed = run_in_page(
        browser, CALL_ENDPOINT, served.cloud.endpoint_url, "AWSStepFunctions.ListStateMachines", "states", {}
    )
    started = run_in_page(
        browser,
        CALL_ENDPOINT,
        served.cloud.endpoint_url,
        "AWSStepFunctions.StartExecution",
        "states",
        {"stateMachineArn": machine, "input": json.dumps({"orderId": "o-foreign"})},
    )
    blind = run_in_page(
        browser,
        SEND_BLIND,
        served.cloud.endpoint_url,
        json.dumps({"stateMachineArn": machine, "input": json.dumps({"orderId": "o-blind"})}),
    )

    # Then the page could read no answer, and no execution was started
    assert listed["read"] is False, listed
    assert started["read"] is False, started
    assert blind == "sent"  # the browser sent it; the server refused it (checked in tests/local)
    assert served.cloud.executions(machine) == before


def test_a_page_cannot_forget_a_record(browser: webdriver.Chrome, served: Showcase, foreign_page: str):
    # Given a record, and a page on another origin
    key = served.service.key_for({"orderId": "o-1002", "amount": 10})
    assert served.service.record(key) is not None
    browser.get(foreign_page)

    # When the page calls DeleteItem as the console's Forget does
    deleted = run_in_page(
        browser,
        CALL_ENDPOINT,
        served.cloud.endpoint_url,
        "DynamoDB_20120810.DeleteItem",
        "dynamodb",
        {"TableName": served.service.table_name, "Key": {"id": {"S": key}}},
    )

    # Then the record is still there
    assert deleted["read"] is False, deleted
    assert served.service.record(key) is not None


@pytest.fixture(scope="module")
def rebinding_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """A browser for which the attacker's host name resolves to this machine (DNS rebinding)."""
    profile = tmp_path_factory.mktemp("rebinding-browser")
    driver = chromium(str(profile), f"--host-resolver-rules=MAP {REBOUND_HOST} 127.0.0.1")
    try:
        yield driver
    finally:
        driver.quit()


def test_a_rebound_host_name_gets_neither_the_console_nor_the_apis(
    rebinding_browser: webdriver.Chrome, served: Showcase
):
    # Given the endpoint reached under the attacker's host name: same-origin to the page
    port = str(served.cloud.endpoint_url).rsplit(":", 1)[1]
    rebound = f"http://{REBOUND_HOST}:{port}"

    # When the browser opens the console there, and a script of that origin lists the state machines
    rebinding_browser.get(f"{rebound}/")
    page_text = rebinding_browser.find_element("tag name", "body").text
    listed = run_in_page(
        rebinding_browser, CALL_ENDPOINT, rebound, "AWSStepFunctions.ListStateMachines", "states", {}
    )

    # Then both answers are the refusal: the script reads 403 and the error, no state machine
    assert json.loads(page_text)["__type"] == "AccessDeniedException"
    assert listed["read"] is True
    assert listed["status"] == 403
    assert "stateMachineArn" not in listed["text"]
    assert f"--allow-host {REBOUND_HOST}" in json.loads(listed["text"])["message"]
