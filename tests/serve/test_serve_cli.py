"""``fencesim serve`` on the command line: it listens on 127.0.0.1 only, prints its URL, answers, and stops
on Ctrl-C with exit 0; bad input is one line and exit 4 before anything listens."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from sim.webapp.server import LOOPBACK, bind  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LOST_UPDATE = REPO / "scenarios" / "regressions" / "seed_fuzz_none_lost_update.toml"


def test_the_socket_is_bound_to_loopback_only():
    sock = bind(0)
    try:
        host, port = sock.getsockname()
        assert host == LOOPBACK == "127.0.0.1" and port > 0
        others = {address for *_, (address, *_) in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
        for address in sorted(others - {"127.0.0.1"}):
            if address.startswith("127."):
                continue
            with pytest.raises(OSError):  # another address of this machine: nothing listens there
                socket.create_connection((address, port), timeout=2).close()
    finally:
        sock.close()


@pytest.mark.slow  # a subprocess each
@pytest.mark.parametrize("args, words", [
    (["--port", "70000"], "'--port': 70,000 is out of range: from 0 to 65,535"),
    (["--scenario", "no/such/file.toml"], "no/such/file.toml"),
    (["--design", "scenarios/designs/three-files.toml", "--workload", "tiny"], "not both"),
    (["--review", "scenarios/seed"], "no counterexamples/*.toml"),
    (["--workload", "tiny", "--protocol", "fence=sideways"], "sideways"),
    (["--host", "0.0.0.0"], "No such option"),
    (["--out", "README.md"], "--out"),
])
def test_bad_input_is_one_line_and_exit_4(cli, args, words):
    done = cli("serve", "--port", "0", *args) if "--port" not in args else cli("serve", *args)
    assert done.returncode == 4, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # a subprocess
def test_a_port_in_use_is_refused(cli):
    taken = bind(0)
    try:
        done = cli("serve", "--port", str(taken.getsockname()[1]))
    finally:
        taken.close()
    assert done.returncode == 4 and "cannot listen on 127.0.0.1" in done.stderr


@pytest.mark.slow
def test_it_prints_its_url_serves_and_stops_on_ctrl_c_with_exit_0(tmp_path):
    env = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-c", "from sim.cli import main; main()", "serve", "--scenario", str(LOST_UPDATE),
         "--port", "0", "--out", str(tmp_path / "out")],
        cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert "http://127.0.0.1:" in line, line + process.stderr.read()  # type: ignore[union-attr]
        address = line.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(address + "view?s=seed_fuzz_none_lost_update&e=plan", timeout=30) as answer:
            assert answer.status == 200 and b"dispatch s1" in answer.read()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0, process.stderr.read()  # type: ignore[union-attr]
    _close(process)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _close(process: subprocess.Popen) -> None:
    """The ended server's pipes (warnings are errors: an unclosed one would fail the test at collection time)."""
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.slow  # a subprocess
def test_a_body_that_breaks_http_framing_is_a_400_and_no_traceback(tmp_path):
    """A chunked body that is not one: uvicorn answers 400 itself while the page is made; the page, with
    nowhere to go, is dropped without a traceback on stderr."""
    env = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-c", "from sim.cli import main; main()", "serve", "--scenario", str(LOST_UPDATE),
         "--port", "0"], cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        for route in (b"/view", b"/export?s=seed_fuzz_none_lost_update&e=plan", b"/nowhere"):
            answer = _raw(port, b"POST " + route + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                          b"Connection: close\r\n\r\n" + b"x" * 100_000)
            assert answer.startswith(b"HTTP/1.1 4"), answer[:200]
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    stderr = process.stderr.read()  # type: ignore[union-attr]
    _close(process)
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr
    assert stderr.count("Invalid HTTP request received.") == 3, stderr
