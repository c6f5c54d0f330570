"""Names read from query text, with the span they were written at (lark-free, so that a parse
restored from the cache (:mod:`kleene.language.query_cache`) needs neither lark nor the parser).

The AST keeps some names as plain ``str`` (FROM streams, PARTITION BY and WITHIN attributes,
projected and declared attributes); the parser stores them as :class:`Name`, which compares
and hashes exactly like the string and remembers its span for error carets.
"""

from __future__ import annotations

from kleene.language.ast import NO_SPAN, Span

__all__ = ["Name", "name_span"]


class Name(str):
    """A name read from the query text, carrying the span it was written at.

    The AST keeps some names as plain ``str`` (e.g. ``Query.partition_by``);
    using this subclass there lets semantic checks point at the exact name
    without changing the AST's fields.  ``span`` defaults to ``NO_SPAN`` so
    that pickling and copying (which call ``Name(value)``) keep working.
    """

    span: Span

    def __new__(cls, value: str, span: Span = NO_SPAN) -> Name:
        obj = super().__new__(cls, value)
        obj.span = span
        return obj


def name_span(name: str, fallback: Span) -> Span:
    """The span of ``name`` if the parser recorded one, else ``fallback``."""
    span = getattr(name, "span", NO_SPAN)
    return span if isinstance(span, Span) and span != NO_SPAN else fallback
