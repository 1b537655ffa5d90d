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
# # Exposure: the worked example, what-if rates, simulated against arithmetic
#
# The durable-effects family (`effects`): long agent tasks whose side effects
# pass intent, dispatch, commit and receipt. The seed's worked example: 10,000
# tasks x 7 transitions, 4.1% ambiguous, 60% of those already committed, 99.7%
# reconcilable.

# %%
import os

import pandas as pd

import sim
from sim.families.effects import exposure

TASKS = int(os.environ.get("FENCESIM_NOTEBOOK_SEEDS", "400")) * 5

# %% [markdown]
# ## The worked example, exactly
# Decimal arithmetic, nothing rounded on the way; the human exceptions are
# shown rounded half up.

# %%
exposure.analytic_table()

# %% [markdown]
# ## What if
# The same arithmetic with other ambiguity and reconciliation rates.

# %%
pd.DataFrame([{"ambiguous_rate": a, "reconcile_rate": r, **exposure.analytic_json(ambiguous_rate=a, reconcile_rate=r)}
              for a in ("0.01", "0.041", "0.10") for r in ("0.99", "0.997")])

# %% [markdown]
# ## Simulated against arithmetic
# The model runs the tasks under each preset with the worked example's fault
# rates; counts are scaled to 10,000 tasks with exact Poisson intervals.

# %%
simulated = exposure.simulate(seeds=TASKS)
table = exposure.simulated_table(simulated)
table[table.metric.isin(["ambiguous", "already_committed", "duplicate_effects", "human_exceptions"])]

# %% [markdown]
# The review's exposure figure, from a fuzz result of the presets (the bars are drawn where the 95%
# intervals are narrow enough to read):

# %%
found = sim.fuzz("effects-saga", ["unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile"],
                 seeds=TASKS // 5, workers=1, advise=False)
sim.figures.exposure(found, seeds=TASKS)
