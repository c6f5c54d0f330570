"""The batch's surviving objects go straight to the oldest generation (kleene.api._promote)."""

from __future__ import annotations

import gc

import pyarrow as pa

import kleene
from kleene import api


def test_promote_leaves_nothing_frozen_and_collection_on() -> None:
    q = kleene.compile("SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS")
    rows = [{"type": t} for t in "A B A B".split()]
    assert sorted(m.positions for m in q.matches(pa.Table.from_pylist(rows))) == [(0, 1), (0, 3), (2, 3)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_promote_respects_objects_someone_else_froze() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        api._promote()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_cyclic_garbage_is_still_collected() -> None:
    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = len([o for o in gc.get_objects() if isinstance(o, Node)])
    del a, b
    api._promote()
    gc.collect()
    assert len([o for o in gc.get_objects() if isinstance(o, Node)]) == alive - 2
