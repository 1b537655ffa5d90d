"""The seed's claims about which protocol is safe, judged by what a sweep found.

The claims are hypotheses, not requirements: the search decides, and where a
claim does not survive it, this says so plainly, citing the counts.
"""

from __future__ import annotations

from sim.families.workspace.knobs import WorkspaceKnobs


def judge(by_protocol: dict[str, dict], protocols) -> list[dict]:
    """Claims that apply to the protocols swept, each with ``holds`` and the evidence."""
    out = []
    for protocol in protocols:
        tally = by_protocol[protocol.label]
        knobs = WorkspaceKnobs.of(protocol)
        found = tally["violating_runs_by_invariant"]
        runs = tally["runs"]
        if knobs.fence != "none":
            out.append(_claim(protocol.label, "P1: every applied step saw base_rev == rev at apply (stale_accept)",
                              found["stale_accept"], runs, ("stale_accept",)))
        if knobs.dedupe == "journal":
            out.append(_claim(protocol.label, "P2: the journal keeps every applied step's key (journal_loss)",
                              found["journal_loss"], runs, ("journal_loss",)))
            out.append(_claim(protocol.label, "a persisted journal makes retries idempotent (duplicate_effect)",
                              found["duplicate_effect"], runs, ("duplicate_effect",)))
        if knobs.fence == "step" and knobs.dedupe == "journal":
            out.append(_claim(
                protocol.label,
                "a step-level fence plus a persisted journal prevents lost updates (lost_update)",
                found["lost_update"], runs, ("lost_update",),
            ))
        if knobs.fence == "plan":
            spurious = tally["spurious_rejections"]
            out.append({
                "protocol": protocol.label,
                "claim": "a plan-level fence is safe but loud in the wrong places (spurious rejections)",
                "holds": sum(found.values()) == 0 and spurious > 0, "invariants": sorted(found),
                "violating_runs": tally["violating_runs"], "runs": runs,
                "evidence": f"{tally['violating_runs']} violating runs, {spurious} spurious rejections in {runs} runs",
            })
    return out


def _claim(protocol: str, claim: str, violating_runs: int, runs: int, invariants: tuple[str, ...]) -> dict:
    """A claim as the sweep judged it; the review settles it against the rest of its evidence
    (:func:`sim.search.claims_evidence.settle`)."""
    return {
        "protocol": protocol, "claim": claim, "invariants": list(invariants), "holds": violating_runs == 0,
        "violating_runs": violating_runs, "runs": runs,
        "evidence": (f"not found in {runs} runs (sampling, not a proof)" if violating_runs == 0
                     else f"DOES NOT HOLD: {violating_runs} of {runs} runs violate it; see the minimal order below"),
    }
