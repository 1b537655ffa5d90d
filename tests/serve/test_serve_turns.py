"""Searches take turns: with more deep searches at once than the server runs and queues, the rest are refused
at once with one line (503, Retry-After), every search it accepts answers within its time limit (the wait
included), and the pages keep answering meanwhile.  A real server on 127.0.0.1, a bounded number of
requests."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from sim.app.serving import explorer_for  # noqa: E402
from sim.webapp import actions, turns  # noqa: E402
from sim.webapp.server import Running  # noqa: E402

#: Concurrent deep searches asked for (more than the server runs and queues).
SEARCHES = 10
#: Seconds an answer may take beyond its bound (rendering, a loaded machine).
GRACE = 5.0


def _get(url: str) -> tuple[int, float, str, str | None]:
    """(status, seconds, body, Retry-After) of a GET."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=120) as answer:
            return answer.status, time.monotonic() - started, answer.read().decode(), None
    except urllib.error.HTTPError as error:
        return error.code, time.monotonic() - started, error.read().decode(), error.headers.get("Retry-After")


@pytest.mark.slow  # seconds of deep searches
def test_searches_beyond_the_queue_are_refused_and_the_rest_keep_their_bound(monkeypatch):
    monkeypatch.setattr(actions, "SEARCH_SECONDS", 4.0)
    monkeypatch.setattr(turns, "SEARCH_WAIT_SECONDS", 2.0)
    app = Running(explorer_for(workload="tiny"), None, 0)
    searches: list[tuple[int, float, str, str | None]] = []
    views: list[tuple[int, float, str, str | None]] = []
    try:
        threads = [threading.Thread(target=lambda: searches.append(_get(app.url + "search?depth=12")))
                   for _ in range(SEARCHES)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        while any(thread.is_alive() for thread in threads):
            views.append(_get(app.url + "view?e=plan"))
        for thread in threads:
            thread.join()
    finally:
        app.stop()
    statuses = sorted(status for status, *_ in searches)
    assert len(searches) == SEARCHES and set(statuses) <= {200, 503}, statuses
    running, waiting = turns.SEARCHES_RUNNING, turns.SEARCHES_WAITING
    assert statuses.count(200) >= running and statuses.count(503) >= SEARCHES - running - waiting, statuses
    for status, seconds, body, retry in searches:
        if status == 200:
            assert seconds <= actions.SEARCH_SECONDS + GRACE, seconds
            assert "waiting for a turn included" in body
        else:
            assert "the server is busy" in body and retry and "Traceback" not in body
            assert seconds <= turns.SEARCH_WAIT_SECONDS + GRACE, seconds
    assert views and all(status == 200 for status, *_ in views)
    assert max(seconds for _, seconds, *_ in views) <= GRACE, [round(v[1], 1) for v in views]
