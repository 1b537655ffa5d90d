"""The systems under test, as SimPy processes.  Models never draw random
numbers for faults and never check invariants."""
