"""The explorer as a Starlette application: a handful of routes, every answer a page, every error one line.

Routes (every state is a URL; see :mod:`sim.webapp.pages`):

* ``GET /`` -- the scenarios this server explores;
* ``GET /view`` -- one state: ``s`` the scenario, ``p`` the protocol, ``e`` the path, ``a`` the events ahead;
* ``GET /compare`` -- the path under ``p`` and under ``q``, side by side, the first differing record marked;
* ``GET /search`` -- the shortest violation from the path, within ``depth`` more events (and the page's
  other bounds); searches take turns (:mod:`~sim.webapp.turns`), and one that gets none is a 503 page;
* ``POST /export`` -- the path written into ``--out`` (the only route that writes, and only there).

A request for anything else is a 404 page, a malformed one (an unknown scenario, event or protocol, a bad
number) a 400 page: one line each, never a traceback.  Requests must name the server by its loopback
address (``Host: 127.0.0.1`` or ``localhost``): a page of another site cannot reach it by a name of its own.
An export must come from this server's own pages: its ``Origin``, when given, is this server's scheme, host
and port, and a browser's ``Sec-Fetch-Site`` does not name another site.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from sim.core.errors import FencesimError
from sim.core.values import cut
from sim.webapp import actions, pages
from sim.webapp.outfolder import OutFolder
from sim.webapp.turns import Busy, Turns
from sim.webapp.views import Explorer, diverge

#: The host names a request may give (the server binds 127.0.0.1 only).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
#: The longest query string accepted, in characters.
MAX_QUERY_CHARS = 64_000
PARAMETERS = {"/view": {"s", "p", "e", "a"}, "/compare": {"s", "p", "q", "e", "a"},
              "/search": {"s", "p", "e", "depth"}, "/export": {"s", "p", "e"}, "/": set()}


class BadRequest(Exception):
    """A request fencesim cannot answer as asked (400, one line)."""


def make_app(explorer: Explorer, out_dir: Path | None) -> Starlette:
    """The application over ``explorer``; exports go to ``out_dir`` (None: exporting is refused)."""
    out = None if out_dir is None else OutFolder(out_dir)
    turns = Turns()

    def index(request: Request) -> Response:
        _query(explorer, request) if request.url.query else None
        return HTMLResponse(pages.index_page(explorer))

    def view(request: Request) -> Response:
        q = _query(explorer, request)
        state = explorer.view(q["source"], q["protocol"], q["path"])
        depth = actions.default_depth(q["source"], q["protocol"])
        return HTMLResponse(pages.view_page(state, q["ahead"], actions.bounds_text(depth), depth))

    def compare(request: Request) -> Response:
        q = _query(explorer, request)
        other = q["params"].get("q")
        if not other:
            raise BadRequest("give the protocol to compare with (q=...)")
        right = explorer.protocol(q["source"], other)
        return HTMLResponse(pages.compare_page(diverge(explorer, q["source"], q["protocol"], right, q["path"]),
                                               q["ahead"]))

    def search_now(request: Request, waited: float) -> Response:
        q = _query(explorer, request)
        text = q["params"].get("depth")
        depth = actions.default_depth(q["source"], q["protocol"]) if not text else _number(text, "depth")
        found = actions.shortest_violation(explorer, q["source"], q["protocol"], q["path"], depth, waited)
        return HTMLResponse(pages.search_page(q["source"], q["protocol"].label, [str(e) for e in q["path"]], found,
                                              actions.bounds_text(depth)))

    async def search(request: Request) -> Response:
        arrived = time.monotonic()
        async with turns.turn():  # waits on the event loop, holding no thread
            return await run_in_threadpool(search_now, request, time.monotonic() - arrived)

    def export(request: Request) -> Response:
        _refuse_another_site(request)
        q = _query(explorer, request)
        if out is None:
            raise BadRequest("this server was started without --out: it writes nothing")
        files, invariant = actions.export_path(explorer, q["source"], q["protocol"], q["path"], out)
        back = pages.url("/view", s=q["source"].ident, p=q["protocol"].label, e=[str(e) for e in q["path"]])
        return HTMLResponse(pages.exported_page(files, invariant, back))

    def favicon(request: Request) -> Response:
        return Response(status_code=204)  # no icon: a browser's request for one is not an error

    routes = [Route("/favicon.ico", favicon), Route("/", index),
              Route("/view", view), Route("/compare", compare), Route("/search", search),
              Route("/export", export, methods=["POST"])]
    handlers: dict[Any, Any] = {HTTPException: http_error, BadRequest: bad_request, FencesimError: bad_request,
                                Busy: busy, Exception: internal}
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_HOSTS))]
    return Starlette(routes=routes, exception_handlers=handlers, middleware=middleware)


def _refuse_another_site(request: Request) -> None:
    """A write is asked for by this server's own pages: an ``Origin`` must name this server (scheme, host and
    port), and without one a browser's ``Sec-Fetch-Site`` must not say that another site (or another port or
    subdomain of this one: ``same-site``) sent it.  A client that is no browser sends neither."""
    server = request.scope.get("server") or ("127.0.0.1", 80)
    own = f"http://{LOOPBACK_HOSTS[0]}:{server[1]}"
    origins = request.headers.getlist("origin")
    if len(origins) > 1:
        raise HTTPException(403, f"an export is asked for from this server's own pages ({own}), with one Origin, "
                                 f"not {len(origins)}")
    if origins and not _own_origin(origins[0], int(server[1])):
        raise HTTPException(403, f"an export is asked for from this server's own pages ({own}), not from "
                                 f"{cut(origins[0], 80)}")
    site = request.headers.get("sec-fetch-site", "").strip().lower()
    if site in ("cross-site", "same-site"):
        raise HTTPException(403, f"an export is asked for from this server's own pages ({own}), not from another "
                                 f"site (Sec-Fetch-Site: {site})")


def _own_origin(origin: str, port: int) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) is this server: http, a loopback name, its port."""
    try:
        parts = urlsplit(origin.strip())
        given = parts.port if parts.port is not None else 80
    except ValueError:
        return False
    return (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS and given == port and not parts.username
            and parts.password is None and parts.path in ("", "/") and not parts.query and not parts.fragment)


def _query(explorer: Explorer, request: Request) -> dict[str, Any]:
    """The scenario, protocol, path and events ahead a request names (BadRequest or InputError if malformed)."""
    raw = request.url.query
    if len(raw) > MAX_QUERY_CHARS:
        raise BadRequest(f"the query is longer than {MAX_QUERY_CHARS:,} characters")
    allowed = PARAMETERS.get(request.url.path, set())
    unknown = sorted(set(request.query_params.keys()) - allowed)
    if unknown:
        reads = ", ".join(sorted(allowed)) or "none"
        raise BadRequest(f"unknown parameter {unknown[0]!r}; this page reads: {reads}")
    params = request.query_params
    for single in ("s", "p", "q", "depth"):
        if len(params.getlist(single)) > 1:
            raise BadRequest(f"parameter {single!r} given more than once")
    source = explorer.source(params.get("s"))
    protocol = explorer.protocol(source, params.get("p"))
    path = explorer.path(source, params.getlist("e"))
    ahead = [str(e) for e in explorer.path(source, params.getlist("a"))]
    return {"source": source, "protocol": protocol, "path": path, "ahead": ahead, "params": params}


async def http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    words = {404: f"no page {request.url.path!r}; pages: /, /view, /compare, /search, /export",
             405: f"{request.method} is not how {request.url.path} is asked for"}.get(error.status_code,
                                                                                      str(error.detail))
    return HTMLResponse(pages.error_page(error.status_code, words), status_code=error.status_code)


async def bad_request(request: Request, error: Exception) -> Response:
    return HTMLResponse(pages.error_page(400, " ".join(str(error).split())), status_code=400)


async def busy(request: Request, error: Exception) -> Response:
    return HTMLResponse(pages.error_page(503, str(error)), status_code=503,
                        headers={"Retry-After": str(Busy.retry_after)})


async def internal(request: Request, error: Exception) -> Response:
    return HTMLResponse(pages.error_page(500, "internal error: this is a bug in fencesim; please report it "
                                         f"with the URL ({type(error).__name__})"), status_code=500)


def _number(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, not {text[:40]!r}") from None
