"""The registry of fault classes (faults.REGISTRY): each class written once -- points, the transitions it
applies to, its injector, its doc line -- and the alphabet, the cruel grid, the driver and the docs read it."""

from __future__ import annotations

from pathlib import Path

from sim.families.effects import cruel, faults
from sim.families.effects.faults import REGISTRY, FaultEvent
from sim.families.effects.points import RECOVERY_POINTS
from sim.families.effects.workflow_file import parse_tables

REPO = Path(__file__).resolve().parents[3]


def test_the_docs_table_of_faults_is_generated_from_the_registry():
    """docs/effects.md holds the table of fault classes exactly as the registry renders it."""
    assert faults.docs_table() in (REPO / "docs" / "effects.md").read_text(encoding="utf-8"), (
        "docs/effects.md's table of faults differs from faults.docs_table(); paste:\n" + faults.docs_table())


def test_the_names_points_and_cruel_faults_are_read_off_the_registry():
    """FAULT_CLASSES, FAULT_POINTS and CRUEL_FAULTS are the registry's, in its order."""
    assert faults.FAULT_CLASSES == tuple(f.name for f in REGISTRY)
    assert faults.FAULT_POINTS == {f.name: f.points for f in REGISTRY}
    assert faults.CRUEL_FAULTS == ("terminate", "duplicate", "delay_ack", "change_owner")


def test_every_class_has_an_injector_unless_it_strikes_at_a_recovery_moment():
    """A class without an injector strikes only at a recovery moment, where the driver applies it itself."""
    for fault in REGISTRY:
        assert (fault.inject is None) == (set(fault.points) <= set(RECOVERY_POINTS)), fault.name


def test_which_transitions_a_class_applies_to_is_the_registrys():
    """The alphabet offers a class only on the transitions its registry entry applies to."""
    workflow = parse_tables([
        {"name": "fetch", "class": "read", "object": "lockfile"},
        {"name": "charge", "class": "append", "object": "ledger_entry", "compensation": "refund"},
        {"name": "ship", "class": "irreversible", "object": "release"},
    ], "f.toml:1")
    alphabet = faults.alphabet(workflow, faults.FAULT_CLASSES)
    where = {(e.fault, e.transition) for e in alphabet}
    assert ("read_changes", "fetch") in where and ("read_changes", "charge") not in where
    assert ("compensation_fails", "charge") in where and ("compensation_fails", "ship") not in where
    assert ("slow_approval", "ship") in where and ("slow_approval", "charge") not in where
    assert ("unprovable", "fetch") not in where and ("postcondition_fails", "charge") not in where


def test_the_cruel_grid_is_the_registrys_cruel_classes_at_their_points():
    """Each cruel cell is one registry class at one of its points on one transition of the saga."""
    cells = cruel.cells(cruel.cruel_workload())
    assert len(cells) == 4 * 5 * 4
    assert all(isinstance(c.events[0], FaultEvent) and c.events[0].point in faults.FAULT_POINTS[c.events[0].fault]
               for c in cells)


def test_the_formats_page_lists_the_registrys_classes():
    """docs/formats.md's list of the effects family's fault classes is the registry's, in its order."""
    import re

    page = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    listed = re.search(r"; effects (`[^;|]*?`) \(reads only\)", page)
    assert listed is not None
    assert tuple(re.findall(r"`([a-z_]+)`", listed.group(1))) == faults.FAULT_CLASSES
