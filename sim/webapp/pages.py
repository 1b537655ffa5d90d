"""The explorer's pages as HTML: plain links and forms, no script, the report's style sheet.

Every page is a function of its URL: ``/view?s=SOURCE&p=PROTOCOL&e=EVENT&e=EVENT...`` names the state (the
path of events from the first one), and ``a=EVENT...`` the events ahead (what "forward" replays: the scenario's
own order, or what "back" stepped over).  So a URL copied into a review's notes reopens the same state.
"""

from __future__ import annotations

import html
import re
import shlex
from typing import Any, Iterable, Sequence
from urllib.parse import urlencode

from sim.core.family import StateTable
from sim.report.html_writer import STYLE, breakable
from sim.webapp.views import Divergence, Explorer, Source, View, lanes_of

PAGE_STYLE = STYLE + """
.bar a, .bar button { margin-right: .6em; }
form.inline { display: inline; margin: 0; }
a.event { display: inline-block; font-family: monospace; margin: .15em; padding: .25em .6em; border: 1px solid #4c72b0;
          border-radius: 4px; background: #f0f3f8; color: #123; text-decoration: none; }
a.event:hover { background: #dbe4f3; }
ul.disabled li { color: #555; } ul.disabled code { color: #222; }
tr.broke td { background: #f6d5d6; } tr.ahead td { color: #888; }
td.differs, tr.differs td { background: #fde9c9; font-weight: bold; }
.ok { color: #2a7a3a; } .violated { color: #b00020; font-weight: bold; }
.columns { display: flex; gap: 2em; flex-wrap: wrap; } .columns > div { flex: 1 1 30em; min-width: 0; }
.knob { white-space: nowrap; overflow-wrap: normal; word-break: keep-all; }
"""


def esc(value: Any) -> str:
    return html.escape(str(value))


#: A ``knob=value`` token of a protocol (``journal_gc=never``, ``idempotency=key+fingerprint``).
KNOB_TOKEN = re.compile(r"[^\s,=]+=[^\s,]*")


def knobs(value: Any) -> str:
    """Escaped text in which each ``knob=value`` token is one unbreakable span (class ``knob``); the rest breaks
    as :func:`~sim.report.html_writer.breakable` lets it, so a protocol wraps after a comma, between its
    tokens, and never inside one (``journal_`` / ``gc=never``)."""
    text, out, last = str(value), [], 0
    for token in KNOB_TOKEN.finditer(text):
        out += [breakable(text[last:token.start()]), f'<span class="knob">{esc(token.group())}</span>']
        last = token.end()
    return "".join(out) + breakable(text[last:])


def url(route: str, **query: Any) -> str:
    """A link: ``e`` and ``a`` are lists of event texts (repeated parameters); empty values are left out."""
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, (list, tuple)):
            pairs += [(key, str(v)) for v in value]
        else:
            pairs.append((key, str(value)))
    return route + ("?" + urlencode(pairs) if pairs else "")


def page(title: str, body: Iterable[str]) -> str:
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{esc(title)}</title>", f"<style>{PAGE_STYLE}</style></head><body>", *body,
                      "</body></html>"]) + "\n"


def error_page(status: int, line: str) -> str:
    """A 4xx or 5xx answer: one line saying what was wrong."""
    return page(f"fencesim serve: {status}", [f'<p class="error">fencesim serve: {status}: {esc(line)}</p>'])


def table(item: StateTable, ident: str = "") -> str:
    head = "".join(f"<th>{knobs(c)}</th>" for c in item.columns)
    body = "".join("<tr>" + "".join(f"<td>{knobs(c)}</td>" for c in row) + "</tr>" for row in item.rows)
    if not item.rows:
        body = f'<tr><td colspan="{len(item.columns)}">(none)</td></tr>'
    ident_attr = f' id="{esc(ident)}"' if ident else ""
    return f"<h3>{esc(item.title)}</h3><table{ident_attr} class=\"state\"><thead><tr>{head}</tr></thead>" \
           f"<tbody>{body}</tbody></table>"


def state_html(tables: Sequence[StateTable]) -> str:
    """One state as HTML tables (the notebook's ``sim.state_html`` and the explorer's state section)."""
    return "".join(table(t, "state-" + "-".join(t.title.split())) for t in tables)


def index_page(explorer: Explorer) -> str:
    items = [f'<li><a href="{esc(url("/view", s=s.ident, a=[str(e) for e in s.events]))}">{esc(s.title)}</a>'
             + (f" -- {esc(s.description)}" if s.description else "") + "</li>" for s in explorer.sources.values()]
    return page("fencesim serve", ["<h1>fencesim serve</h1>",
                                   "<p>Step through a design's states: pick a scenario.</p>",
                                   "<ul id=\"sources\">", *items, "</ul>"])


def _header(view: View, ahead: Sequence[str]) -> list[str]:
    source, texts = view.source, view.texts
    here = dict(s=source.ident, p=view.protocol.label)
    back = url("/view", **here, e=texts[:-1], a=texts[-1:] + list(ahead)) if texts else None
    forward = url("/view", **here, e=texts + list(ahead[:1]), a=list(ahead[1:])) if ahead else None
    link = url("/view", **here, e=texts, a=list(ahead))
    nav = [f'<a id="back" href="{esc(back)}">&larr; back</a>' if back else '<span id="back">&larr; back</span>',
           f'<a id="forward" href="{esc(forward)}">forward: <code>{esc(ahead[0])}</code> &rarr;</a>'
           if forward else '<span id="forward">forward &rarr;</span>',
           f'<a id="restart" href="{esc(url("/view", **here, a=texts + list(ahead)))}">first event</a>',
           f'<a id="permalink" href="{esc(link)}">permalink</a>', '<a href="/">all scenarios</a>']
    presets = "".join(f'<option value="{esc(label)}">' for label in
                      dict.fromkeys([p.label for p in source.protocols] + list(source.family.presets)))
    switch = (f'<form class="inline" id="switch" method="get" action="/view">{_hidden(source.ident, texts, ahead)}'
              f'<label>protocol <input name="p" list="presets" value="{esc(view.protocol.label)}" size="40"></label>'
              f'<datalist id="presets">{presets}</datalist> <button type="submit">switch</button></form>')
    compare = (f'<form class="inline" id="compare" method="get" action="/compare">'
               f'{_hidden(source.ident, texts, ahead)}<input type="hidden" name="p" value="{esc(view.protocol.label)}">'
               f'<label>compare with <input name="q" list="presets" size="30"></label> '
               f'<button type="submit">side by side</button></form>')
    return [f"<h1>{esc(source.title)} <small>({esc(source.family.name)} family, protocol "
            f"<code id=\"protocol\">{knobs(view.protocol.label)}</code>)</small></h1>",
            f'<p><small id="knobs">{knobs(view.protocol.describe())}</small></p>',
            f'<p class="bar">{" ".join(nav)}</p>', f"<p>{switch}</p>", f"<p>{compare}</p>",
            f'<p>Path so far ({len(texts)} event(s)): <code id="path">{esc(" ; ".join(texts) or "(none yet)")}</code>'
            "</p>", _opened(source)]


def _opened(source: Source) -> str:
    """Where the scenario came from, and the command that replays its own order."""
    if source.file is None:
        return ""
    quoted = shlex.quote(source.file)
    return (f"<p><small>Opened from <code>{esc(source.file)}</code>: its own order replays with "
            f"<code>fencesim run {esc(quoted)}</code>" + (f"; it violates {esc(source.invariant)} under its protocol"
                                                          if source.invariant else "") + "</small></p>")


def _hidden(ident: str, texts: Sequence[str], ahead: Sequence[str]) -> str:
    fields = [f'<input type="hidden" name="s" value="{esc(ident)}">']
    fields += [f'<input type="hidden" name="e" value="{esc(t)}">' for t in texts]
    fields += [f'<input type="hidden" name="a" value="{esc(t)}">' for t in ahead]
    return "".join(fields)


def _events(view: View, ahead: Sequence[str]) -> list[str]:
    here, texts = dict(s=view.source.ident, p=view.protocol.label), view.texts
    buttons, disabled = [], []
    for option in view.options:
        if option.enabled:
            rest = list(ahead[1:]) if ahead and ahead[0] == option.text else []
            target = url("/view", **here, e=texts + [option.text], a=rest)
            buttons.append(f'<a class="event" role="button" href="{esc(target)}">{esc(option.text)}</a>')
        else:
            disabled.append(f'<li data-event="{esc(option.text)}"><code>{esc(option.text)}</code>: '
                            f'<span class="reason">{esc(option.reason)}</span></li>')
    return ["<h2>Events that can happen next</h2>",
            f'<div id="enabled">{"".join(buttons) or "<p>None: the run is over.</p>"}</div>',
            f"<details id=\"disabled-events\" open><summary>{len(disabled)} event(s) cannot happen here, with the "
            f"guard's reason</summary><ul class=\"disabled\">{''.join(disabled)}</ul></details>"]


def _invariants(view: View) -> list[str]:
    broken = {b.invariant: b for b in view.broken}
    rows = []
    for name in view.invariants:
        item = broken.get(name)
        if item is None:
            rows.append(f'<tr data-invariant="{esc(name)}"><td>{esc(name)}</td><td class="ok">holds</td>'
                        "<td></td><td></td></tr>")
        else:
            rows.append(f'<tr data-invariant="{esc(name)}" class="broke"><td>{esc(name)}</td>'
                        f'<td class="violated">violated</td><td class="at">event {item.position + 1}: '
                        f"<code>{esc(item.event)}</code></td><td>{esc(item.violation.detail)}</td></tr>")
    return ["<h2>Invariants</h2>", '<table id="invariants"><thead><tr><th>invariant</th><th>status</th>'
            "<th>broken by</th><th>what breaks</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"]


def lanes_table(view: View, ident: str = "lanes") -> str:
    """The path so far as the report's swimlanes: one column per actor, one row per record; the record that
    violates an invariant is marked with the invariant."""
    lanes, shown = lanes_of(view.source.family, view.history)
    marks: dict[int, list[str]] = {}
    for item in view.broken:
        if item.violation.event_index is not None:
            marks.setdefault(item.violation.event_index, []).append(item.invariant)
    head = "<th>#</th><th>t</th>" + "".join(f"<th>{esc(lane)}</th>" for lane in lanes) + "<th>violates</th>"
    body = []
    family = view.source.family
    for event in shown:
        text = family.describe(event)
        text = ("* " + text) if family.is_fault(event) else text
        cells = "".join(f"<td>{knobs(text) if lane == event.actor else ''}</td>" for lane in lanes)
        broke = marks.get(event.index)
        css = ' class="broke"' if broke else ""
        body.append(f'<tr data-index="{event.index}"{css}><td>{event.index}</td><td>{esc(event.time)}</td>{cells}'
                    f'<td class="marks">{esc(", ".join(broke or []))}</td></tr>')
    return (f'<table id="{esc(ident)}" class="wide"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}'
            "</tbody></table><p><small>* an injected fault; a red row is the record that violates an "
            "invariant</small></p>")


def _path_steps(view: View) -> str:
    rows = []
    for i, text in enumerate(view.texts):
        why = view.skipped.get(i)
        status = f"no effect: {esc(why)}" if why is not None else "happened"
        broke = [b.invariant for b in view.broken if b.position == i]
        css = ' class="broke"' if broke else ""
        rows.append(f'<tr data-step="{i + 1}"{css}><td>{i + 1}</td><td><code>{esc(text)}</code></td><td>{status}</td>'
                    f'<td>{esc(", ".join(broke))}</td></tr>')
    return ('<table id="steps"><thead><tr><th>#</th><th>event</th><th>effect</th><th>breaks</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def view_page(view: View, ahead: Sequence[str], search_words: str, depth: int) -> str:
    source, texts = view.source, view.texts
    here = dict(s=source.ident, p=view.protocol.label, e=texts)
    actions = [
        "<h2>From here</h2>",
        f'<form class="inline" id="search" method="get" action="/search">{_hidden(source.ident, texts, ())}'
        f'<input type="hidden" name="p" value="{esc(view.protocol.label)}">'
        f'<label>depth <input name="depth" value="{depth}" size="3"></label> '
        f'<button type="submit">find the shortest violation from here</button></form> '
        f"<small>{esc(search_words)}</small>",
        f'<p><form class="inline" id="export" method="post" action="{esc(url("/export", **here))}">'
        '<button type="submit">export this path</button></form> <small>writes the scenario file '
        "<code>fencesim run</code> replays, its timeline and its pytest regression into the server's --out "
        "folder</small></p>"]
    body = [*_header(view, ahead), *_invariants(view), *_events(view, ahead), *actions,
            "<h2>The path so far, per actor</h2>", _path_steps(view), lanes_table(view),
            "<h2>State after the path</h2>", state_html(view.tables) or "<p>(the family shows no state tables)</p>"]
    return page(f"{source.title} under {view.protocol.label}", body)


def compare_page(divergence: Divergence, ahead: Sequence[str]) -> str:
    left, right = divergence.left, divergence.right
    source, texts = left.source, left.texts
    rows = []
    for i, (a, b) in enumerate(divergence.rows):
        css = ' class="differs"' if i == divergence.first else ""
        rows.append(f'<tr data-row="{i}"{css}><td>{i}</td><td>{knobs(a)}</td><td>{knobs(b)}</td></tr>')
    where = "the two runs agree record for record" if divergence.first is None else \
        f"the first record that differs is #{divergence.first} (marked)"
    verdicts = []
    for view in (left, right):
        broken = ", ".join(f"{b.invariant} at event {b.position + 1}" for b in view.broken) or "no invariant violated"
        verdicts.append(f"<li><code>{knobs(view.protocol.label)}</code>: {esc(broken)}</li>")
    links = [f'<a href="{esc(url("/view", s=source.ident, p=v.protocol.label, e=texts, a=list(ahead)))}">open under '
             f"<code>{knobs(v.protocol.label)}</code></a>" for v in (left, right)]
    body = [f"<h1>{esc(source.title)}: the same order under two protocols</h1>",
            f'<p>Path: <code id="path">{esc(" ; ".join(texts) or "(none)")}</code></p>',
            f'<p id="divergence">{esc(where)}.</p>', "<ul id=\"verdicts\">", *verdicts, "</ul>",
            f'<p class="bar">{" ".join(links)}</p>',
            f'<table id="side-by-side" class="wide"><thead><tr><th>#</th><th>{knobs(left.protocol.label)}</th>'
            f"<th>{knobs(right.protocol.label)}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>",
            '<div class="columns"><div><h2>' + knobs(left.protocol.label) + "</h2>" + lanes_table(left, "lanes-left")
            + "</div><div><h2>" + knobs(right.protocol.label) + "</h2>" + lanes_table(right, "lanes-right")
            + "</div></div>"]
    return page(f"{source.title}: {left.protocol.label} against {right.protocol.label}", body)


def search_page(source: Source, protocol_label: str, texts: Sequence[str], found: Any, words: str) -> str:
    result = found.result
    how = "every reachable state seen" if result.exhausted else "complete within the bound" if result.complete \
        else f"stopped by {result.reason}: nothing is proved"
    items = []
    for name, full in found.paths.items():
        suffix = [str(e) for e in full[len(texts):]] if len(full) >= len(texts) else []
        link = url("/view", s=source.ident, p=protocol_label, e=list(texts), a=suffix)
        items.append(f'<li data-invariant="{esc(name)}"><b>{esc(name)}</b>: {result.shortest[name]} more event(s): '
                     f"<code>{esc(' ; '.join(suffix) or '(already violated)')}</code> -- "
                     f'<a href="{esc(link)}">step through it</a></li>')
    absent = ", ".join(result.proved_absent)
    start = esc(" ; ".join(texts) or "(the first event)")
    back = esc(url("/view", s=source.ident, p=protocol_label, e=list(texts)))
    body = [f"<h1>Shortest violation from here: {esc(source.title)} under <code>{knobs(protocol_label)}</code></h1>",
            f'<p>From the path <code id="path">{start}</code>, {esc(words)}.</p>',
            f"<p>{result.distinct_states:,} distinct states, {result.states_generated:,} generated ({esc(how)}).</p>",
            '<ul id="found">', *items, "</ul>" if items else "</ul><p>No violation found within the bound.</p>",
            f"<p>Proved absent within the bound: {esc(absent)}</p>" if absent else "",
            f'<p><a href="{back}">back to the path</a></p>']
    return page("shortest violation from here", body)


def exported_page(files: Any, invariant: str | None, back: str) -> str:
    verdict = f"it violates {invariant}" if invariant else "it violates no safety invariant"
    body = ["<h1>Exported</h1>", f"<p>The path is written ({esc(verdict)}):</p>", '<ul id="files">',
            *(f"<li><code>{esc(path)}</code></li>" for path in (files.scenario, files.timeline, files.pytest)),
            "</ul>", f'<p>Replay it: <code id="replay">fencesim run {esc(files.scenario)}</code></p>',
            f'<p><a href="{esc(back)}">back to the path</a></p>']
    return page("exported", body)
