"""Running the explorer: a socket bound to 127.0.0.1 (never another address), uvicorn serving the app on it.

The socket is bound here, before uvicorn starts, so the port is known (``--port 0`` takes a free one) and a
port already in use is one line, not a traceback.  Ctrl-C stops the server; :func:`run` then returns.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable

from sim.core.errors import InputError
from sim.webapp.app import make_app
from sim.webapp.views import Explorer

#: The only address the server listens on.
LOOPBACK = "127.0.0.1"
PORT_DEFAULT = 8765
#: The longest the application waits for uvicorn to close a connection it answered itself, in seconds.
CLOSING_SECONDS = 5.0


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: a free port)."""
    if not 0 <= port <= 65535:
        raise InputError(f"--port must be from 0 to 65535, not {port}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(64)
    except OSError as error:
        sock.close()
        raise InputError(f"--port {port}: cannot listen on {LOOPBACK}:{port} ({error.strerror or error}); "
                         "give another port, or --port 0 for a free one") from None
    sock.set_inheritable(True)
    return sock


def served(explorer: Explorer, out_dir: Path | None) -> Any:
    """The application as uvicorn runs it.  A request whose body breaks HTTP's framing after its headers (a
    chunked body that is not one) is answered by uvicorn itself (400, the connection closing) while the page
    is being made; the page then has nowhere to go.  It is dropped here, and the application waits (a few
    seconds at most) until uvicorn has seen the connection close, where uvicorn would print a traceback, or
    an error line about a response never completed."""
    import anyio
    import h11

    app = make_app(explorer, out_dir)

    async def application(scope: Any, receive: Any, send: Any) -> None:
        answered = [False]  # by uvicorn itself: the page has nowhere to go

        async def sending(message: Any) -> None:
            if answered[0]:
                return
            try:
                await send(message)
            except h11.LocalProtocolError:
                answered[0] = True

        await app(scope, receive, sending)
        if answered[0]:
            with anyio.move_on_after(CLOSING_SECONDS):
                while (await receive())["type"] != "http.disconnect":
                    pass

    return application


def run(explorer: Explorer, out_dir: Path | None, port: int = PORT_DEFAULT,
        announce: Callable[[str], None] = print) -> None:
    """Serve until interrupted (Ctrl-C); ``announce`` gets the URL once the socket listens."""
    import uvicorn

    sock = bind(port)
    address = f"http://{LOOPBACK}:{sock.getsockname()[1]}/"
    config = uvicorn.Config(served(explorer, out_dir), log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    announce(address)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn hands a second Ctrl-C back after its shutdown
        pass
    finally:
        sock.close()


class Running:
    """An explorer serving in a background thread (the notebook's ``sim.serve``): ``url``, and ``stop()``."""

    def __init__(self, explorer: Explorer, out_dir: Path | None, port: int):
        import uvicorn

        self.socket = bind(port)
        self.url = f"http://{LOOPBACK}:{self.socket.getsockname()[1]}/"
        config = uvicorn.Config(served(explorer, out_dir), log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True,
                                       name="fencesim-serve")
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop serving and close the socket (waits for the thread)."""
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.socket.close()

    def __repr__(self) -> str:
        return f"<fencesim explorer at {self.url}>"

    def _repr_html_(self) -> str:
        return f'<a href="{self.url}" target="_blank">fencesim explorer at {self.url}</a>'
