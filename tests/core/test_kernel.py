"""The kernel: limits that end a run with a named reason, channels, the seeded random source."""

from __future__ import annotations

from sim.core.kernel import (
    END_COMPLETED,
    END_EVENT_LIMIT,
    END_TIME_LIMIT,
    Channel,
    Kernel,
)


def _ticker(env, period=1):
    while True:
        yield env.timeout(period)


def _finite(env, ticks):
    for _ in range(ticks):
        yield env.timeout(1)


def test_run_ends_completed_when_nothing_is_scheduled():
    """A run whose processes all finish ends with the reason 'completed'."""
    kernel = Kernel(seed=1)
    kernel.process(_finite(kernel.env, 3))
    end = kernel.run()
    assert end.reason == END_COMPLETED == "completed"
    assert end.time == 3


def test_run_ends_on_time_limit_with_named_reason():
    """An endless process stops at the simulated-time limit, reason 'time_limit', never past it."""
    kernel = Kernel(seed=1)
    kernel.process(_ticker(kernel.env))
    end = kernel.run(max_time_s=10)
    assert end.reason == END_TIME_LIMIT == "time_limit"
    assert end.time <= 10


def test_run_ends_on_event_limit_with_named_reason():
    """An endless process stops after exactly max_events kernel events, reason 'event_limit'."""
    kernel = Kernel(seed=1)
    kernel.process(_ticker(kernel.env))
    end = kernel.run(max_events=25, max_time_s=1e9)
    assert end.reason == END_EVENT_LIMIT == "event_limit"
    assert end.kernel_events == 25


def test_exception_inside_a_process_propagates():
    """A failing process is never swallowed: its exception leaves Kernel.run."""
    import pytest

    def broken(env):
        yield env.timeout(1)
        raise RuntimeError("planted")

    kernel = Kernel(seed=0)
    kernel.process(broken(kernel.env))
    with pytest.raises(RuntimeError, match="planted"):
        kernel.run()


def _channel_with(*messages) -> Channel:
    channel = Kernel(seed=0).channel("a->b")
    for message in messages:
        channel.send(message)
    return channel


def test_channel_deliver_moves_oldest_match_and_keeps_order():
    """deliver hands the oldest matching message to the inbox and leaves the rest in insertion order."""
    channel = _channel_with(("s1", 1), ("s2", 1), ("s1", 2), ("s3", 1))
    delivered = channel.deliver(lambda m: m[0] == "s1")
    assert delivered == ("s1", 1)
    assert list(channel) == [("s2", 1), ("s1", 2), ("s3", 1)]
    assert channel.inbox.items == [("s1", 1)]


def test_channel_drop_loses_oldest_match_and_keeps_order():
    """drop loses the oldest matching message; nothing reaches the inbox and the rest keep their order."""
    channel = _channel_with(("s1", 1), ("s2", 1), ("s1", 2))
    assert channel.drop(lambda m: m[0] == "s1") == ("s1", 1)
    assert list(channel) == [("s2", 1), ("s1", 2)]
    assert channel.inbox.items == []


def test_channel_duplicate_appends_copy_at_the_end():
    """duplicate appends a copy of the oldest match after every message already in flight."""
    channel = _channel_with(("s1", 1), ("s2", 1))
    copy = channel.duplicate(lambda m: m[0] == "s1", lambda m: (m[0], 99))
    assert copy == ("s1", 99)
    assert list(channel) == [("s1", 1), ("s2", 1), ("s1", 99)]


def test_channel_find_returns_oldest_match_without_moving_it():
    """find returns the oldest matching message and leaves the channel unchanged."""
    channel = _channel_with(("s1", 1), ("s1", 2))
    assert channel.find(lambda m: m[0] == "s1") == ("s1", 1)
    assert len(channel) == 2 and channel.inbox.items == []


def test_channel_operations_without_match_return_none_and_change_nothing():
    """deliver, drop, duplicate and find with no matching message return None and leave the channel as it was."""
    channel = _channel_with(("s1", 1))
    nothing = lambda m: m[0] == "s9"
    assert channel.deliver(nothing) is None
    assert channel.drop(nothing) is None
    assert channel.duplicate(nothing, lambda m: m) is None
    assert channel.find(nothing) is None
    assert list(channel) == [("s1", 1)] and len(channel) == 1


def test_same_seed_gives_same_random_draws():
    """Two kernels with one seed draw the same numbers."""
    draws_a, draws_b = Kernel(seed=42).random, Kernel(seed=42).random
    assert [draws_a.random() for _ in range(20)] == [draws_b.random() for _ in range(20)]


def test_other_seed_gives_other_random_draws():
    """Kernels with different seeds draw different numbers."""
    draws_a, draws_b = Kernel(seed=42).random, Kernel(seed=43).random
    assert [draws_a.random() for _ in range(5)] != [draws_b.random() for _ in range(5)]
