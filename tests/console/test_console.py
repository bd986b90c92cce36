"""The console in a real browser, over the demo's scenarios run on a served engine."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from urllib.parse import quote

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.support.select import Select

from tests.console.conftest import Page
from tests.console.showcase import HOSTILE_NAME, Showcase
from tests.powertools import powertools_store

pytestmark = pytest.mark.browser
PAGE_SIZE = 50  # the console's executions page
ONE_PASS = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}


def execution_route(arn: str) -> str:
    return f"#/execution?arn={quote(arn, safe='')}"


def test_state_machines_are_listed_with_type_and_query_language(page: Page):
    # When the console opens at the endpoint's root
    page.open()

    # Then every deployed machine is listed with its type and query language
    rows = {row.get_attribute("data-machine"): row.text for row in page.all("#machines tbody tr")}
    assert "Standard JSONPath" in rows["idempotency"]
    assert "Express JSONPath" in rows["order-pipeline-inline"]
    assert page.error_banner() == ""


def test_the_workflow_s_outcomes_are_counted_per_key_prefix(page: Page, served: Showcase):
    # When the demo's workflow opens
    page.open(f"#/machine?arn={quote(served.service.state_machine_arn, safe='')}")

    # Then its outcomes are there, as its metric filters counted the demo's scenarios
    row = page.one("#outcomes tbody tr")
    cells = {
        cell.get_attribute("data-outcome"): cell.text
        for cell in row.find_elements("css selector", "td[data-outcome]")
    }
    assert row.find_element("css selector", "td").text == served.service.settings.key_prefix
    assert cells == {
        "FirstRuns": "3",
        "Replays": "1",
        "InProgressRefusals": "1",
        "ReleasedFailures": "2",
        "LeaseTakeovers": "0",
        "PersistenceErrors": "0",
        "ResultsTooLarge": "0",
    }
    assert cells == {name: str(count) for name, count in served.service.outcome_counts().items()}
    assert page.error_banner() == ""


def test_the_replayed_execution_is_highlighted_up_to_replay(page: Page, served: Showcase):
    # Given the demo's duplicate, answered from the stored result
    duplicate = served.row("duplicate (client resend)").result

    # When its page opens
    page.open(execution_route(duplicate.arn))

    # Then the path it took is highlighted, ending at Replay, and no state is marked failed
    visited = {node.get_attribute("data-state") for node in page.all("svg.graph g.node.visited")}
    assert visited == set(duplicate.states)
    assert visited == {"Claim", "Read", "RouteByRecord", "Replay"}  # the provable key: no ComputeKey
    assert "Execute" not in visited
    assert page.all("svg.graph g.node.failed") == []
    assert [node.get_attribute("data-state") for node in page.all("svg.graph g.node.caught")] == ["Claim"]
    taken = {
        (edge.get_attribute("data-from"), edge.get_attribute("data-to"))
        for edge in page.all("svg.graph g.edge.taken")
    }
    assert ("RouteByRecord", "Replay") in taken
    states = [row.get_attribute("data-state") for row in page.all("#steps tbody tr")]
    assert states == duplicate.states
    assert states[-1] == "Replay"


def test_the_failed_order_is_marked_at_the_business_step_with_its_error(page: Page, served: Showcase):
    # Given the demo's order whose payment gateway timed out
    failed = served.row("failing order (released)").result

    # When its page opens
    page.open(execution_route(failed.arn))

    # Then the business step carries the error it caught, and the execution's error is shown
    business = page.one('svg.graph g.node.caught[data-state="Execute"]')
    assert business.is_displayed()
    step = page.one('#steps tr[data-state="Execute"]')
    assert step.get_attribute("data-status") == "caught"
    assert "PaymentGatewayTimeout" in step.text
    assert page.one("#execution-error .error-name").text == "PaymentGatewayTimeout"
    assert len(page.all("svg.graph g.node.failed")) == 1

    # And clicking the business step shows its input and its error
    business.click()
    detail = page.one("#step-detail .step")
    assert "PaymentGatewayTimeout" in detail.text
    assert "o-1003" in detail.text


def test_a_function_s_errors_are_listed_from_its_log_group(page: Page, served: Showcase):
    # Given the demo's failing orders: its business function raised twice (a state machine invoked it)
    function = served.service.business_function

    # When the function errors open
    page.open("#/functions")

    # Then each error is listed, newest first, in the runtime's words
    page.one(f'#function-error-list tr[data-function="{function}"]')
    rows = page.all(f'#function-error-list tr[data-function="{function}"]')
    headlines = [row.find_element("css selector", "summary").text for row in rows]
    assert [headline.split(":")[0] for headline in headlines] == [
        "InvalidOrderError",
        "PaymentGatewayTimeout",
    ]
    # And a click shows the whole record, its traceback too
    rows[0].find_element("css selector", "summary").click()
    assert "Traceback (most recent call last):" in rows[0].find_element("css selector", "pre").text
    assert page.error_banner() == ""


def test_a_function_s_newest_errors_are_listed_however_many_it_had(page: Page, served: Showcase):
    # Given a function that failed 51 times (each error names its call), more than the view keeps of
    # one function, after the demo's business function failed twice
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("app.py", "def handler(event, context):\n    raise ValueError(event['n'])\n")
    role = served.cloud.client("iam").create_role(RoleName="noisy", AssumeRolePolicyDocument="{}")["Role"]
    lambdas = served.cloud.client("lambda")
    lambdas.create_function(
        FunctionName="noisy",
        Runtime="python3.13",
        Role=role["Arn"],
        Handler="app.handler",
        Code={"ZipFile": archive.getvalue()},
    )
    for call in range(1, 52):
        assert lambdas.invoke(FunctionName="noisy", Payload=json.dumps({"n": call}))["FunctionError"]

    # When the function errors open
    page.open("#/functions")

    # Then its newest 50 are listed (the first call's is gone), and the other functions' errors too,
    # older as they are
    page.one('#function-error-list tr[data-function="noisy"]')
    rows = page.all('#function-error-list tr[data-function="noisy"]')
    headlines = {row.find_element("css selector", "summary").text for row in rows}
    assert headlines == {f"ValueError: {call}" for call in range(2, 52)}
    business = page.all(f'#function-error-list tr[data-function="{served.service.business_function}"]')
    assert len(business) == 2


def test_executions_are_filtered_by_status_newest_first(page: Page, served: Showcase):
    # Given the demo's executions, some failed
    machine = served.service.state_machine_arn
    failed = served.cloud.sfn.list_executions(stateMachineArn=machine, statusFilter="FAILED")["executions"]
    assert failed

    # When the view is filtered on FAILED
    page.open(f"#/machine?arn={quote(machine, safe='')}")
    Select(page.one("#status-filter")).select_by_value("FAILED")
    page.wait_for(lambda: "status=FAILED" in page.driver.current_url)
    page.wait_for(lambda: page.driver.find_element("id", "main").get_attribute("aria-busy") == "false")

    # Then only the failed ones are listed, newest first
    rows = page.all("#execution-list tbody tr")
    assert {row.get_attribute("data-status") for row in rows} == {"FAILED"}
    assert [row.get_attribute("data-name") for row in rows] == [e["name"] for e in failed]


def test_many_executions_are_paged(page: Page, served: Showcase):
    # Given a machine with more executions than one page holds
    machine = served.cloud.create_state_machine("many-runs", json.dumps(ONE_PASS), {})
    names = [served.cloud.run(machine, {"n": n}).arn.rsplit(":", 1)[1] for n in range(PAGE_SIZE + 10)]

    # When its view opens, and then the older page
    page.open(f"#/machine?arn={quote(machine, safe='')}")
    first = [row.get_attribute("data-name") for row in page.all("#execution-list tbody tr")]
    page.one("#older").click()
    page.wait_for(lambda: page.all("#newer"))
    second = [row.get_attribute("data-name") for row in page.all("#execution-list tbody tr")]

    # Then the pages hold every execution once, newest first
    assert len(first) == PAGE_SIZE
    assert first + second == list(reversed(names))


def test_the_executions_view_follows_a_running_execution_to_its_end(page: Page, served: Showcase):
    # Given an order whose business step takes a while, and the machine's executions view open
    arn = served.service.start({"orderId": "o-slow", "amount": 1, "simulate": {"delaySeconds": 2}})
    name = arn.rsplit(":", 1)[1]
    page.open(f"#/machine?arn={quote(served.service.state_machine_arn, safe='')}")

    def row_status() -> str | None:
        # Read in the page: the view redraws its rows, so a row found earlier goes stale.
        status: str | None = page.driver.execute_script(
            "return document.querySelector(`#execution-list tr[data-name='${arguments[0]}']`)?.dataset.status",
            name,
        )
        return status

    # Then the view shows it running, and then, without a reload, succeeded
    assert page.wait_for(lambda: row_status() == "RUNNING")
    assert page.wait_for(lambda: row_status() == "SUCCEEDED")
    assert served.cloud.wait(arn).status == "SUCCEEDED"


def test_an_express_execution_is_read_back_from_its_logs(page: Page, served: Showcase):
    # Given an Express run, which has no history API, on a machine logging to CloudWatch Logs
    assert served.express.status == "SUCCEEDED"

    # When its machine's page opens, its execution is listed from the log group, and opened
    page.open(f"#/machine?arn={quote(served.express_machine, safe='')}")
    row = page.one("#execution-list tbody tr")
    assert row.get_attribute("data-status") == "SUCCEEDED"
    row.find_element("css selector", "a").click()

    # Then the path it took is the one the engine recorded, inline idempotent step included
    page.wait_for(lambda: page.all("#steps tbody tr"))
    states = [row.get_attribute("data-state") for row in page.all("#steps tbody tr")]
    assert states == served.express.states
    visited = {node.get_attribute("data-state") for node in page.all("svg.graph g.node.visited")}
    assert visited == set(served.express.states)
    assert "PlaceOrder.Complete" in visited


def test_records_are_listed_with_status_owner_and_countdowns(page: Page, served: Showcase):
    # When the records view opens on the service's table
    page.open(f"#/records?table={served.service.table_name}")

    # Then every record of the demo is there with its status, and its owner links to its execution
    rows = page.all("#records tbody tr")
    expected = {record["id"]: record["status"] for record in served.service.records()}
    assert {row.get_attribute("data-key"): row.get_attribute("data-status") for row in rows} == expected
    assert set(expected.values()) == {"COMPLETED"}
    first = served.row("first order").result
    owner = page.one(f'#records a[href="{execution_route(first.arn)}"]')
    assert owner.text == first.arn.split(":")[-1]
    expiries = page.all("#records td.countdown")
    assert len(expiries) == len(expected)  # completed records: an expiry each, and no lease shown
    assert all(cell.text.startswith("in ") and cell.text.endswith("min") for cell in expiries)


def test_a_record_powertools_wrote_is_shown_in_progress_without_an_owner(page: Page, served: Showcase):
    # Given a claim Powertools' own persistence layer took, with a 30 s lease
    order = {"orderId": "o-powertools", "amount": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Powertools warns about the Lambda context it has not got
        powertools_store(served.service).save_inprogress(data=order, remaining_time_in_millis=30_000)
    key = served.service.key_for(order)

    # When the records view opens
    page.open(f"#/records?table={served.service.table_name}")

    # Then it is in progress, owned by no execution, and its lease counts down
    row = page.one(f'#records tr[data-key="{key}"]')
    assert row.get_attribute("data-status") == "INPROGRESS"
    cells = row.find_elements("css selector", "td")
    assert cells[2].text == "—"
    assert cells[3].text.startswith("in ")
    assert cells[3].text.endswith(" s")


def test_an_execution_started_from_the_form_runs(page: Page, served: Showcase):
    # Given the idempotency machine's page, with actions on
    page.open(f"#/machine?arn={quote(served.service.state_machine_arn, safe='')}")

    # When input that is not JSON is submitted, it is refused before anything is sent
    before = len(served.cloud.executions(served.service.state_machine_arn))
    page.one("#start-input").clear()
    page.one("#start-input").send_keys("{not json")
    page.one("#start-form button[type=submit]").click()
    assert "not JSON" in page.one("#start-error").text
    assert len(served.cloud.executions(served.service.state_machine_arn)) == before

    # When a new order is submitted
    page.one("#start-input").clear()
    page.one("#start-input").send_keys(json.dumps({"orderId": "o-form", "amount": 7}))
    page.one("#start-form button[type=submit]").click()

    # Then the console moves to the new execution, which placed the order
    page.wait_for(lambda: "execution?" in page.driver.current_url)
    page.wait_for(lambda: page.all('#steps tr[data-state="Complete"]'))
    assert served.service.record_for({"orderId": "o-form", "amount": 7})["status"]["S"] == "COMPLETED"
    assert len(served.cloud.executions(served.service.state_machine_arn)) == before + 1


def test_a_record_is_forgotten_only_after_confirmation(page: Page, served: Showcase):
    # Given a record of the demo
    first = {"orderId": "o-1001", "amount": 42.5}
    key = served.service.key_for(first)
    page.open(f"#/records?table={served.service.table_name}")
    row = page.one(f'#records tr[data-key="{key}"]')

    # When Forget is pressed and then cancelled, the record stays
    row.find_element("css selector", ".forget-ask").click()
    row.find_element("css selector", ".forget-cancel").click()
    assert served.service.record(key) is not None

    # When Forget is pressed and confirmed, the record is gone
    row.find_element("css selector", ".forget-ask").click()
    row.find_element("css selector", ".forget-confirm").click()
    page.wait_for(lambda: not page.all(f'#records tr[data-key="{key}"]'))
    assert served.service.record(key) is None


def test_hostile_state_names_and_data_render_as_text(page: Page, served: Showcase):
    # When the execution of a machine whose states and data hold HTML opens
    page.open(execution_route(served.hostile.arn))

    # Then the names and data show as written, and none of it ran or became an element
    node = page.one("svg.graph g.node.visited")
    assert node.get_attribute("data-state") == HOSTILE_NAME
    assert HOSTILE_NAME in node.text
    assert HOSTILE_NAME in page.one("#steps").text
    assert "<script>alert('input')</script>" in page.one("#steps").text
    assert "<script>alert('cause')</script>" in page.one("#execution-error").get_attribute("textContent")
    assert page.all("main img, main b, main i, main script") == []
    with pytest.raises(NoAlertPresentException):
        page.driver.switch_to.alert.text  # noqa: B018  (reading it is what raises)
