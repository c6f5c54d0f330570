"""What the query may refer to: streams, event types and their attributes.

A :class:`Schema` comes either from ``CREATE STREAM`` declarations (closed:
only the declared streams and event types exist) or is inferred from the
input's Arrow schema, where one column holds the event type and every other
column is an attribute that *any* event type may carry.  With inference the
event type names are open (the data decides them) unless a list is given.

The checker only needs to know whether a name exists and the *kind* of an
attribute (number, string or boolean), to reject e.g. ``name > 3``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import pyarrow as pa

from kleene.language.ast import AttrType, StreamDecl
from kleene.language.errors import DataError, QueryError

__all__ = ["AttrKind", "Schema", "kind_of"]

AttrKind = Literal["number", "string", "boolean"]

_KINDS: dict[str, AttrKind] = {
    "int": "number",
    "double": "number",
    "primary_time": "number",
    "string": "string",
    "boolean": "boolean",
}


def kind_of(attr_type: AttrType) -> AttrKind:
    """The kind the checker reasons with: every numeric or time type is a number."""
    return _KINDS[attr_type]


def _arrow_attr_type(t: pa.DataType) -> AttrType | None:
    """The CEQL attribute type for an Arrow column type, None if unusable."""
    if pa.types.is_dictionary(t):
        return _arrow_attr_type(t.value_type)
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_integer(t) or pa.types.is_duration(t):
        return "int"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "string"
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return "primary_time"
    return None


class Schema:
    """Streams -> event types -> ordered, typed attributes.

    ``events`` maps each known event type to its attributes in declaration
    order.  ``streams`` maps stream names to their event types; None means
    any stream name is accepted and carries every event type.  When
    ``shared_attributes`` is given, event types are open: any name is an
    event type and carries exactly those attributes.
    """

    def __init__(
        self,
        events: Mapping[str, Mapping[str, AttrType]],
        streams: Mapping[str, Sequence[str]] | None = None,
        *,
        shared_attributes: Mapping[str, AttrType] | None = None,
        text_columns: Iterable[str] = (),
        examples: Mapping[str, str] | None = None,
    ) -> None:
        self._events = {name: dict(attrs) for name, attrs in events.items()}
        # Inferred string columns whose kind is left to the data: a CSV column
        # of numbers with one bad value is read as strings, and that bad value
        # must be reported as a bad row, not the whole query as wrong.
        self._text_columns = frozenset(text_columns)
        # Inferred string columns the data showed to hold text (a value of each):
        # the checker may then reject ``carrier > 60`` as a query error.
        self.examples = dict(examples or {})
        self._streams = None if streams is None else {s: tuple(e) for s, e in streams.items()}
        self._shared = None if shared_attributes is None else dict(shared_attributes)

    # ------------------------------------------------------------ building
    @classmethod
    def from_decls(cls, decls: Sequence[StreamDecl], source: str = "") -> Schema:
        """The closed schema declared by ``CREATE STREAM`` statements.

        An event type declared in several streams must agree on the kind of
        each attribute it repeats; its attributes are the union, in order.
        """
        events: dict[str, dict[str, AttrType]] = {}
        streams: dict[str, list[str]] = {}
        for decl in decls:
            if decl.name in streams:
                raise QueryError(
                    f"stream {decl.name!r} is declared twice",
                    decl.span.line, decl.span.column, source,
                )
            names = streams.setdefault(decl.name, [])
            for event in decl.events:
                if event.name in names:
                    raise QueryError(
                        f"event type {event.name!r} is declared twice in stream {decl.name!r}",
                        event.span.line, event.span.column, source,
                    )
                names.append(event.name)
                attrs = events.setdefault(event.name, {})
                seen: set[str] = set()
                for attr, attr_type in event.attributes:
                    span = getattr(attr, "span", event.span)
                    if attr in seen:
                        raise QueryError(
                            f"attribute {attr!r} is declared twice in event type {event.name!r}",
                            span.line, span.column, source,
                        )
                    seen.add(attr)
                    old = attrs.get(attr)
                    if old is not None and kind_of(old) != kind_of(attr_type):
                        raise QueryError(
                            f"attribute {attr!r} of event type {event.name!r} is {old} "
                            f"in one stream and {attr_type} in another",
                            span.line, span.column, source,
                        )
                    attrs.setdefault(str(attr), attr_type)
        return cls(events, streams)

    @classmethod
    def from_arrow(
        cls,
        arrow_schema: pa.Schema,
        type_column: str = "type",
        event_types: Iterable[str] | None = None,
        textual: Mapping[str, str] | None = None,
        *,
        needs_type_column: bool = True,
    ) -> Schema:
        """Infer a schema from the input's columns.

        Every column except ``type_column`` is an attribute of every event
        type; columns of types a predicate cannot use (lists, structs,
        binary) are left out.  Event type names are open unless
        ``event_types`` lists them.  Stream names are open.  A string
        column's kind is left to the data (its values may be numbers
        written as text) unless ``textual`` names it, with a value that
        shows it holds text: then it is a string attribute.  A query that
        names no event type (only the wildcard ``_``) passes
        ``needs_type_column=False``: the input may then have no type column.
        """
        if needs_type_column and arrow_schema.get_field_index(type_column) < 0:
            columns = ", ".join(arrow_schema.names[:12]) + (", ..." if len(arrow_schema) > 12 else "")
            raise DataError(
                f"the input has no event type column {type_column!r} (its columns: {columns}); "
                "name the column that holds the event types with --type-column "
                "(type_column= in Python)"
            )
        shared: dict[str, AttrType] = {}
        for field in arrow_schema:
            if field.name == type_column:
                continue
            attr_type = _arrow_attr_type(field.type)
            if attr_type is not None:
                shared[field.name] = attr_type
        examples = {k: v for k, v in (textual or {}).items() if shared.get(k) == "string"}
        text = [name for name, t in shared.items() if t == "string" and name not in examples]
        if event_types is None:
            return cls({}, None, shared_attributes=shared, text_columns=text, examples=examples)
        return cls(
            {name: shared for name in event_types}, None, text_columns=text, examples=examples
        )

    # ------------------------------------------------------------- queries
    @property
    def event_types_closed(self) -> bool:
        """True when only the listed event types exist."""
        return self._shared is None

    @property
    def streams_closed(self) -> bool:
        """True when only the declared streams exist."""
        return self._streams is not None

    @property
    def event_types(self) -> tuple[str, ...]:
        """The known event type names, in declaration order."""
        return tuple(self._events)

    @property
    def streams(self) -> Mapping[str, tuple[str, ...]] | None:
        """Declared streams and their event types; None when open."""
        return self._streams

    def has_event_type(self, name: str) -> bool:
        return not self.event_types_closed or name in self._events

    def has_stream(self, name: str) -> bool:
        return self._streams is None or name in self._streams

    def stream_event_types(self, stream: str) -> frozenset[str] | None:
        """Event types a stream carries; None when any type may occur."""
        if self._streams is None or stream not in self._streams:
            return None
        return frozenset(self._streams[stream])

    def attributes(self, event_type: str) -> Mapping[str, AttrType] | None:
        """Ordered attributes of an event type; None for an unknown type."""
        if event_type in self._events:
            return self._events[event_type]
        return self._shared

    def all_attributes(self) -> Mapping[str, AttrType]:
        """Every attribute of any event type (first declaration wins)."""
        merged: dict[str, AttrType] = dict(self._shared or {})
        for attrs in self._events.values():
            for name, attr_type in attrs.items():
                merged.setdefault(name, attr_type)
        return merged

    def attribute_type(self, event_type: str | None, attr: str) -> AttrType | None:
        """The declared type of ``attr``; with ``event_type`` None, of any event type."""
        attrs = self.all_attributes() if event_type is None else self.attributes(event_type)
        return None if attrs is None else attrs.get(attr)

    def attribute_kind(self, event_type: str | None, attr: str) -> AttrKind | None:
        """``number``, ``string`` or ``boolean``; None if unknown or decided per value."""
        if attr in self._text_columns:
            return None
        attr_type = self.attribute_type(event_type, attr)
        return None if attr_type is None else kind_of(attr_type)

    def __repr__(self) -> str:
        if self._shared is not None:
            return f"Schema(open, attributes={self._shared!r})"
        return f"Schema(events={self._events!r}, streams={self._streams!r})"
