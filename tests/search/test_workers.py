"""sim.search.workers: worker processes that map in task order and can always be stopped -- a task's error is
raised here with its worker's traceback, a dead worker is an error, and stopping never waits on a lock a
killed worker held (the hang of multiprocessing.Pool this replaces)."""

from __future__ import annotations

import os
import pickle
import threading
import time

import pytest

from sim.search.workers import WorkerDied, Workers

_SETTING: dict[str, int] = {}


def _square(n: int) -> int:
    return n * n


def _set(value: int) -> None:
    _SETTING["value"] = value


def _plus_setting(n: int) -> int:
    return n + _SETTING["value"]


def _fail_at_seven(n: int) -> int:
    if n == 7:
        raise ValueError("seven is refused")
    return n


def _die_at_three(n: int) -> int:
    if n == 3:
        os._exit(9)
    return n


def _refuse(value: int) -> None:
    raise KeyError(f"no setting {value}")


def _unpicklable(n: int) -> object:
    return threading.Lock()


def _slow_first_then_fail(n: int) -> int:
    if n == 0:
        time.sleep(0.3)
    if n == 1:
        raise ValueError("the second task fails")
    return n


def _exit_now() -> None:
    os._exit(9)


class _Unpicklable(Exception):
    def __init__(self):
        super().__init__("an error holding a lock")
        self.lock = threading.Lock()


def _raise_unpicklable(n: int) -> int:
    raise _Unpicklable()


@pytest.mark.parametrize("count, chunksize", [(1, 1), (2, 1), (3, 4), (2, 50)])
def test_results_come_in_task_order_whatever_the_workers(count, chunksize):
    with Workers(count) as pool:
        assert list(pool.imap(_square, range(40), chunksize=chunksize)) == [n * n for n in range(40)]
        assert list(pool.imap(_square, [])) == []
        assert list(pool.imap(_square, range(3))) == [0, 1, 4]  # a finished map leaves the workers for the next


def _doubled(blob: bytes) -> bytes:
    return blob * 2


def test_tasks_and_results_larger_than_a_pipe_never_deadlock():
    """A task and a result of a megabyte each (a pipe holds 64 KiB): a task is sent only to a worker that is
    reading, so neither side waits on the other (with two tasks in flight per worker this hung)."""
    blobs = [bytes([n]) * 1_000_000 for n in range(8)]
    with Workers(2) as pool:
        assert list(pool.imap(_doubled, blobs)) == [blob * 2 for blob in blobs]


def test_each_worker_runs_the_initializer():
    with Workers(2, _set, (100,)) as pool:
        assert list(pool.imap(_plus_setting, range(10))) == [n + 100 for n in range(10)]


def test_a_task_that_raises_is_raised_here_with_its_workers_traceback():
    with Workers(2) as pool, pytest.raises(ValueError, match="seven is refused") as raised:
        list(pool.imap(_fail_at_seven, range(30)))
    remote = raised.value.__cause__
    assert type(remote).__name__ == "RemoteTraceback" and "_fail_at_seven" in remote.tb  # read by sim.cli.blame


def test_an_error_is_raised_where_its_results_would_come_after_every_earlier_result():
    """As ``multiprocessing.Pool.imap``: the first task's result (slower) comes first, then the second's error,
    whichever finished first -- the same on every run."""
    got = []
    with Workers(2) as pool, pytest.raises(ValueError, match="the second task fails"):
        for n in pool.imap(_slow_first_then_fail, range(6)):
            got.append(n)
    assert got == [0]


def test_an_error_that_cannot_be_pickled_keeps_its_name_text_and_traceback():
    with Workers(1) as pool, pytest.raises(RuntimeError, match="_Unpicklable: an error holding a lock") as raised:
        list(pool.imap(_raise_unpicklable, range(2)))
    assert "_raise_unpicklable" in raised.value.__cause__.tb


def test_a_worker_dead_before_its_first_task_is_an_error_not_a_broken_pipe():
    with Workers(2, _exit_now) as pool:
        time.sleep(0.3)  # both workers are gone before a task is sent
        with pytest.raises(WorkerDied, match="exit code 9"):
            list(pool.imap(_square, range(4)))


def test_a_map_after_the_workers_stopped_says_so():
    pool = Workers(2)
    pool.stop()
    with pytest.raises(WorkerDied, match="stopped"):
        list(pool.imap(_square, range(2)))


def test_an_initializer_that_raises_is_raised_at_the_first_task():
    with Workers(2, _refuse, (5,)) as pool, pytest.raises(KeyError, match="no setting 5"):
        list(pool.imap(_square, range(4)))


def test_a_result_that_cannot_be_pickled_is_an_error_not_a_dead_worker():
    with Workers(1) as pool, pytest.raises((TypeError, pickle.PicklingError)):
        list(pool.imap(_unpicklable, range(2)))


def test_a_worker_that_dies_is_an_error_not_a_wait():
    with Workers(2) as pool:
        with pytest.raises(WorkerDied, match="exit code 9"):
            list(pool.imap(_die_at_three, range(10)))
        with pytest.raises(WorkerDied):
            list(pool.imap(_square, range(2)))


def test_a_map_left_unfinished_stops_the_workers_and_a_later_map_says_so():
    with Workers(2) as pool:
        processes = list(pool._processes)
        for n in pool.imap(_square, range(1000)):
            if n > 10:
                break
        assert not any(process.is_alive() for process in processes)
        with pytest.raises(WorkerDied, match="stopped with tasks in flight"):
            list(pool.imap(_square, range(2)))


def test_stopping_after_an_error_never_hangs():
    """The case multiprocessing.Pool hung in (about one stop in forty, loaded): a task raises while the other
    worker is busy sending results.  Many stops in a row; the suite's per-test timeout fails a hang."""
    for _ in range(40):
        with Workers(2) as pool, pytest.raises(ValueError):
            list(pool.imap(_fail_at_seven, range(400)))


def test_a_dead_worker_ends_the_command_in_one_line_not_a_bug_report(cli, tmp_path):
    """A sweep whose worker process is stopped from outside (here it exits; the system kills one when memory
    runs out): exit 3 and one line saying what happened and what to do, no traceback, no "please report"."""
    prelude = ("import os, sim.search.sweep as sweep\n"
               "def _dies(task):\n    os._exit(9)\n"
               "sweep._run_chunk = _dies")
    done = cli("fuzz", "--workload", "tiny", "-p", "none", "--seeds", "1000", "--workers", "2", "--out", tmp_path,
               prelude=prelude)
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("fencesim:")]
    assert any("a worker process ended (exit code 9) without answering its task" in line
               and "fewer --workers" in line for line in lines), done.stderr
    assert "Traceback" not in done.stderr and "please report" not in done.stderr
