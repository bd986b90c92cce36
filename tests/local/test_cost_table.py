"""The cost page's table of what each replay option adds (docs/operations/cost.md) is counted, not
typed: each option's flow is built (the standalone flow and an inline step, JSONPath and JSONata),
run once and replayed, and the states each run visits are counted against the same flow without
options (issue 53)."""

from __future__ import annotations

import functools
import json
from typing import Any

from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.wrap import RESULT_STATE, SEPARATOR, wrap_state
from tests import REPOSITORY_ROOT
from tests.local.test_replay_marker import MACHINES, MARKER_PLACE

COST_PAGE = REPOSITORY_ROOT / "docs" / "operations" / "cost.md"
TABLE_MARK = "<!-- the table below is counted by tests/local/test_cost_table.py -->"
DOLLARS_PER_MILLION_TRANSITIONS = 25  # Standard: $0.025 per 1,000 state transitions
ORDER = {"orderId": "o-cost", "amount": 5}
HOOKS = {"JSONPath": {"order.$": "$.output"}, "JSONata": "{% {'order': $output} %}"}
OPTIONS = {  # the table's rows: marker, hook
    "replay marker": (True, False),
    "response hook": (False, True),
    "hook and marker": (True, True),
}
LANGUAGES = ("JSONPath", "JSONata")


def flow_states(
    cloud: LocalCloud, language: str, inline: bool, marker: bool, hook: bool
) -> tuple[list[str], ...]:
    """The flow's states a first run and a replay visit (an inline step's, by their names in the flow)."""
    if not inline:
        service = IdempotentService(
            cloud,
            query_language=language,
            replay_marker="idempotency" if marker else None,
            replay_hook=HOOKS[language] if hook else None,
        )
        return tuple(service.run(ORDER).states for _ in range(2))
    place = cloud.add_function("place-order", lambda event, context: place_order(event))
    emails = cloud.add_function("send-email", lambda event, context: {"sent": True})
    options: dict[str, Any] = {"replay_marker": MARKER_PLACE[language]} if marker else {}
    if hook:
        options["replay_hook"] = HOOKS[language]
    machine = MACHINES[language]()
    if not marker:  # the user's Choice reads the marker
        machine["States"]["PlaceOrder"]["Next"] = "Done"
    definition = wrap_state(
        json.dumps(machine), "PlaceOrder", key_prefix="orders", event_key_jmespath="orderId", **options
    )
    substitutions = {
        **cloud.idempotency_substitutions(),
        "PlaceOrderFunctionArn": place.arn,
        "SendEmailFunctionArn": emails.arn,
    }
    arn = cloud.create_state_machine("shop", definition, substitutions)
    prefix = f"PlaceOrder{SEPARATOR}"
    return tuple(
        [
            s.removeprefix(prefix)
            for s in cloud.run(arn, ORDER).states
            if s.startswith(prefix) and not s.endswith(RESULT_STATE)
        ]
        for _ in range(2)
    )


@functools.cache
def visited(language: str, inline: bool, marker: bool, hook: bool) -> tuple[list[str], ...]:
    with LocalCloud() as cloud:
        return flow_states(cloud, language, inline, marker, hook)


def added(language: str, marker: bool, hook: bool) -> list[list[str]]:
    """The states an option adds to a first run and to a replay, the same in both forms of the flow."""
    by_form = []
    for inline in (False, True):
        plain = visited(language, inline, False, False)
        with_options = visited(language, inline, marker, hook)
        assert all(set(p) <= set(o) for p, o in zip(plain, with_options, strict=True))
        by_form.append([[s for s in o if s not in p] for p, o in zip(plain, with_options, strict=True)])
    standalone, inline_step = by_form
    assert standalone == inline_step
    return standalone


def cell(states: list[str], per: str) -> str:
    if not states:
        return "+ 0 states"
    dollars = len(states) * DOLLARS_PER_MILLION_TRANSITIONS
    noun = "state" if len(states) == 1 else "states"
    return f"+ {len(states)} {noun} ({', '.join(states)}): + ${dollars} per million {per}"


def counted_table() -> str:
    rows = ["| option | first run | replay |", "|---|---|---|"]
    for option, (marker, hook) in OPTIONS.items():
        for language in LANGUAGES:
            first, replay = added(language, marker, hook)
            rows.append(f"| {option}, {language} | {cell(first, 'first runs')} | {cell(replay, 'replays')} |")
    return "\n".join(rows)


def test_the_cost_page_shows_the_states_each_replay_option_adds():
    # Given each option's flow, counted (When a first run and a replay run)
    expected = counted_table()
    # Then the page's table is that count
    page = COST_PAGE.read_text(encoding="utf-8")
    start = page.index(TABLE_MARK) + len(TABLE_MARK) + 1
    shown = page[start : page.index("\n\n", start)]
    assert shown == expected, f"docs/operations/cost.md should show:\n{expected}"
