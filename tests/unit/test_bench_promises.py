"""`make bench` fails when a storm breaks what it reports: once per key, nothing stuck."""

from collections import Counter

from bench.run import Storm, broken_promises


def test_a_storm_that_ran_a_key_twice_or_left_a_record_stuck_is_a_failure():
    held = Storm(64, 8, 1.0, 8, Counter({"Complete": 8}), 0)
    ran_twice = Storm(64, 8, 1.0, 9, Counter({"Complete": 9}), 0)
    stuck = Storm(128, 8, 1.0, 8, Counter({"Complete": 8}), 2)
    assert broken_promises([held]) == []
    assert broken_promises([held, ran_twice, stuck]) == [
        "storm of 512: business step ran 9 times for 8 keys",
        "storm of 1024: 2 records stuck",
    ]
