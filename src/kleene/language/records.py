"""Frozen dataclasses that cost less to define: the query AST's classes (:mod:`kleene.language.ast`).

``dataclass(frozen=True)`` compiles six methods per class from generated source with ``exec``
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``): for
the AST's 38 classes that was ~20 ms of every ``kleene run``, most of it compiling.
:func:`frozen` gives a class the same methods, with the same behaviour, for a sixth of that:
the fields are registered by ``dataclass(init=False, repr=False, eq=False)`` (which compiles
nothing), ``__init__`` is compiled alone (its signature and speed are those of the generated
one), and the other five are closures shared in shape by every class.

What stays as with ``dataclass(frozen=True)``: :func:`dataclasses.fields`,
:func:`dataclasses.replace`, :func:`dataclasses.is_dataclass` and ``__match_args__``; equality
over the fields with ``compare=True``, only between instances of the same class; the hash of
the same tuple; the repr of the fields with ``repr=True``; assigning or deleting a field raises
:class:`dataclasses.FrozenInstanceError`; pickling and copying.  What differs:
``__dataclass_params__`` says ``init=False, repr=False, eq=False, frozen=False`` (the methods
are this module's), and a repr does not guard against a node that contains itself (a frozen
tree cannot).  Only what the AST uses is supported: plain defaults, no ``default_factory``,
keyword-only fields, ``InitVar``, ``__post_init__`` or slots (a class using them is refused).
``tests/language/test_records.py`` checks every AST class against ``dataclass(frozen=True)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T", bound=type)

_new_setattr = object.__setattr__


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: T) -> T:
    """``cls`` as ``dataclass(frozen=True)`` makes it, without compiling five of its methods.

    The class needs a docstring (the dataclass would write one from its signature, through
    :func:`inspect.signature`, another cost of each definition).
    """
    if "__post_init__" in cls.__dict__ or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}: frozen() supports neither __post_init__ nor __slots__")
    if not cls.__dict__.get("__doc__"):
        raise TypeError(f"{cls.__name__}: frozen() needs a docstring")
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)  # fields; the same class back
    fields = dataclasses.fields(cls)
    for f in fields:
        if f.default_factory is not dataclasses.MISSING or f.kw_only or not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: frozen() supports plain fields with plain defaults")
    names = tuple(f.name for f in fields)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    shown = tuple(f.name for f in fields if f.repr)
    methods: dict[str, Callable[..., Any]] = {
        "__init__": _init(cls, fields),
        "__repr__": _repr(shown),
        "__eq__": _eq(_key(compared)),
        "__hash__": _hash(_key(hashed)),
        "__setattr__": _setattr(cls, names),
        "__delattr__": _delattr(cls, names),
    }
    for name, method in methods.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)
    return cls


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """``__init__(self, a, b=..., ...)`` setting each field past the frozen ``__setattr__``:
    compiled, as the dataclass's (the parser builds many nodes; tools read its signature)."""
    params = ", ".join(["self", *(f.name for f in fields)])
    body = "".join(f"\n    _set(self, {f.name!r}, {f.name})" for f in fields) or "\n    pass"
    namespace: dict[str, Any] = {}
    exec(f"def __init__({params}):{body}", {"_set": _new_setattr}, namespace)  # noqa: S102 - field names only
    init: Callable[..., None] = namespace["__init__"]
    defaults = tuple(f.default for f in fields if f.default is not dataclasses.MISSING)
    if any(f.default is dataclasses.MISSING for f in fields[len(fields) - len(defaults):]):
        raise TypeError(f"{cls.__name__}: a field without a default follows one with a default")
    init.__defaults__ = defaults or None
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return init


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of the fields ``names`` of an instance (as the dataclass's methods build it)."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        (name,) = names
        return lambda self: (getattr(self, name),)
    key: Callable[[Any], tuple[Any, ...]] = attrgetter(*names)
    return key


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


def _setattr(cls: type, names: tuple[str, ...]) -> Callable[[Any, str, Any], None]:
    owner: Any = cls

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    return __setattr__


def _delattr(cls: type, names: tuple[str, ...]) -> Callable[[Any, str], None]:
    owner: Any = cls

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    return __delattr__
