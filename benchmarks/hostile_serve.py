"""Hostile requests to ``fencesim serve``, counted: tracebacks, writes outside --out, requests over their bound.

    PYTHONPATH=. python benchmarks/hostile_serve.py [--count N] [--seed S]

It starts ``fencesim serve`` on 127.0.0.1 (a free port; nothing else is ever contacted) over a workspace
counterexample, an effects counterexample and the tiny workload, with ``--out`` in a temporary tree beside a
folder of "the user's" files, and sends it requests over raw sockets, so nothing is normalised on the way:

* **query**: the pages with hostile parameters (unknown, repeated, huge, control characters, broken
  percent-encodings, bad depths and protocols, paths of 500 events and more, long paths ending in a violation);
* **path**: hostile request targets and methods (``..``, ``%00``, absolute forms, 8 KB paths, odd methods);
* **body**: bodies of every kind sent to every route (JSON, forms, binary, chunked and broken framing);
* **header**: Host, Origin and Sec-Fetch-Site variants on pages and exports, huge and many headers;
* **out**: an export after ``--out`` (or the folder above it, or a file in it) was replaced by a link to the
  user's folder, a link to nowhere, a link loop, a FIFO, a file, a folder of the user's or of another user;
* **search**: bursts of 4 to 12, or 45, concurrent searches (depths 1 to 12) while a page is asked for.

Per kind it counts:

* **traceback**: a 500, a body showing a traceback, or a traceback on the server's stderr meanwhile;
* **outside**: an entry of the temporary tree outside the real ``--out`` folder created, changed or removed
  while the input ran (the user's folder, link targets, the server's working folder, ``--out`` moved away:
  the tree is listed before and after each input), or an export answered 200 with ``--out`` tampered with;
* **foreign**: an export another site asked for (a foreign Origin, Sec-Fetch-Site cross-site, same-site): 200;
* **over**: a search answered later than its documented bound (30 s from the request, the wait for a turn
  included; a refusal for want of a turn later than the 10 s wait), a page later than PAGE_SECONDS, both
  with GRACE_SECONDS to spare, or a request with no answer at all.

The run passes (exit 0) when every count is 0.  Not a test: a run takes minutes.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim.app.serving import explorer_for  # noqa: E402
from sim.webapp.actions import SEARCH_SECONDS  # noqa: E402
from sim.webapp.turns import SEARCH_WAIT_SECONDS  # noqa: E402

SCENARIOS = [REPO / "scenarios" / "regressions" / "seed_fuzz_none_lost_update.toml",
             REPO / "scenarios" / "regressions" / "effects_saga_keyed_lost_success.toml"]
KINDS = ("query", "path", "body", "header", "out", "search")
SHARE = {"query": 0.37, "path": 0.14, "body": 0.14, "header": 0.2, "out": 0.13, "search": 0.02}
#: The longest any page but a search may take (not documented: a page is expected in well under a second).
PAGE_SECONDS = 10.0
GRACE_SECONDS = 5.0
#: A socket gives up on an answer after this long (then the request has none: over its bound).
SOCKET_SECONDS = SEARCH_SECONDS + 60
HOSTILE = ["", " ", "x" * 5000, "\x00", "\x1b[31m", "\u202e", "\u2028", "../../etc/passwd", "%", "%zz", "é" * 300,
           "fence=sideways", "none,none", "fence=step,fence=plan", "1e9", "-1", "0x10", "\u0661\u0662", "nan", "12",
           "13", "0", "99999999999999999999", "<script>alert(1)</script>", "\"'><", "plan\nplan", "s1 s1", "dispatch",
           "y" * 70_000, "step-dedupe;rm -rf /", "preempt nowhere", "deliver s9", "{}", "[]", "null"]
METHODS = [b"GET", b"POST", b"HEAD", b"PUT", b"DELETE", b"OPTIONS", b"TRACE", b"PATCH", b"BREW", b"G" * 300, b"get"]


@dataclass
class Answer:
    status: int  # 0: the connection closed without an answer; -1: none within the socket's limit
    seconds: float
    body: bytes


def send(port: int, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]] | None = None,
         body: bytes = b"", framing: bytes | None = None) -> Answer:
    """One request over a raw socket to 127.0.0.1:``port`` (``Connection: close``), its answer read whole."""
    names = {name.lower() for name, _ in headers or []}
    lines = [method + b" " + target + b" HTTP/1.1"]
    lines += [] if b"host" in names else [b"Host: 127.0.0.1:" + str(port).encode()]
    lines += [name + b": " + value for name, value in headers or []]
    lines += [framing] if framing is not None else [b"Content-Length: " + str(len(body)).encode()]
    request = b"\r\n".join(lines + [b"Connection: close", b"", b""]) + body
    started = time.monotonic()
    data = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=SOCKET_SECONDS) as sock:
            try:
                sock.sendall(request)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may answer and close before reading a huge request
            while chunk := sock.recv(65536):
                data += chunk
    except socket.timeout:
        return Answer(-1, time.monotonic() - started, data)
    except (ConnectionResetError, BrokenPipeError):
        pass
    seconds = time.monotonic() - started
    head = data.split(b"\r\n", 1)[0].split()
    status = int(head[1]) if len(head) >= 2 and head[0].startswith(b"HTTP/") and head[1].isdigit() else 0
    return Answer(status, seconds, data.split(b"\r\n\r\n", 1)[-1])


class Tree:
    """The temporary tree the server writes in (only into ``out``) and the folders around it."""

    def __init__(self, root: Path):
        self.root = root
        self.work = root / "work"
        self.out = self.work / "out"
        self.mine = root / "mine"  # the user's folder, beside --out
        self.cwd = root / "cwd"  # the server's working folder
        for folder in (self.out, self.mine / "out", self.mine / "notes", self.cwd):
            folder.mkdir(parents=True, exist_ok=True)
        (self.mine / "notes" / "plan.txt").write_text("the user's notes\n", encoding="utf-8")
        (self.mine / "out" / "keep.txt").write_text("the user's file\n", encoding="utf-8")

    def listing(self) -> dict[str, tuple]:
        """Every entry of the tree but the real ``--out`` folder's: its kind, inode, owner (and link target, or
        a file's size and time; a folder's entries are listed themselves)."""
        seen: dict[str, tuple] = {}
        for folder, folders, files in os.walk(self.root):
            for name in folders + files:
                path = os.path.join(folder, name)
                info = os.lstat(path)
                what: tuple = (info.st_mode, info.st_ino, info.st_uid)
                if os.path.islink(path):
                    what += (os.readlink(path),)
                elif not os.path.isdir(path):
                    what += (info.st_size, info.st_mtime_ns)
                seen[os.path.relpath(path, self.root)] = what
            folders[:] = [d for d in folders if os.path.join(folder, d) != str(self.out)
                          and not os.path.islink(os.path.join(folder, d))]
        return seen

    def tamper(self, how: str, rng: random.Random) -> Callable[[], None]:
        """Put something else in place of ``--out`` (or of the folder above it); return what undoes it."""
        if how == "parent link":
            self.work.rename(self.root / "work.moved")
            self.work.symlink_to(self.mine)
            return lambda: (self.work.unlink(), (self.root / "work.moved").rename(self.work))
        moved = self.work / "out.moved"
        self.out.rename(moved)
        if how == "link to mine":
            self.out.symlink_to(rng.choice([self.mine / "out", self.mine, self.mine / "notes"]))
        elif how == "link to nowhere":
            self.out.symlink_to(self.root / "nowhere")
        elif how == "link loop":
            self.out.symlink_to(self.out)
        elif how == "fifo":
            os.mkfifo(self.out)
        elif how == "file":
            self.out.write_text("the user's file\n", encoding="utf-8")
        elif how in ("folder of yours", "another user's folder"):
            self.out.mkdir()
            (self.out / "mine.txt").write_text("the user's file\n", encoding="utf-8")
            if how == "another user's folder" and os.geteuid() == 0:
                os.chown(self.out, 4242, 4242)

        def undo() -> None:
            if self.out.is_symlink() or (self.out.exists() and not self.out.is_dir()):
                self.out.unlink()
            elif self.out.is_dir():
                shutil.rmtree(self.out)
            moved.rename(self.out)
        return undo


#: How ``--out`` is tampered with before an export (None: not at all) and whether the export must be refused.
TAMPERING = {None: False, "removed": False, "parent link": True, "link to mine": True, "link to nowhere": True,
             "link loop": True, "fifo": True, "file": True, "folder of yours": True, "another user's folder": True,
             "file in out is a link": True}


class Inputs:
    """Hostile requests of each kind, built from what the server explores (its scenarios, events, protocols)."""

    def __init__(self, rng: random.Random, port: int):
        self.rng, self.port = rng, port
        explorer = explorer_for(workload="tiny", scenarios=SCENARIOS)
        self.sources = list(explorer.sources.values())
        self.events = {s.ident: [str(e) for e in explorer.alphabet(s)] for s in self.sources}
        self.protocols = {s.ident: list(s.family.presets) for s in self.sources}
        self.own = [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]

    def valid(self, source: str | None = None, least: int = 0) -> list[tuple[str, str]]:
        """A well-formed query: a scenario, a protocol, a path of its events (at least ``least``)."""
        source = source or self.rng.choice(self.sources).ident
        path = [self.rng.choice(self.events[source]) for _ in range(self.rng.randint(least, 12))]
        return [("s", source), ("p", self.rng.choice(self.protocols[source]))] + [("e", e) for e in path]

    def query(self) -> tuple[bytes, bytes]:
        """A route and a query string: well-formed, then damaged at one to three places."""
        route = self.rng.choice([b"/view", b"/compare", b"/search", b"/", b"/export"])
        source = self.rng.choice(self.sources).ident
        pairs = self.valid(source)
        for _ in range(self.rng.randint(1, 3)):
            how = self.rng.randrange(8)
            key = self.rng.choice(["s", "p", "e", "a", "q", "depth", "colour", "", "e[]", "s\x00"])
            if how == 0:
                pairs.append((key, self.rng.choice(HOSTILE)))
            elif how == 1 and pairs:
                pairs[self.rng.randrange(len(pairs))] = (key, self.rng.choice(HOSTILE))
            elif how == 2:
                pairs += [("e", self.rng.choice(self.events[source]))] * self.rng.choice([499, 501, 3000])
            elif how == 3:  # a long path that ends in the scenario's own violating order
                chosen = self.rng.choice(self.sources)
                source = chosen.ident
                pairs = [("s", source), ("p", self.rng.choice(self.protocols[source]))]
                pairs += [("e", self.rng.choice(self.events[source])) for _ in range(480)]
                pairs += [("e", str(e)) for e in chosen.events]
            elif how == 4:
                pairs.append(("depth", self.rng.choice(["1", "2", "3", "0", "-1", "13", "1e3", " 3", "3 ", "٣"])))
            elif how == 5:
                pairs.append(("q", self.rng.choice(self.protocols[source] + [self.rng.choice(HOSTILE)])))
            elif how == 6 and pairs:
                del pairs[self.rng.randrange(len(pairs))]
            else:
                pairs.append((key, self.rng.choice(self.events[source])))
        if route == b"/search":  # a page's search, not a flood of deep ones: those are the search kind's
            pairs = [(k, v) for k, v in pairs if k != "depth"] + [("depth", self.rng.choice(["1", "2", "x", "0"]))]
            pairs = [(k, v) for k, v in pairs if not (k == "s" and v.startswith("effects"))] or pairs
        text = urlencode(pairs).encode()
        if self.rng.random() < 0.25:  # raw damage no encoder makes
            at = self.rng.randrange(len(text) + 1)
            junk = self.rng.choice([b"%", b"%zz", b"%E0%A4%A", b"%FF%FE", b"&&==&", b"%00", b"#x", b"\xff", b"+" * 50])
            text = text[:at] + junk + text[at:]
        return route, text

    def target(self) -> bytes:
        port = str(self.port).encode()
        return self.rng.choice([
            b"/", b"//view", b"/view/", b"/VIEW", b"/view/..", b"/../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd",
            b"/view%00", b"/" + b"a" * 8000, b"*", b"http://127.0.0.1:" + port + b"/view",
            b"http://attacker.example/view", b"/view?#frag", b"/\xff\xfe", b"/view;x=1", b"/favicon.ico",
            b"/export/../view", b"/static/../../README.md", b"/view?" + b"e=plan&" * 2000, b"/?" + b"x" * 70_000,
            b"/search?depth=" + b"9" * 5000, b"", b"/view\tx", b"/ view", b"/compare?q=%FF",
            bytes(self.rng.randrange(33, 127) for _ in range(self.rng.randint(1, 200)))])

    def headers(self) -> tuple[list[tuple[bytes, bytes]], bool]:
        """Hostile headers, and whether they ask for an export from another site (Origin, Sec-Fetch-Site)."""
        port = str(self.port).encode()
        headers: list[tuple[bytes, bytes]] = []
        foreign = False
        if self.rng.random() < 0.3:
            headers.append((b"Host", self.rng.choice([
                b"attacker.example", b"127.0.0.1", b"localhost:" + port, b"", b"127.0.0.1:1", b"x" * 10_000,
                b"127.0.0.1.nip.io:" + port, b"[::1]:" + port, b"LOCALHOST:" + port, b"127.0.0.1:" + port + b"@evil"])))
        if self.rng.random() < 0.6:
            own = self.rng.random() < 0.4
            origin = self.rng.choice(self.own) if own else self.rng.choice([
                "http://localhost:3000", f"https://127.0.0.1:{self.port}", "null", f"http://127.0.0.1:{self.port}.evil",
                f"http://user@127.0.0.1:{self.port}", "http://127.0.0.1:99999", "", "x" * 9000, "file://",
                f"http://[::1]:{self.port}", "http://127.0.0.1", f"http://127.0.0.2:{self.port}", "http://attacker"])
            headers.append((b"Origin", origin.encode()))
            foreign = foreign or not own
            if self.rng.random() < 0.1:
                headers.append((b"Origin", b"http://attacker.example"))
                foreign = True
        if self.rng.random() < 0.5:
            site = self.rng.choice(["cross-site", "same-site", "same-origin", "none", "CROSS-SITE", " cross-site ",
                                    "garbage", "x" * 5000])
            headers.append((b"Sec-Fetch-Site", site.encode()))
            foreign = foreign or site.strip().lower() in ("cross-site", "same-site")
        if self.rng.random() < 0.2:
            headers.append((b"X-" + b"a" * self.rng.choice([10, 1000]), b"v" * self.rng.choice([10, 20_000, 70_000])))
        if self.rng.random() < 0.1:
            headers += [(f"X-{i}".encode(), b"1") for i in range(self.rng.choice([100, 300]))]
        if self.rng.random() < 0.1:
            headers.append(self.rng.choice([(b"X-Bad", b"\x01\x02\x7f"), (b"Bad Name", b"1"), (b"X-Fold", b"a\r\n b"),
                                            (b"Cookie", b"a=" + b"b" * 4000)]))
        return headers, foreign

    def body(self) -> tuple[bytes, list[tuple[bytes, bytes]], bytes | None]:
        """A body, its content type, and a framing header (None: a Content-Length of the body)."""
        body = self.rng.choice([
            b"", b"{}", b'{"s": "x", "e": ["plan"]}', urlencode(self.valid()).encode(), b"\x00" * 1000,
            bytes(self.rng.randrange(256) for _ in range(2000)), b"x" * self.rng.choice([10, 100_000, 1_000_000]),
            b"--b\r\nContent-Disposition: form-data; name=\"s\"\r\n\r\nx\r\n--b--\r\n", b"e=plan&" * 500])
        kind = self.rng.choice([b"application/json", b"application/x-www-form-urlencoded", b"text/plain",
                                b"multipart/form-data; boundary=b", b"application/octet-stream", b"\x00"])
        framing = self.rng.choice([None, None, None, b"Transfer-Encoding: chunked", b"Content-Length: -1",
                                   b"Content-Length: 0", b"Content-Length: 1\r\nContent-Length: 2"])
        if framing == b"Transfer-Encoding: chunked" and self.rng.random() < 0.5:
            body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
        return body, [(b"Content-Type", kind)], framing


# -- running the inputs ----------------------------------------------------------------------------------------

@dataclass
class Outcome:
    how: str  # what happened, for the detail column
    traceback: bool = False
    outside: bool = False
    foreign: bool = False
    over: bool = False
    seconds: float = 0.0


def judged(answer: Answer, bound: float) -> Outcome:
    """What an answer says: its status (or none), a 500 or a traceback, later than ``bound``."""
    shown = answer.status == 500 or b"Traceback" in answer.body or b"internal error" in answer.body
    how = {0: "dropped", -1: "no answer"}.get(answer.status, str(answer.status))
    return Outcome(how, shown, over=answer.status <= 0 or answer.seconds > bound + GRACE_SECONDS,
                   seconds=answer.seconds)


class Harness:
    def __init__(self, rng: random.Random, port: int, tree: Tree):
        self.rng, self.port, self.tree, self.inputs, self.bursts = rng, port, tree, Inputs(rng, port), 0

    def query(self) -> list[Outcome]:
        route, text = self.inputs.query()
        post, own = route == b"/export", [(b"Origin", self.inputs.own[0].encode())]
        answer = send(self.port, b"POST" if post else b"GET", route + b"?" + text, own if post else [])
        return [judged(answer, SEARCH_SECONDS if route == b"/search" else PAGE_SECONDS)]

    def path(self) -> list[Outcome]:
        return [judged(send(self.port, self.rng.choice(METHODS), self.inputs.target()), PAGE_SECONDS)]

    def body(self) -> list[Outcome]:
        body, headers, framing = self.inputs.body()
        route = self.rng.choice([b"/export", b"/view", b"/", b"/search", b"/nowhere"])
        query = urlencode(self.inputs.valid(least=1)).encode()
        answer = send(self.port, self.rng.choice([b"POST", b"POST", b"PUT", b"PATCH"]), route + b"?" + query,
                      headers + [(b"Origin", f"http://127.0.0.1:{self.port}".encode())], body, framing)
        return [judged(answer, PAGE_SECONDS)]

    def header(self) -> list[Outcome]:
        headers, foreign = self.inputs.headers()
        export = self.rng.random() < 0.6
        query = urlencode(self.inputs.valid(least=1)).encode()
        answer = send(self.port, b"POST" if export else b"GET", (b"/export?" if export else b"/view?") + query,
                      headers)
        outcome = judged(answer, PAGE_SECONDS)
        outcome.foreign = export and foreign and answer.status == 200
        return [outcome]

    def out(self) -> list[Outcome]:
        how = self.rng.choice(list(TAMPERING))
        query = urlencode(self.inputs.valid(least=1)).encode()
        own = [(b"Origin", self.rng.choice(self.inputs.own).encode())]
        undo: Callable[[], None] = lambda: None  # noqa: E731
        if how == "file in out is a link":
            first = send(self.port, b"POST", b"/export?" + query, own)
            names = [p for p in self.tree.out.iterdir() if p.suffix == ".toml" and not p.is_symlink()]
            if first.status != 200 or not names:
                return [judged(first, PAGE_SECONDS)]
            victim = max(names, key=lambda p: p.stat().st_mtime_ns)
            kept = victim.read_bytes()
            victim.unlink()
            victim.symlink_to(self.tree.mine / "notes" / "plan.txt")
            undo = lambda: (victim.unlink(), victim.write_bytes(kept))  # noqa: E731
        elif how is not None:
            undo = self.tree.tamper(how, self.rng)
        try:
            answer = send(self.port, b"POST", b"/export?" + query, own)
        finally:
            undo()
        outcome = judged(answer, PAGE_SECONDS)
        outcome.how = f"{how or 'untouched'} {outcome.how}"
        outcome.outside = TAMPERING[how] and answer.status == 200  # written where --out is not fencesim's folder
        return [outcome]

    def search(self) -> list[Outcome]:
        """A burst of concurrent searches, and a page asked for while they run."""
        answers: list[tuple[bool, Answer]] = []

        def one() -> None:
            source = self.rng.choice(self.inputs.sources).ident
            effects = source.startswith("effects")  # a replayed family: depth 2 takes about 20 s alone
            depth = str(self.rng.choice([1] * 5 + [2]) if effects else self.rng.randint(1, 12))
            pairs = self.inputs.valid(source)[:2] + [("depth", depth)]
            answers.append((True, send(self.port, b"GET", b"/search?" + urlencode(pairs).encode())))

        self.bursts += 1  # every fourth burst, from the first, is 45 searches at once
        threads = [threading.Thread(target=one) for _ in range(45 if self.bursts % 4 == 1 else self.rng.randint(4, 12))]
        for thread in threads:
            thread.start()
        time.sleep(0.2)
        answers.append((False, send(self.port, b"GET", b"/view?" + urlencode(self.inputs.valid()).encode())))
        for thread in threads:
            thread.join()
        outcomes = []
        for searched, answer in answers:
            bound = PAGE_SECONDS if not searched else SEARCH_WAIT_SECONDS if answer.status == 503 else SEARCH_SECONDS
            outcomes.append(judged(answer, bound))
            outcomes[-1].how = ("search " if searched else "page ") + outcomes[-1].how
        return outcomes


def start_server(tree: Tree, stderr: Path) -> tuple[subprocess.Popen, int]:
    """``fencesim serve`` on a free port of 127.0.0.1, its stderr into ``stderr``; (the process, its port)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", PYTHONUNBUFFERED="1")
    sources = ["--workload", "tiny"] + [arg for path in SCENARIOS for arg in ("--scenario", str(path))]
    process = subprocess.Popen(
        [sys.executable, "-c", "from sim.cli import main; main()", "serve", *sources, "--port", "0", "--out",
         str(tree.out)], cwd=str(tree.cwd), env=env, stdout=subprocess.PIPE, stderr=stderr.open("wb"))
    line = process.stdout.readline().decode()  # type: ignore[union-attr]
    if "http://127.0.0.1:" not in line:
        process.kill()
        raise SystemExit(f"fencesim serve did not start: {line}{stderr.read_text()}")
    return process, int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])


def run_one(harness: Harness, kind: str, stderr: Path) -> tuple[list[Outcome], str]:
    """One input of ``kind``, watched: the tree outside --out and the server's stderr before and after."""
    before, said = harness.tree.listing(), stderr.stat().st_size
    outcomes = getattr(harness, kind)()
    changed = sorted(set(before.items()) ^ set(harness.tree.listing().items()))
    new, note = stderr.read_bytes()[said:], ""
    if changed:
        outcomes[0].outside = True
        note = f"changed outside --out: {[name for name, _ in changed][:5]}"
    if b"Traceback" in new:
        outcomes[0].traceback = True
        note += new.decode("utf-8", "replace")[-1500:]
    return outcomes, note + "".join(f"over its bound: {o.how} in {o.seconds:.1f} s; " for o in outcomes if o.over)


def plan(count: int, rng: random.Random) -> list[str]:
    """The kinds to send, shuffled; a search burst is several requests, so there are fewer of them."""
    kinds = [kind for kind in KINDS if kind != "search" for _ in range(round(count * SHARE[kind]))]
    kinds += ["search"] * max(3, round(count * SHARE["search"] / 8))
    rng.shuffle(kinds)
    return kinds


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=3000, help="requests, about")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    counts = {kind: Counter() for kind in KINDS}
    notes: dict[tuple[str, str], str] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fencesim-hostile-serve-") as top:
        tree, stderr = Tree(Path(top) / "tree"), Path(top) / "server.stderr"
        process, port = start_server(tree, stderr)
        try:
            harness = Harness(rng, port, tree)
            for kind in plan(options.count, rng):
                began = time.monotonic()
                try:
                    outcomes, note = run_one(harness, kind, stderr)
                except Exception as error:  # noqa: BLE001 (the harness's own failure is shown, and fails the run)
                    outcomes, note = [Outcome("harness error", traceback=True)], f"{type(error).__name__}: {error}"
                if process.poll() is not None:
                    outcomes[0].traceback, note = True, f"the server stopped (exit {process.returncode})"
                tally(counts[kind], outcomes)
                counts[kind]["seconds"] += time.monotonic() - began
                if note:
                    notes.setdefault((kind, note[:80]), note)
                if process.poll() is not None:
                    break
        finally:
            process.terminate()
            process.wait(timeout=30)
        said = stderr.read_text(encoding="utf-8", errors="replace")
    return report(counts, notes, said, time.monotonic() - started)


def tally(counter: Counter, outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        counter["inputs"] += 1
        counter[outcome.how] += 1
        for name in ("traceback", "outside", "foreign", "over"):
            counter[name] += int(getattr(outcome, name))


def report(counts: dict[str, Counter], notes: dict[tuple[str, str], str], said: str, seconds: float) -> int:
    total: Counter = Counter()
    print(f"{'kind':<8} {'inputs':>7} {'traceback':>9} {'outside':>7} {'foreign':>7} {'over':>5} {'s':>4}  detail")
    for kind in KINDS:
        c = counts[kind]
        total.update(c)
        detail = ", ".join(f"{k} {v}" for k, v in sorted(c.items())
                           if k not in ("inputs", "traceback", "outside", "foreign", "over", "seconds"))
        print(f"{kind:<8} {c['inputs']:>7} {c['traceback']:>9} {c['outside']:>7} {c['foreign']:>7} {c['over']:>5} "
              f"{c['seconds']:>4.0f}  {detail}")
    print(f"{'all':<8} {total['inputs']:>7} {total['traceback']:>9} {total['outside']:>7} {total['foreign']:>7} "
          f"{total['over']:>5}  in {seconds:.0f} s; server stderr: {said.count('Traceback')} traceback(s), "
          f"{len(said.splitlines())} line(s)")
    for line, times in Counter(said.splitlines()).most_common(5):
        print(f"  stderr, {times} time(s): {line[:150]}")
    for (kind, _), note in notes.items():
        print(f"\n{kind}: {note}")
    failed = any(total[name] for name in ("traceback", "outside", "foreign", "over")) or "Traceback" in said
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main_())
