"""bench/speed.py's figures say what the samples say: durations written in whole milliseconds are
averaged over their middle, not rounded to the millisecond a median lands on."""

from __future__ import annotations

import pytest

from bench.speed import typical_ms


def test_whole_millisecond_durations_keep_their_fraction():
    # Given durations of 4 and 5 ms (as Step Functions writes them), a few more of 4 than of 5
    samples = [0.004] * 21 + [0.005] * 19
    # When they are summed up
    typical = typical_ms(samples)
    # Then the figure lies between them, where a median would have said 4 ms
    assert typical == pytest.approx(4.47, abs=0.01)


def test_a_rare_pause_of_the_process_is_left_out():
    # Given forty durations of 5 ms, two of them stretched by a pause of the whole process
    samples = [0.005] * 38 + [0.190, 0.150]
    # When they are summed up, Then the pauses are not in the figure
    assert typical_ms(samples) == pytest.approx(5.0)
