"""The canary's report says which dependency broke what (scripts/canary.py, `make canary`)."""

from __future__ import annotations

from scripts.canary import CANARIES, LOCK, Outcome, pinned, report


def test_the_lock_is_read_as_the_releases_it_pins():
    # Given the dev lock, When its pins are read
    pins = pinned(LOCK.read_text())
    # Then every line that pins a release is there, by its normalized name
    assert {"moto", "aws-lambda-powertools", "pytest-xdist"} <= set(pins)
    assert len(pins) == sum(1 for line in LOCK.read_text().splitlines() if "==" in line and line[0].isalpha())


def test_a_failure_is_reported_with_the_dependency_that_breaks_it_alone():
    # Given the newest moto's environment, where two tests failed and moto alone breaks one of them
    outcome = Outcome(
        CANARIES[1],
        moved={"moto": ("5.2.6", "5.3.0"), "pydantic": ("2.14.4", "2.15.0")},
        failed=["tests/a.py::test_one", "tests/b.py::test_two"],
        culprits={"moto": ["tests/a.py::test_one"]},
    )
    # When it is reported
    text = report(outcome)
    # Then the report names the environment's verdict, what moved, what failed, and the culprit
    assert text.splitlines()[0] == "## newest-moto: FAILED"
    assert "- moto: 5.2.6 -> 5.3.0" in text
    assert "2 tests failed:" in text
    assert "moto 5.3.0 alone breaks 1:\n  tests/a.py::test_one" in text


def test_failures_no_single_dependency_explains_are_called_so():
    outcome = Outcome(CANARIES[0], moved={"pydantic": ("2.14.4", "2.15.0")}, failed=["tests/c.py::test_x"])
    assert "no single dependency breaks them alone" in report(outcome)
    assert report(Outcome(CANARIES[0], moved={}, failed=[])) == "## ranges: passed"
