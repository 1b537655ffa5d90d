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
# # Fences: the seed's table, interference, and what safety costs
#
# The workspace family: a planner plans patch steps against a revision, a
# client stamps and dispatches them, an executor applies them behind a fence.
# This notebook computes the seed's verdict table from the model, sweeps the
# four presets over growing interference, and plots safety against the share
# of planned steps actually applied. Every call returns a DataFrame or a
# matplotlib Figure; nothing prints.

# %%
import dataclasses
import os

import pandas as pd

import sim
from sim.core import stats
from sim.families.workspace.matrix import matrix_frame

SEEDS = int(os.environ.get("FENCESIM_NOTEBOOK_SEEDS", "400"))
PRESETS = ["none", "plan", "step", "step-dedupe"]

# %% [markdown]
# ## The seed's verdict table, computed
# One row per (table row, scenario): the model's verdict of the last delivery,
# the article's printed table, and what the article's own fixture code says.

# %%
matrix_frame()

# %% [markdown]
# ## A sweep over interference
# The `seed-fuzz` workload with at most 1, 2, 4 and 8 faults per run. Each row
# counts *violating runs* (runs with at least one safety violation) out of the
# runs of that protocol and level, with a 95% Wilson interval.

# %%
workload = sim.load_workload("seed-fuzz")
rows = []
for level in (1, 2, 4, 8):
    frame = sim.sweep_frame(dataclasses.replace(workload, per_run_max=level), PRESETS, seeds=SEEDS, workers=1)
    for protocol, group in frame.groupby("protocol", sort=False):
        interval = stats.share(int(group["violated"].sum()), len(group))
        rows.append({"protocol": protocol, "faults_per_run": level, "runs": len(group),
                     "violating_runs": int(group["violated"].sum()), "share": interval.value,
                     "low": interval.low, "high": interval.high})
interference = pd.DataFrame(rows)
interference

# %% [markdown]
# The same curves as the review draws them, from a fuzz result (`sim.figures` takes a sweep frame, a
# fuzz result or a review):

# %%
found = sim.fuzz(workload, PRESETS, seeds=SEEDS, workers=1, advise=False)
sim.figures.interference(found, seeds=SEEDS)

# %% [markdown]
# ## Safety against availability
# The plan fence is safe here but loud: it rejects so much that far fewer
# planned steps are applied. The x axis is the share of planned steps applied.

# %%
frame = sim.sweep_frame(workload, PRESETS, seeds=SEEDS, workers=1)
frame.groupby("protocol", sort=False)[["violated", "steps_applied", "steps_planned", "spurious_rejections"]].sum()

# %%
sim.figures.safety_vs_availability(frame)
