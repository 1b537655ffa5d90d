"""A real executor under the model's faults: the reference executor (a git working tree and a SQLite
journal, in its own process), the driver that plays an event order against it, and conformance
between the model and the real system (``fencesim conform``)."""
