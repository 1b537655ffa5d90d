"""The visited set's C table (sim/search/_fingerprints.c); everything else is in pyproject.toml.

Optional: where it does not compile, the install goes on and the search keeps its fingerprints in a Python set
(sim/search/visited.py), with the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("sim.search._fingerprints", ["sim/search/_fingerprints.c"], optional=True)])
