"""Arrow's compute kernels by pyarrow.compute's names, without importing ``pyarrow.compute``.

Why: importing ``pyarrow.compute`` costs ~27 ms of CPU on every process that does (it builds a
Python wrapper, a signature and a docstring for each of Arrow's ~300 kernels), a tenth of a
``kleene run`` over 100,000 events; and pyarrow's own methods (``Array.cast``, ``take``,
``fill_null``, ``is_valid``, ``RecordBatch.filter``, ...) import it on their first call.  The
kernels themselves are reached through ``call_function`` of ``pyarrow._compute`` (~4 ms to
import), which is what each of those wrappers calls.

``import kleene.kernels as pc`` is a drop-in for ``import pyarrow.compute as pc`` in kleene's
modules: the kernels listed in :data:`OPTIONS` (those kleene calls on its usual paths) are
wrapped here, on first use, as pyarrow.compute wraps them (the leading arguments are the
kernel's inputs, the rest build its options class); :func:`cast`, :func:`take` and
:func:`fill_null` repeat pyarrow.compute's own definitions; any other name is taken from
``pyarrow.compute``, imported then (PEP 562).  Where ``pyarrow._compute`` is missing (a pyarrow
that moved it), everything comes from ``pyarrow.compute``.  Call these instead of the methods
of pyarrow's arrays on a path that should not load ``pyarrow.compute``.
``tests/api/test_kernels.py`` checks every entry against pyarrow.compute's own wrapper.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pyarrow as pa

try:
    import pyarrow._compute as _compute
except ImportError:  # pragma: no cover - a pyarrow without it: the public module, at its cost
    import pyarrow.compute as _compute

call_function: Callable[..., Any] = _compute.call_function
"""``pyarrow.compute.call_function``: a kernel by its name, its inputs, its options or None."""

OPTIONS: dict[str, str | None] = {
    # element-wise, no options
    "abs": None, "add": None, "and": None, "and_kleene": None, "ascii_is_decimal": None,
    "binary_join": None, "equal": None, "greater": None, "greater_equal": None, "if_else": None,
    "invert": None, "is_finite": None, "is_nan": None, "is_valid": None, "less": None,
    "less_equal": None, "list_flatten": "ListFlattenOptions", "list_parent_indices": None,
    "list_value_length": None, "not_equal": None, "or": None, "or_kleene": None,
    "utf8_lower": None, "utf8_trim_whitespace": None, "starts_with": "MatchSubstringOptions",
    # with options
    "all": "ScalarAggregateOptions", "any": "ScalarAggregateOptions",
    "binary_join_element_wise": "JoinOptions", "dictionary_encode": "DictionaryEncodeOptions",
    "filter": "FilterOptions", "index_in": "SetLookupOptions", "is_in": "SetLookupOptions",
    "is_null": "NullOptions", "match_substring": "MatchSubstringOptions",
    "match_substring_regex": "MatchSubstringOptions", "unique": None,
}
"""The kernels wrapped here, by Arrow's name, with the options class pyarrow.compute gives each
(None: the kernel takes no options)."""

_PYTHON_NAMES = {"and_": "and", "or_": "or"}
"""pyarrow.compute's names for kernels named after Python keywords."""


def cast(arr: Any, target_type: Any = None, safe: bool | None = None, options: Any = None) -> Any:
    """``pyarrow.compute.cast`` (and ``Array.cast``): safe unless ``safe=False``."""
    if options is None:
        target_type = pa.types.lib.ensure_type(target_type)
        options = _compute.CastOptions.unsafe(target_type) if safe is False else _compute.CastOptions.safe(target_type)
    elif safe is not None or target_type is not None:
        raise ValueError("Must either pass values for 'target_type' and 'safe' or pass a value for 'options'")
    return call_function("cast", [arr], options)


def take(data: Any, indices: Any, *, boundscheck: bool = True) -> Any:
    """``pyarrow.compute.take`` (and the ``take`` methods of arrays, batches and tables)."""
    return call_function("take", [data, indices], _compute.TakeOptions(boundscheck=boundscheck))


def fill_null(values: Any, fill_value: Any) -> Any:
    """``pyarrow.compute.fill_null`` (and ``Array.fill_null``): ``coalesce`` with a value of the
    array's type."""
    if not isinstance(fill_value, (pa.Array, pa.ChunkedArray, pa.Scalar)):
        fill_value = pa.scalar(fill_value, type=values.type)
    elif values.type != fill_value.type:
        fill_value = pa.scalar(fill_value.as_py(), type=values.type)
    return call_function("coalesce", [values, fill_value])


def _wrap(name: str, options_class: str | None) -> Callable[..., Any]:
    """A kernel's function as ``pyarrow.compute`` makes it: its first ``arity`` positional
    arguments are its inputs (all of them for a kernel of any arity), the others and the
    keywords build ``options_class``."""
    if options_class is None:
        def plain(*args: Any) -> Any:
            return call_function(name, list(args))

        plain.__name__ = name
        return plain
    cls = getattr(_compute, options_class)
    arity = _compute.get_function(name).arity

    def with_options(*args: Any, options: Any = None, **kwargs: Any) -> Any:
        inputs, extra = (args, ()) if arity is Ellipsis else (args[:arity], args[arity:])
        if extra or kwargs:
            if options is not None:
                raise TypeError(f"Function {name!r} called with both an 'options' argument and additional arguments")
            options = cls(*extra, **kwargs)
        return call_function(name, list(inputs), options)

    with_options.__name__ = name
    return with_options


def __getattr__(name: str) -> Any:
    """A kernel of :data:`OPTIONS`, wrapped on first use and kept; any other name from
    ``pyarrow.compute`` (imported then)."""
    arrow = _PYTHON_NAMES.get(name, name)
    if arrow in OPTIONS:
        found = _wrap(arrow, OPTIONS[arrow])
    else:
        found = getattr(importlib.import_module("pyarrow.compute"), name)
    globals()[name] = found
    return found
