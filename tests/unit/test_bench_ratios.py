"""`make bench`'s latency ratios divide trimmed means of whole milliseconds, and say so when the
divisor is under a millisecond instead of failing."""

import statistics

from bench.run import render, trimmed_mean

VARIANTS = (
    "(a) business step alone",
    "(b) idempotent state machine",
    "(c) Powertools @idempotent_function",
    "(b) replay",
    "(d) the same flow in JSONata",
    "(d) replay, JSONata",
)


def overhead_line(latency: dict[str, list[float]]) -> str:
    report = render([], [], [], latency, {}, [], 1.0)
    return next(line for line in report.splitlines() if line.startswith("Overhead"))


def test_a_trimmed_mean_keeps_the_fraction_a_median_of_whole_milliseconds_loses():
    # Given 10 samples: 6 of 0 ms, 3 of 1 ms, and one pause of the whole process
    samples = [0.0] * 6 + [1.0] * 3 + [50.0]
    # Then the median says 0, the trimmed mean (the pause left out) 0.375
    assert statistics.median(samples) == 0.0
    assert trimmed_mean(samples) == 0.375


def test_a_step_under_a_millisecond_is_reported_not_divided_by():
    # Given a business step that took 0 ms (Step Functions' whole milliseconds) in every sample
    latency = {variant: [5.0] * 10 for variant in VARIANTS} | {VARIANTS[0]: [0.0] * 10}
    # When the report is written, Then it says so where it divided by zero before
    line = overhead_line(latency)
    assert line.startswith("Overhead (b)/(a) = not measured (the divisor took under a millisecond")
    assert "(b)/(c) = **1.00x**" in line


def test_the_ratios_are_judged_against_their_targets():
    latency = {variant: [4.0] * 10 for variant in VARIANTS} | {VARIANTS[0]: [1.0] * 10}
    line = overhead_line(latency)
    assert "(b)/(a) = **4.00x** (target at most 3x: MISSED)" in line
    assert "JSONata (d)/(b) = **1.00x** (target at most 1.5x: met) (trimmed means)" in line
