# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Counterexamples: find, shrink, draw, replay, fix
#
# The seed recommends a step-level fence with a persisted journal. Here the
# search looks for an event order that breaks it anyway, shrinks it to the
# shortest order, draws it as a swimlane, replays it with no seed, and asks the
# advisor for the smallest change to the design that removes it.

# %%
import os

import pandas as pd

import sim

SEEDS = int(os.environ.get("FENCESIM_NOTEBOOK_SEEDS", "400"))
family = sim.family("workspace")
workload = sim.load_workload("seed-fuzz")

# %% [markdown]
# ## Find and shrink

# %%
found = sim.fuzz(workload, ["step-dedupe"], seeds=SEEDS, workers=1)
pd.DataFrame([{"invariant": c.invariant, "seed": c.seed, "events before": len(c.found_order),
               "events after": len(c.events), "shortest proved": c.shrunk.shortest_proved,
               "order": " ; ".join(map(str, c.events))} for c in found.counterexamples])

# %% [markdown]
# ## The minimal order as a swimlane
# One lane per actor; the injected fault in orange, the violating delivery in red.

# %%
example = found.counterexamples[0]
sim.figures.swimlane(found, 0)

# %% [markdown]
# ## Replay with no seed
# The order is data: build the scenario file's object and replay it under any protocol.

# %%
scenario = family.counterexample(workload, example.protocol, example.invariant, example.events,
                                 {"name": "notebook_counterexample", "invariant": example.invariant})
pd.DataFrame([{"protocol": p, "outcome": (r := sim.run_scenario(scenario, p)).outcome,
               "violations": ", ".join(v.invariant for v in r.violations) or "none"}
              for p in ["none", "plan", "step", "step-dedupe", "step-dedupe,drift_check=reject"]])

# %% [markdown]
# ## The advisor's smallest fix
# Candidates change as few knobs of the design as possible and never drop a
# mechanism it has; each is priced by a sample sweep: violations left, work
# done, spurious rejections.

# %%
advice = example.advice
pd.DataFrame(advice.priced)

# %% [markdown]
# ## The state the counterexample ends in, and stepping through it
# `sim.state_html` renders the state as the explorer's tables (files and their hunks, the plan, the journal,
# the messages in flight). `sim.serve(scenarios=[...])` starts the same explorer as `fencesim serve` in the
# background (`app.url`, `app.stop()`; `docs/serve.md`).

# %%
sim.state_html(scenario, example.protocol)
