"""The counterfactual advisor: the smallest change to the design under review that
removes a violation, what it costs, and whether it really is a fix.

Starting from the protocol that was fuzzed, the advisor tries every change
of one knob, then of two, ... (up to ``ADVISOR_MAX_CHANGES``), where each
changed knob moves to a value of equal or higher rank in the family's knob
table: it never proposes dropping a mechanism the design has.  A candidate
*removes* the violation when the minimal counterexample replays under it
with no safety violation at all.

The candidates that remove it are priced on a sample of the sweep's own
seeds (the first ``ADVISOR_SAMPLE_SEEDS``): runs still violating the
invariant, runs violating another invariant beyond what the design already
did, work done (a fix that applies nothing is no fix) -- *applied safely*
where the family tells it apart (``Family.safe_progress``: a write over
content its author never saw, or applied twice, is no work done), else
applied -- and availability findings (spurious rejections, human
exceptions) per run.  The best priced
candidates are then *verified* on every seed the sweep ran: a candidate is
offered as a **fix** only when no run of those seeds violates the invariant
under it (and the exported order replays cleanly).  A candidate that leaves
runs violating it is a *partial improvement*, labelled as one with the
residual count; the advisor then looks one knob further for a true fix
before settling for it.  Every count it states is of the same seeds as the
count it is compared with, so it never says "was 0" of a violation the
sweep found.

Everything is bounded: ``ADVISOR_MAX_WORK`` units of replay work per advice
(runs and order events: it stops at the same point on every machine, so
the advice never depends on the machine's speed) and the run's ``--budget``,
at least one candidate priced; whatever stopped it is named in
:attr:`Advice.stopped`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

from sim.core.family import Family
from sim.core.findings import invariant_of, split
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.advice_proof import dominated, proof_bound, prove
from sim.search.budget import NO_DEADLINE, Deadline, WorkLimit, work_of
from sim.search.oracle import evaluate

#: How many knobs a proposal may change, seeds of the sample that prices each candidate, how many
#: candidates are priced and how many of those are verified on every seed of the sweep.
ADVISOR_MAX_CHANGES = 2
ADVISOR_SAMPLE_SEEDS = 200
ADVISOR_CANDIDATES_PRICED = 6
ADVISOR_CANDIDATES_VERIFIED = 3
#: Replay work of one advice (runs and order events, :func:`sim.search.budget.work_of`; a limit on
#: everything that stops at the same point on every machine: about 12 s on one core, a workload at its
#: largest limits included).
ADVISOR_MAX_WORK = 250_000
#: Seeds swept at a time while pricing (the limit is looked at between pieces).
ADVISOR_PIECE_SEEDS = 25
ADVISOR_LIMIT_NAME = "the advisor's work limit"


@dataclass
class Advice:
    protocol: str
    invariant: str  # the finding's invariant; ``where`` says where (sim.core.findings)
    events: list[str]
    changes_needed: int | None  # knobs changed by the recommendation (None: nothing found)
    removed_by: list[str]  # every candidate at that size under which the counterexample is clean
    recommended: str | None
    changes: dict[str, Any] = field(default_factory=dict)
    availability_per_run: float | None = None
    progress_share: float | None = None  # work done (applied), reported
    #: Work done safely (``Family.safe_progress``), what the cost ranks by; None when the family has no such measure.
    safe_progress_share: float | None = None
    sample_violating_runs: int | None = None  # runs of the sample violating any safety invariant
    sample_seeds: int = 0
    sample_runs_violating_it: int | None = None  # ... violating this invariant, under the recommendation
    sample_runs_violating_it_before: int | None = None  # ... and under the protocol as given
    priced: list[dict] = field(default_factory=list)
    #: True: verified on every seed of the sweep, no run violates the invariant (a fix); False: some still
    #: do (a partial improvement); None: nothing recommended or not verified.
    fixes: bool | None = None
    seed_start: int = 0
    verified_seeds: int = 0  # seeds of the sweep the recommendation was verified on (a prefix if stopped)
    seeds: int = 0  # seeds the sweep ran
    runs_violating_it: int | None = None  # of the verified seeds, under the recommendation
    runs_violating_it_before: int | None = None  # of the same seeds, under the protocol as given
    violating_runs: int | None = None  # of the verified seeds, violating any safety invariant
    #: Of the verified seeds, runs violating the finding's invariant at any where (None: advice on a whole
    #: invariant, where ``runs_violating_it`` already counts them).
    runs_violating_invariant: int | None = None
    stopped: str | None = None  # the limit that cut the advice short
    #: When nothing is recommended: what the family says lies beyond any protocol (the endpoint itself must
    #: change), from ``Family.beyond_protocol``; written to JSON only when set.
    beyond_protocol: str | None = None
    #: The exhaustive search of the recommendation (:func:`sim.search.advice_proof.prove`): ``fixes`` is True
    #: only when its status is ``proved``.
    proof: dict | None = None
    #: The next best verified candidate, with its counts and proof (None: no other was verified).
    runner_up: dict | None = None
    #: Knobs the design set away from their defaults: the candidates keep them (never dropped or weakened).
    kept: dict[str, str] = field(default_factory=dict)
    #: Where the finding advised on happens ("" for an invariant as a whole): its runs are the ones counted.
    where: str = ""
    #: The other findings the exported order still shows under the recommendation (each has its own advice).
    order_still_shows: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        out = dict(self.__dict__)
        if out.get("beyond_protocol") is None:
            out.pop("beyond_protocol", None)
        if not out.get("order_still_shows"):
            out.pop("order_still_shows", None)
        return out


def keeps(knob: Any, current: Any, value: Any) -> bool:
    """May a proposal move ``knob`` from ``current`` to ``value``?  Only to a rank at least as high, and never
    back to the knob's default at the same rank (``checkpoint=per_step`` to ``none`` drops a mechanism the
    design chose, though both rank alike); an alternative of equal rank (``stamp_at=plan`` for
    ``dispatch``) is allowed."""
    if value == current or knob.rank(value) < knob.rank(current):
        return False
    return not (value == knob.default and current != knob.default and knob.rank(value) == knob.rank(current))


def candidates(protocol: Protocol, changes: int) -> list[Protocol]:
    """Protocols that change exactly ``changes`` knobs of ``protocol``, each as :func:`keeps` allows."""
    table = protocol.table
    options: list[tuple[str, list[Any]]] = []
    for knob in table.knobs:
        current = protocol.knobs[knob.name]
        better = [v for v in knob.candidates() if keeps(knob, current, v)]
        if better:
            options.append((knob.name, better))
    out = []
    for chosen in itertools.combinations(options, changes):
        names = [name for name, _ in chosen]
        for values in itertools.product(*(vals for _, vals in chosen)):
            given = {k: protocol.knobs[k] for k in table.names()}
            given.update(zip(names, values))
            out.append(table.build(given))
    return out


def rank_gain(candidate: Protocol, base: Protocol) -> float:
    return sum(k.rank(candidate.knobs[k.name]) - k.rank(base.knobs[k.name]) for k in base.table.knobs)


class Tallies:
    """Sweeps of candidate protocols over the first seeds of a range, grown piece by piece so a limit
    can stop them between pieces (``ADVISOR_PIECE_SEEDS``); the run's own sweep tallies (for protocols it
    fuzzed) and what earlier advice measured are reused.  Shared by every advice of a run."""

    def __init__(self, family: Family, workload: Workload, seed_start: int, seeds: int, workers: int | None = 1,
                 known: dict[Protocol, Any] | None = None):
        self.family, self.workload, self.seed_start, self.seeds = family, workload, seed_start, seeds
        self.workers = workers
        self.full: dict[Protocol, Any] = dict(known or {})  # tallies over every seed
        self.prefix: dict[Protocol, Any] = {}  # tallies over the first seeds (their ``runs`` say how many)
        self.proofs: dict[tuple[str, str, int], dict] = {}  # (protocol, invariant, bound) -> its proof

    def proof(self, protocol: Protocol, invariant: str, bound: int, deadline: Deadline) -> dict:
        """:func:`~sim.search.advice_proof.prove`, once per (protocol, invariant, bound) in a run (a candidate
        of several advices is proved once); a copy.  Under a deadline, searched each time and not kept."""
        import copy

        key = (protocol.label, invariant, bound)
        if deadline.end is not None:  # cut at a time: neither kept nor taken from those kept
            return prove(self.family, self.workload, protocol, invariant, bound, deadline)
        if key not in self.proofs:
            self.proofs[key] = prove(self.family, self.workload, protocol, invariant, bound, deadline)
        return copy.deepcopy(self.proofs[key])

    def get(self, protocol: Protocol, seeds: int, limit: WorkLimit | None = None) -> Any:
        """The tally of ``protocol`` over the first ``seeds`` seeds, or over fewer when ``limit`` stops it
        (at least one piece; its ``runs`` say how many).  A copy: later growth never changes it."""
        import copy

        from sim.search.sweep import CHUNK_SEEDS, sweep

        seeds = min(seeds, self.seeds)
        if protocol in self.full and seeds >= self.seeds:
            return self.full[protocol]
        tally = self.prefix.get(protocol)
        while tally is None or tally.runs < seeds:
            done = 0 if tally is None else tally.runs
            if tally is not None and limit is not None and limit.expired():
                break
            piece = min(ADVISOR_PIECE_SEEDS, seeds - done)
            if done >= ADVISOR_SAMPLE_SEEDS and tally is not None:
                # as many seeds as the work left allows, judged by the runs so far (the same on every machine)
                per_run = max(1, work_of(tally.runs, tally.events) // max(1, tally.runs))
                allowed = seeds - done if limit is None else limit.left() // per_run
                piece = max(ADVISOR_PIECE_SEEDS, min(seeds - done, allowed // CHUNK_SEEDS * CHUNK_SEEDS or allowed))
                piece = min(piece, seeds - done)
            deadline = NO_DEADLINE if limit is None or tally is None else limit.deadline
            summary, _ = sweep(self.family, self.workload, [protocol], piece, self.seed_start + done,
                               self.workers if piece > CHUNK_SEEDS else 1, deadline=deadline)
            grown = summary.tallies[protocol.label]
            if limit is not None:
                limit.charge(grown.runs, grown.events)
            if tally is None:
                tally = grown
            else:
                tally.merge(grown)
            self.prefix[protocol] = tally
        if tally.runs >= self.seeds:
            self.full[protocol] = tally
        return copy.deepcopy(tally)


def advise(family: Family, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Any],
           sample_seeds: int = ADVISOR_SAMPLE_SEEDS, workers: int = 1, max_changes: int = ADVISOR_MAX_CHANGES,
           deadline: Deadline = NO_DEADLINE, seed_start: int = 0, seeds: int | None = None,
           tallies: Tallies | None = None, max_work: int = ADVISOR_MAX_WORK,
           proof_depth: int | None = None) -> Advice:
    """The smallest change to ``protocol`` under which ``events`` is clean, priced on a sample of the
    sweep's seeds, verified on all of them (``seed_start``, ``seeds``: the seeds the sweep ran; by
    default the sample alone) and proved by exhaustive search within ``proof_depth`` events (the design's
    bound; see :mod:`sim.search.advice_proof`).  ``tallies`` shares sweeps between the advice of one run.

    ``max_work`` (replay work, the same on every machine) and ``deadline`` (a ``--budget``) bound it: once
    either is spent nothing more is priced or verified (at least one candidate always is), and
    ``stopped`` names the limit."""
    seeds = sample_seeds if seeds is None else seeds
    tallies = tallies or Tallies(family, workload, seed_start, seeds, workers)
    limit = WorkLimit(max_work, ADVISOR_LIMIT_NAME, deadline)
    whole, where = split(invariant)
    advice = Advice(protocol.label, whole, [str(e) for e in events], None, [], None, where=where,
                    sample_seeds=min(sample_seeds, seeds), seed_start=seed_start, seeds=seeds,
                    kept={k.name: k.show(protocol.knobs[k.name]) for k in protocol.table.knobs
                          if protocol.knobs[k.name] != k.default})
    # a proof reaches at least the order it fixes (a bound shorter than the order could never have found it)
    bound = max(proof_bound(workload, proof_depth), min(len(events), workload.max_events))
    partial: tuple[int, list[str], dict] | None = None  # the best partial improvement, with its size
    still_shows: dict[str, list[str]] = {}  # per candidate tried: the other findings its order still shows
    for count in range(1, max_changes + 1):
        clean, shows = _removers(family, workload, protocol, invariant, events, count, limit, advice)
        still_shows.update(shows)
        if not clean:
            if advice.stopped:
                break
            continue
        removed_by = [c.label for c in clean]
        priced = _price(family, protocol, invariant, clean, tallies, advice.sample_seeds, limit, advice)
        verified = _verify(family, protocol, invariant, priced, tallies, limit, advice, bound)
        chosen = _choose(verified)
        if chosen is not None:
            _recommend(advice, count, removed_by, chosen, _runner_up(chosen, verified, priced), still_shows)
            if advice.fixes is not False:  # a proved fix, or clean on every seed with the proof cut short
                return advice
        judged = verified or priced[:1]
        best = min(judged, key=_residual)
        if partial is None or _residual(best)[:3] < _residual(partial[2])[:3]:  # ties: the smaller change
            partial = (count, removed_by, best)
        if advice.stopped:
            break
    # No fix: where the family says no protocol can remove it (a keyless endpoint), that is the answer, not a
    # partial improvement of its rate
    beyond = None if advice.stopped else _beyond_protocol(family, workload, protocol, whole, events)
    if beyond:
        advice.beyond_protocol = beyond
    elif partial is not None and not _applies_nothing(partial[2]):  # applying nothing improves nothing
        _recommend(advice, partial[0], partial[1], partial[2], None, still_shows)
    return advice


def _residual(entry: dict) -> tuple:
    """How far a candidate that is no fix is from one: doing work first (one that applies nothing is no
    improvement), then runs still violating the invariant (of the seeds it was verified on, else its sample),
    a disproof counting after any clean count, then its cost."""
    runs = entry.get("runs_violating_it", entry["sample_runs_violating_it"])
    disproved = (entry.get("proof") or {}).get("status") == "disproved"
    return (_applies_nothing(entry), runs, disproved, cost_key(entry))


def _choose(verified: list[dict]) -> dict | None:
    """Among the verified candidates clean on every seed: the proved fixes that no other proved fix beats on
    every count (:func:`~sim.search.advice_proof.dominated`), best by cost; else the best clean one whose
    proof a limit cut short (offered as "no violation in N seeds, not proved"); else None."""
    clean = [e for e in verified if e.get("runs_violating_it") == 0 and not _applies_nothing(e)
             and (e.get("proof") or {}).get("status") != "disproved"]
    proved = [e for e in clean if e["proof"]["status"] == "proved"]
    pool = [e for e in proved if not dominated(e, proved)] or [e for e in clean if not dominated(e, clean)]
    return min(pool, key=cost_key) if pool else None


def _runner_up(chosen: dict, verified: list[dict], priced: list[dict]) -> dict | None:
    """The next best candidate after ``chosen``: the best other verified one, else the best other priced."""
    others = [e for e in verified if e is not chosen] or [e for e in priced if e is not chosen]
    if not others:
        return None
    best = min(others, key=lambda e: (_fix_rank(e), cost_key(e)))
    out = {k: v for k, v in best.items() if not k.startswith("_")}
    out["verdict"] = _verdict(best)
    return out


def _fix_rank(entry: dict) -> int:
    return {"fix": 0, "fixes this finding only": 1, "not proved": 2}.get(_verdict(entry), 3)


def _applies_nothing(entry: dict) -> bool:
    """A candidate under which (almost) nothing is done: its safety means nothing, so it is never a fix."""
    return bool(entry.get("_full", entry).get("applies_nothing"))


def _verdict(entry: dict) -> str:
    """``fix`` (proved: the invariant, at every where), ``fixes this finding only`` (the finding is gone within
    the bound, another finding of its invariant is not), ``not proved`` (clean on every seed, proof cut short),
    ``applies nothing`` (clean
    because nothing is done), ``disproved`` or ``partial improvement`` (runs still violate), ``does not fix``
    (its sample violates) or ``unverified`` (priced on the sample only)."""
    status = (entry.get("proof") or {}).get("status")
    if _applies_nothing(entry):
        return "applies nothing"
    if status == "disproved":
        return "disproved"
    if "runs_violating_it" not in entry:
        return "does not fix" if entry["sample_runs_violating_it"] else "unverified"
    if entry["runs_violating_it"]:
        return "partial improvement"
    if status == "elsewhere" or entry.get("runs_violating_invariant"):  # another finding of it remains
        return "fixes this finding only"
    return "fix" if status == "proved" else "not proved"


def runs_showing(tally: Any, target: str) -> int:
    """Runs of a tally violating ``target``: an invariant, or one finding of it (``"invariant @ where"``)."""
    if invariant_of(target) == target:
        return tally.by_invariant[target]
    return tally.by_finding.get(target, 0)


def _beyond_protocol(family, workload, protocol, invariant, events) -> str | None:
    """The family's word on a counterexample no change of knobs removes (None: it has none)."""
    hook = getattr(family, "beyond_protocol", None)
    return hook(workload.base, protocol, invariant, events) if hook is not None else None


def _removers(family, workload, protocol, target, events, count, limit, advice
              ) -> tuple[list[Protocol], dict[str, list[str]]]:
    """Candidates of ``count`` changes under which the order no longer shows ``target`` (a finding, or an
    invariant as a whole), those under which it replays with no safety violation at all first; and, per
    candidate's label, the other findings the order still shows under it (the advice of a finding is about that
    finding: another one in its order has its own)."""
    clean, shows = [], {}
    allowed = getattr(family, "candidate_allowed", None)  # the family's word on what its endpoints can take
    by_finding = invariant_of(target) != target
    for candidate in candidates(protocol, count):
        if allowed is not None and not allowed(workload, protocol, candidate):
            continue
        if limit.expired():
            advice.stopped = limit.name
            limit.note("advisor")
            break
        limit.charge(1, len(events))
        shown = evaluate(family, workload.base, candidate, events)
        if target not in (shown.findings if by_finding else shown.violated):
            shows[candidate.label] = list(shown.findings)
            clean.append(candidate)
    clean.sort(key=lambda c: (bool(shows[c.label]), rank_gain(c, protocol), c.label))
    return clean, shows


def _price(family, protocol, invariant, clean, tallies, sample, limit, advice) -> list[dict]:
    """Price up to ``ADVISOR_CANDIDATES_PRICED`` candidates on the same first seeds (the sample, or fewer
    when the limit stops it); best first."""
    before = tallies.get(protocol, sample, limit)
    if before.runs < sample:
        advice.stopped = limit.name
    advice.sample_seeds = before.runs
    advice.sample_runs_violating_it_before = runs_showing(before, invariant)
    priced: list[dict[str, Any]] = []
    for candidate in clean[:ADVISOR_CANDIDATES_PRICED]:
        if priced and limit.expired():
            advice.stopped = limit.name
            limit.note("advisor")
            break
        tally = tallies.get(candidate, before.runs, limit)
        entry = _measured(family, candidate, protocol, invariant, tally, before)
        entry["_protocol"] = candidate
        priced.append(entry)
    priced.sort(key=cost_key)
    advice.priced = [{k: v for k, v in p.items() if not k.startswith("_")} for p in priced]
    return priced


def work_done(entry: dict) -> float:
    """The work done a priced candidate is ranked by: its share applied safely where the family tells it
    apart, else its share applied (0 when the family measures neither)."""
    share = entry.get("safe_progress_share")
    if share is None:
        share = entry.get("progress_share")
    return share or 0.0


def cost_key(entry: dict) -> tuple:
    """How priced candidates are ordered, best first: doing work at all (one that applies nothing is safe for
    nothing), no run of the sample violating the invariant, then the
    fewest such runs, no new violation, the fewest new, the most work done safely (:func:`work_done`), the
    fewest availability findings per run, and the label (so ties break the same way everywhere)."""
    return (bool(entry.get("applies_nothing")), entry["sample_runs_violating_it"] > 0, entry["_share_it"],
            entry["sample_new_violations"] > 0,
            entry["_share_new"], -work_done(entry), entry["availability_per_run"], entry["protocol"])


def _measured(family, candidate, protocol, invariant, tally, before) -> dict:
    progress = family.progress_share(tally.measures)
    safe = family.safe_progress_share(tally.measures)
    runs = max(1, tally.runs)
    scale = runs / max(1, before.runs)  # the protocol as given, on as many seeds
    if invariant_of(invariant) == invariant:
        new = sum(max(0.0, n - before.by_invariant[name] * scale) for name, n in tally.by_invariant.items()
                  if name != invariant)
    else:  # a finding: the other findings, of any invariant, are what else the candidate breaks
        new = sum(max(0.0, n - before.by_finding.get(name, 0) * scale) for name, n in tally.by_finding.items()
                  if name != invariant)
    it = runs_showing(tally, invariant)
    return {
        "protocol": candidate.label, "changes": candidate.changes_from(protocol), "sample_seeds": tally.runs,
        "availability_per_run": round(sum(tally.counted.values()) / runs, 4),
        "progress_share": None if progress is None else round(progress, 4),
        "safe_progress_share": None if safe is None else round(safe, 4),
        "sample_violating_runs": tally.violating_runs,
        "sample_runs_violating_it": it,
        "sample_new_violations": round(new), "applies_nothing": tally.applies_nothing(family),
        "_share_it": it / runs, "_share_new": new / runs,
    }


def _verify(family, protocol, invariant, priced, tallies, limit, advice, bound) -> list[dict]:
    """Prove and verify the best priced candidates clean on the sample (up to ``ADVISOR_CANDIDATES_VERIFIED``;
    the best one always): each gets its exhaustive ``proof`` within ``bound`` events, and, unless the proof
    found a violation, the counts over every seed of the sweep.  Returns the entries tried, in cost order."""
    tried = []
    for entry in priced[:ADVISOR_CANDIDATES_VERIFIED]:
        first = entry is priced[0]
        if entry["sample_runs_violating_it"] and not first:
            continue  # its sample already violates the invariant: not a fix
        if limit.expired() and not first:
            advice.stopped = limit.name
            limit.note("advisor")
            break
        tried.append(entry)
        if not entry["sample_runs_violating_it"]:
            entry["proof"] = tallies.proof(entry["_protocol"], invariant, bound, limit.deadline)
            if entry["proof"]["status"] == "disproved":
                continue  # an order the seeds never drew breaks it: no need to count the seeds
        tally = tallies.get(entry["_protocol"], tallies.seeds, limit)
        # the protocol as given, on the same seeds: the sweep's own tally when every seed was verified
        before = None
        if tally.runs >= tallies.seeds:
            before = tallies.get(protocol, tally.runs, None if protocol in tallies.full else limit)
        if before is not None and before.runs != tally.runs:
            before = None  # the limit stopped it short: no count of the same seeds to compare with
        entry["_full"] = _measured(family, entry["_protocol"], protocol, invariant, tally,
                                   before or tallies.get(protocol, advice.sample_seeds, limit))
        entry.update(runs_violating_it=runs_showing(tally, invariant), verified_seeds=tally.runs,
                     runs_violating_invariant=(None if invariant_of(invariant) == invariant
                                               else tally.by_invariant[invariant_of(invariant)]),
                     runs_violating_it_before=None if before is None else runs_showing(before, invariant),
                     violating_runs=tally.violating_runs)
        if tally.runs < tallies.seeds:
            advice.stopped = limit.name
            limit.note("advisor")
        if advice.stopped:
            break
    return tried


def _recommend(advice: Advice, count: int, removed_by: list[str], entry: dict, runner_up: dict | None = None,
               still_shows: dict[str, list[str]] | None = None) -> None:
    advice.changes_needed = count
    advice.proof = entry.get("proof")
    advice.runner_up = runner_up
    advice.removed_by = removed_by
    advice.recommended = entry["protocol"]
    advice.order_still_shows = list((still_shows or {}).get(entry["protocol"], []))
    advice.changes = entry["changes"]
    advice.sample_violating_runs = entry["sample_violating_runs"]
    advice.sample_runs_violating_it = entry["sample_runs_violating_it"]
    advice.availability_per_run = entry["availability_per_run"]
    advice.progress_share = entry["progress_share"]
    advice.safe_progress_share = entry["safe_progress_share"]
    verdict = _verdict(entry)
    advice.fixes = {"fix": True, "partial improvement": False, "disproved": False, "applies nothing": False,
                    "does not fix": False, "fixes this finding only": False}.get(verdict)
    if "runs_violating_it" in entry:  # verified: its numbers are of the sweep's own seeds
        advice.verified_seeds = entry["verified_seeds"]
        advice.runs_violating_it = entry["runs_violating_it"]
        advice.runs_violating_invariant = entry.get("runs_violating_invariant")
        advice.runs_violating_it_before = entry["runs_violating_it_before"]
        advice.violating_runs = entry["violating_runs"]
        advice.availability_per_run = entry["_full"]["availability_per_run"]
        advice.progress_share = entry["_full"]["progress_share"]
        advice.safe_progress_share = entry["_full"]["safe_progress_share"]
