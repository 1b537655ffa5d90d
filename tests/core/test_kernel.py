"""The kernel: limits that end a run with a named reason, mailboxes, the seeded random source."""

from __future__ import annotations

from sim.core.kernel import (
    END_COMPLETED,
    END_EVENT_LIMIT,
    END_TIME_LIMIT,
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


def test_mailbox_hands_items_over_in_order_at_the_same_time():
    """A reader waiting on a mailbox gets each item as it is put, in order, with no time passing."""
    kernel = Kernel(seed=0)
    box, got = kernel.mailbox(), []

    def reader():
        while True:
            item = yield box.get()
            got.append((kernel.now, item))

    def writer():
        box.put("a")
        box.put("b")
        yield kernel.env.timeout(3)
        box.put("c")

    kernel.process(reader())
    kernel.process(writer())
    kernel.run()
    assert got == [(0, "a"), (0, "b"), (3, "c")]


def test_same_seed_gives_same_random_draws():
    """Two kernels with one seed draw the same numbers."""
    draws_a, draws_b = Kernel(seed=42).random, Kernel(seed=42).random
    assert [draws_a.random() for _ in range(20)] == [draws_b.random() for _ in range(20)]


def test_other_seed_gives_other_random_draws():
    """Kernels with different seeds draw different numbers."""
    draws_a, draws_b = Kernel(seed=42).random, Kernel(seed=43).random
    assert [draws_a.random() for _ in range(5)] != [draws_b.random() for _ in range(5)]
