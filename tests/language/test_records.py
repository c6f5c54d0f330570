"""kleene.language.records.frozen: every AST class behaves as ``dataclass(frozen=True)`` made it.

The reference is :mod:`kleene.language.ast` itself, executed again with ``@frozen`` replaced by
``@dataclass(frozen=True)``: each class's fields, ``__init__`` signature, repr, equality, hash,
frozenness, pickling and :func:`dataclasses.replace` are compared on instances built from the
same arguments.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kleene.language import ast as nodes
from kleene.language.parser import parse
from kleene.language.records import frozen

CLASSES = [c for c in vars(nodes).values() if isinstance(c, type) and c.__module__ == nodes.__name__]


@pytest.fixture(scope="module")
def reference() -> Iterator[types.ModuleType]:
    """kleene.language.ast with every class made by ``dataclass(frozen=True)``."""
    source = Path(nodes.__file__).read_text()
    assert source.count("@frozen\n") == len(CLASSES)
    source = source.replace("@frozen\n", "@dataclass(frozen=True)\n").replace(
        "from kleene.language.records import frozen\n", "from dataclasses import dataclass\n"
    )
    module = types.ModuleType("kleene_ast_reference")
    sys.modules[module.__name__] = module  # dataclasses resolves string annotations there
    try:
        exec(compile(source, "kleene_ast_reference", "exec"), module.__dict__)
        yield module
    finally:
        del sys.modules[module.__name__]


def arguments(cls: type, variant: int = 0) -> list[Any]:
    """Values for the fields of ``cls`` without a default (any values: the methods do not care)."""
    samples: list[Any] = [1, "x", (2, "y"), None, 2.5, True]
    required = [f for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    return [samples[(i + variant) % len(samples)] for i, _ in enumerate(required)]


def test_all_classes_are_checked() -> None:
    assert len(CLASSES) >= 38
    assert all(dataclasses.is_dataclass(c) for c in CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_class_behaves_as_its_frozen_dataclass(cls: type, reference: types.ModuleType) -> None:
    ref = getattr(reference, cls.__name__)
    assert [(f.name, repr(f.default), f.compare, f.repr, f.hash) for f in dataclasses.fields(cls)] == [
        (f.name, repr(f.default), f.compare, f.repr, f.hash) for f in dataclasses.fields(ref)
    ]
    assert str(inspect.signature(cls)) == str(inspect.signature(ref))
    assert cls.__match_args__ == ref.__match_args__
    args = arguments(cls)
    mine, theirs = cls(*args), ref(*args)
    assert repr(mine) == repr(theirs).replace("kleene_ast_reference.", "")
    assert hash(mine) == hash(theirs)
    assert mine == cls(*args) and not mine != cls(*args)
    other = arguments(cls, variant=1)
    assert (mine == cls(*other)) == (theirs == ref(*other))
    assert (mine == theirs) is False  # another class: NotImplemented both ways
    for name in (f.name for f in dataclasses.fields(cls)):
        for act, extra in ((setattr, (0,)), (delattr, ())):
            with pytest.raises(dataclasses.FrozenInstanceError) as got:
                act(mine, name, *extra)
            with pytest.raises(dataclasses.FrozenInstanceError) as expected:
                act(theirs, name, *extra)
            assert str(got.value) == str(expected.value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mine.unknown = 1  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(mine))
    assert copy == mine and repr(copy) == repr(mine)
    if dataclasses.fields(cls):
        first = dataclasses.fields(cls)[0].name
        assert dataclasses.replace(mine, **{first: "changed"}) == cls(
            *(["changed", *args[1:]] if args else []), **({} if args else {first: "changed"})
        )


def test_methods_other_than_init_are_not_compiled_per_class() -> None:
    """Only ``__init__`` is compiled per class (what made the dataclasses cost ~20 ms a run)."""
    for cls in CLASSES:
        assert cls.__init__.__code__.co_filename == "<string>"
        for name in ("__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
            assert getattr(cls, name).__code__.co_filename.endswith("records.py"), (cls, name)


def test_spans_are_outside_equality_and_kept_by_pickling() -> None:
    a = parse("SELECT * FROM S WHERE SELL as a; BUY as b WITHIN 10 EVENTS")
    b = parse("SELECT *\nFROM S\nWHERE SELL as a ;  BUY as b\nWITHIN 10 EVENTS")
    assert a == b and hash(a) == hash(b)
    assert a.query.where.span != b.query.where.span
    restored = pickle.loads(pickle.dumps(b))
    assert restored == b and restored.query.where.span == b.query.where.span
    assert a != parse("SELECT * FROM S WHERE SELL as a; BUY as c WITHIN 10 EVENTS")


def test_what_frozen_does_not_support_is_refused() -> None:
    with pytest.raises(TypeError, match="docstring"):

        @frozen
        class NoDoc:
            x: int

    with pytest.raises(TypeError, match="plain defaults"):

        @frozen
        class Factory:
            """A default factory."""

            x: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="__post_init__"):

        @frozen
        class Post:
            """A __post_init__."""

            x: int

            def __post_init__(self) -> None:
                pass
