"""Semantic checks of a parsed query, before anything is compiled.

The parser accepts every CEQL sentence; this module rejects the ones that
cannot mean anything (unknown names, a string compared with a number, a
filter over a variable its pattern never binds, a regex RE2 cannot compile)
and the ones kleene cannot evaluate yet, each with a :class:`QueryError`
that points at the offending text.  Running these checks up front means the
compiler and the runtime never see a malformed query.

Mistakes are reported before unsupported constructs, so that a user first
learns what is wrong and only then what is missing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kleene.language import ast
from kleene.language.ast import NO_SPAN, Span
from kleene.language.conditions import (
    has_conditions,
    problem,
    unsupported_with_conditions,
    var_attrs,
)
from kleene.language.errors import QueryError, UnsupportedError
from kleene.language.names import name_span
from kleene.language.normal_form import unfold_outer_ors
from kleene.language.schema import AttrKind, Schema
from kleene.language.scopes import lift_outer_conditions
from kleene.language.selectors import desugar_selectors
from kleene.language.variables import (
    WILDCARD,
    bound_variables,
    event_types_of,
    single_event,
    variable_event_types,
)

if TYPE_CHECKING:
    import re2

__all__ = ["bound_variables", "check", "compile_like"]

"""Strategies that compare whole matches: evaluated on SELECT * only, for now."""
_WILDCARD_IS_NO_VARIABLE = (
    "the wildcard _ matches any event but binds no variable: name its event with AS"
)
_LIMIT_RE = re.compile(r"\blimit\s+(-?\s*\d)", re.IGNORECASE)


def compile_like(pattern: str) -> re2._Regexp:
    """Compile a LIKE regex with RE2 (linear time); raises ``re2.error``."""
    import re2  # only for LIKE (start-up time of every other query)

    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def _known(names: Iterable[str]) -> str:
    listed = sorted(names)
    if not listed:
        return ""
    shown = ", ".join(listed[:10]) + (", ..." if len(listed) > 10 else "")
    return f" (known: {shown})"


def _kind_of_const(value: object) -> AttrKind:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    return "number"


def _a(kind: AttrKind) -> str:
    return {"number": "a number", "string": "a string", "boolean": "a boolean"}[kind]


class _Checker:
    def __init__(self, source: str, schema: Schema | None) -> None:
        self.source = source
        self.schema = schema
        self.from_types: frozenset[str] | None = None
        self.everywhere: dict[str, frozenset[str]] = {}
        """Every variable of the query -> its event types (to tell unknown from misplaced)."""
        self.scope: dict[str, frozenset[str]] = {}
        """The variables of the pattern the FILTER being checked applies to."""
        self.from_streams: tuple[str, ...] = ()
        self.unlifted: dict[int, str] = {}
        """id(atom) -> why an atom naming an outer variable stays where it is written."""
        self.shown: dict[str, str] = {}
        """A variable the checker made up (kleene.language.scopes) -> how messages name it."""
        self.written: frozenset[str] = frozenset()
        """The variables of the query as written (the others were made up by rewrites)."""
        self.monitored: dict[int, frozenset[str]] = {}
        """id(atom) on UNLESS's right -> the left side's variables it reads (kleene.language.scopes)."""

    def error(self, message: str, span: Span) -> QueryError:
        return QueryError(message, span.line, span.column, self.source)

    # --------------------------------------------------------------- query
    def query(self, q: ast.Query) -> None:
        self.from_streams = q.streams
        self.streams(q)
        self.everywhere = _variables_anywhere(q.where)
        # Atoms naming an enclosing pattern's variables are checked where they are evaluated.
        lifted = lift_outer_conditions(q.where)
        where, self.unlifted, self.shown = lifted.pattern, lifted.stays, lifted.shown
        for made in bound_variables(q.where) - self.written:  # NOT rewritten (negation.py)
            if made.startswith("not"):
                self.shown.setdefault(made, "the event of NOT(...)")
        self.monitored = lifted.monitored
        self.pattern(where)
        bound = variable_event_types(q.where)
        self.select(q.select, bound)
        all_types = event_types_of(q.where)
        for group in q.partition_by:
            for attr in group:
                self.attribute_everywhere(attr, all_types, name_span(attr, q.span), "PARTITION BY")
        self.window(q, all_types)
        if q.limit is not None and q.limit < 1:
            raise self.error(f"LIMIT must be at least 1, not {q.limit}", self.limit_span(q))
        self.unsupported(dataclasses.replace(q, where=where))

    def limit_span(self, q: ast.Query) -> Span:
        found = list(_LIMIT_RE.finditer(self.source))
        if not found:
            return q.span
        pos = found[-1].start(1)
        line = self.source.count("\n", 0, pos) + 1
        column = pos - (self.source.rfind("\n", 0, pos) + 1) + 1
        return Span(line, column, line, column + 1)

    def streams(self, q: ast.Query) -> None:
        schema = self.schema
        if schema is None:
            return
        types: set[str] = set()
        closed = schema.streams_closed
        for stream in q.streams:
            if not schema.has_stream(stream):
                raise self.error(
                    f"unknown stream {stream!r}{_known(schema.streams or ())}",
                    name_span(stream, q.span),
                )
            carried = schema.stream_event_types(stream)
            if carried is None:
                closed = False
            else:
                types |= carried
        if q.streams and closed:
            self.from_types = frozenset(types)

    # ------------------------------------------------------------ patterns
    def pattern(self, p: ast.Pattern) -> None:
        if isinstance(p, ast.EventType):
            self.event_type(p)
            return
        if isinstance(p, ast.Filter):
            self.pattern(p.pattern)
            self.filter(p.condition, variable_event_types(p.pattern), p.pattern)
            return
        if isinstance(p, ast.NotEvent):
            if not single_event(p.pattern):
                raise self.error(
                    "NOT(...) takes a single-event pattern: an event type, with AS and "
                    "FILTER on it, or an OR of those",
                    p.span,
                )
            self.pattern(p.pattern)
            return
        if isinstance(p, ast.Repeat):
            size = written_out_size(p)
            if size > MAX_WRITTEN_OUT:
                raise self.error(
                    f"this repetition writes its pattern out to {size} event patterns "
                    f"(nested counts multiply); at most {MAX_WRITTEN_OUT} keep the "
                    "automaton small: lower the counts or use + or *",
                    p.span,
                )
        if isinstance(p, ast.As) and p.var == WILDCARD:
            raise self.error(
                "'_' is the wildcard event, not a variable name: choose another name after AS",
                name_span(p.var, p.span),
            )
        if isinstance(p, ast.As | ast.Iter | ast.Star | ast.Repeat | ast.Selector):
            self.pattern(p.pattern)
            return
        self.pattern(p.left)
        self.pattern(p.right)

    def event_type(self, e: ast.EventType) -> None:
        if e.stream is not None and self.from_streams and e.stream not in self.from_streams:
            raise self.error(
                f"stream {e.stream!r} is not in the FROM clause (the query reads only "
                f"{', '.join(self.from_streams)})",
                e.span,
            )
        schema = self.schema
        if schema is None:
            return
        if e.name == WILDCARD:  # any event: only its stream, if any, must exist
            if e.stream is not None and not schema.has_stream(e.stream):
                raise self.error(
                    f"unknown stream {e.stream!r}{_known(schema.streams or ())}", e.span
                )
            return
        if e.stream is not None:
            if not schema.has_stream(e.stream):
                raise self.error(
                    f"unknown stream {e.stream!r}{_known(schema.streams or ())}", e.span
                )
            carried = schema.stream_event_types(e.stream)
            if carried is not None and e.name not in carried:
                raise self.error(
                    f"stream {e.stream!r} has no event type {e.name!r}{_known(carried)}", e.span
                )
            return
        if not schema.has_event_type(e.name):
            raise self.error(
                f"unknown event type {e.name!r}{_known(schema.event_types)}", e.span
            )
        if self.from_types is not None and e.name not in self.from_types:
            raise self.error(
                f"event type {e.name!r} is not in the streams of the FROM clause", e.span
            )

    def filter(
        self, cond: ast.FilterExpr, bound: dict[str, frozenset[str]], filtered: ast.Pattern
    ) -> None:
        if isinstance(cond, ast.FilterAnd | ast.FilterOr):
            self.filter(cond.left, bound, filtered)
            self.filter(cond.right, bound, filtered)
            return
        if cond.var == WILDCARD:
            message = _WILDCARD_IS_NO_VARIABLE + " (write `_ AS e ... FILTER e[...]`)"
            raise self.error(message, cond.span)
        stays = self.unlifted.get(id(cond))
        outer = "" if stays is None else f"; it cannot be evaluated around it: {stays}"
        if cond.var not in bound:
            raise self.error(
                f"variable {cond.var!r} is not bound by the pattern this FILTER applies to"
                f"{_known(bound)}{outer}",
                cond.span,
            )
        for ref in var_attrs(cond.pred):
            span = ref.span if ref.span != NO_SPAN else cond.span
            if ref.var not in self.everywhere:
                raise self.error(f"unknown variable {ref.var!r}{_known(self.everywhere)}", span)
            if ref.var in self.monitored.get(id(cond), ()) and not ref.prev:
                continue  # read from the UNLESS's left match (its monitor is seeded with it)
            why = problem(filtered, cond, ref)
            if why is not None:
                if ref.var not in bound and outer:
                    why = why.split(" (put the FILTER")[0] + outer
                for made, name in self.shown.items():
                    why = why.replace(repr(made), repr(name)).replace(f"{made}[", f"{name}[")
                raise self.error(why, span)
        seeded = self.monitored.get(id(cond), frozenset())
        self.scope = {**bound, **{v: self.everywhere[v] for v in seeded}} if seeded else bound
        self.pred(cond.pred, cond.var, bound[cond.var])

    # ---------------------------------------------------------- predicates
    def pred(self, p: ast.Pred, var: str, types: frozenset[str]) -> None:
        if isinstance(p, ast.PAnd | ast.POr):
            self.pred(p.left, var, types)
            self.pred(p.right, var, types)
        elif isinstance(p, ast.PNot):
            self.pred(p.operand, var, types)
        elif isinstance(p, ast.Compare):
            left = self.expr(p.left, var, types)
            right = self.expr(p.right, var, types)
            if left is not None and right is not None and left != right:
                raise self.error(
                    f"cannot compare {_a(left)} with {_a(right)}{self.held(p.left, p.right)}",
                    p.span,
                )
        elif isinstance(p, ast.Like):
            kind = self.expr(p.operand, var, types)
            if kind is not None and kind != "string":
                raise self.error(f"LIKE needs a string, not {_a(kind)}", p.span)
            import re2  # only for LIKE

            try:
                compile_like(p.pattern)
            except re2.error as exc:
                detail = exc.args[0] if exc.args else exc
                if isinstance(detail, bytes):
                    detail = detail.decode("utf-8", "replace")
                raise self.error(f"invalid regular expression in LIKE: {detail}", p.span) from None
        elif isinstance(p, ast.InSet):
            kind = self.expr(p.operand, var, types)
            for value in p.values:
                vkind = _kind_of_const(value.value)
                if kind is None:
                    kind = vkind
                elif vkind != kind:
                    span = value.span if value.span != NO_SPAN else p.span
                    raise self.error(f"IN set mixes {_a(kind)} with {_a(vkind)}", span)
        elif isinstance(p, ast.InRange):
            for e in (p.operand, p.low, p.high):
                self.number(e, var, types, "IN RANGE")

    def number(self, e: ast.Expr, var: str, types: frozenset[str], what: str) -> None:
        kind = self.expr(e, var, types)
        if kind is not None and kind != "number":
            raise self.error(f"{what} needs a number, not {_a(kind)}{self.held(e)}", e.span)

    def held(self, *exprs: ast.Expr) -> str:
        """What an input's text column holds, when its values made it a string attribute."""
        examples = self.schema.examples if self.schema is not None else {}
        for e in exprs:
            if isinstance(e, ast.Attr | ast.VarAttr) and e.name in examples:
                return (
                    f": column {e.name!r} holds text (such as {examples[e.name]!r}), "
                    "not numbers"
                )
        return ""

    def expr(self, e: ast.Expr, var: str, types: frozenset[str]) -> AttrKind | None:
        if isinstance(e, ast.Const):
            return _kind_of_const(e.value)
        if isinstance(e, ast.Attr):
            return self.attribute(e.name, var, types, e.span)
        if isinstance(e, ast.VarAttr):
            return self.attribute(e.name, e.var, self.scope[e.var], e.span)
        if isinstance(e, ast.BinOp):
            self.number(e.left, var, types, f"arithmetic '{e.op}'")
            self.number(e.right, var, types, f"arithmetic '{e.op}'")
        else:
            self.number(e.operand, var, types, "unary minus")
        return "number"

    # ---------------------------------------------------------- attributes
    def attribute(
        self, attr: str, var: str, types: frozenset[str], span: Span
    ) -> AttrKind | None:
        """Check ``attr`` exists on every event type ``var`` may bind; its kind."""

        def where(event_type: str) -> str:
            if event_type == WILDCARD:
                return f"unknown attribute {attr!r}: the input (read by {var!r}, bound to _)"
            bound = "" if var == event_type else f" (bound to {var!r})"
            return f"unknown attribute {attr!r}: event type {event_type!r}{bound}"

        return self._kind_everywhere(attr, types, span, where)

    def attribute_everywhere(
        self, attr: str, types: frozenset[str], span: Span, clause: str
    ) -> AttrKind | None:
        """Check ``attr`` exists on every event type in ``types`` (for ``clause``)."""
        return self._kind_everywhere(
            attr, types, span,
            lambda event_type: f"unknown attribute {attr!r} in {clause}: event type {event_type!r}",
        )

    def _kind_everywhere(
        self, attr: str, types: frozenset[str], span: Span, where: Callable[[str], str]
    ) -> AttrKind | None:
        """The one kind ``attr`` has across ``types`` (None if unknown or mixed)."""
        schema = self.schema
        if schema is None:
            return None
        kinds: set[AttrKind] = set()
        for event_type in sorted(types):
            attrs = schema.attributes(event_type)
            if attrs is None:
                continue
            if attr not in attrs:
                raise self.error(f"{where(event_type)} has no such attribute{_known(attrs)}", span)
            kind = schema.attribute_kind(event_type, attr)
            if kind is not None:
                kinds.add(kind)
        return kinds.pop() if len(kinds) == 1 else None

    # ------------------------------------------------------------- clauses
    def select(self, s: ast.Select, bound: dict[str, frozenset[str]]) -> None:
        for item in s.items or ():
            if item.var == WILDCARD:
                raise self.error(
                    _WILDCARD_IS_NO_VARIABLE + " (write `_ AS e` and SELECT e)",
                    item.span if item.span != NO_SPAN else s.span,
                )
            if item.var not in bound:
                raise self.error(
                    f"SELECT variable {item.var!r} is not bound in the pattern{_known(bound)}",
                    item.span if item.span != NO_SPAN else s.span,
                )
            for attr in item.attrs or ():
                self.attribute(attr, item.var, bound[item.var], name_span(attr, item.span))

    def window(self, q: ast.Query, types: frozenset[str]) -> None:
        w = q.within
        if w is None:
            return
        span = w.span if w.span != NO_SPAN else q.span
        if isinstance(w, ast.EventsWindow) and w.count < 0:
            raise self.error(f"WITHIN {w.count} EVENTS: the window must not be negative", span)
        if isinstance(w, ast.DurationWindow) and w.nanos < 0:
            raise self.error("WITHIN: the duration must not be negative", span)
        if isinstance(w, ast.AttrWindow):
            if w.amount < 0:
                raise self.error(f"WITHIN {w.amount} [...]: the window must not be negative", span)
            kind = self.attribute_everywhere(w.attr, types, name_span(w.attr, span), "WITHIN")
            if kind is not None and kind != "number":
                raise self.error(
                    f"WITHIN [{w.attr}] needs a numeric attribute, not {_a(kind)}",
                    name_span(w.attr, span),
                )

    # --------------------------------------------------------- unsupported
    def unsupported(self, q: ast.Query) -> None:
        if has_conditions(q.where):
            other = unsupported_with_conditions(q.where)
            if other is not None:
                span = other.span if other.span != NO_SPAN else q.span
                raise UnsupportedError(
                    f"{type(other).__name__.upper().replace('NOTEVENT', 'NOT')} is not "
                    "supported yet together with conditions between events "
                    "(the register engine evaluates ;, :, OR, +, :+, *, ?, {n,m}, AS, FILTER, AND, "
                    "ALL, UNLESS and NOT(...) without conditions inside)",
                    span.line, span.column, self.source,
                )


MAX_WRITTEN_OUT = 2000
"""Event patterns a repetition may write out to (``(A{1,50}){10}`` is 1000)."""


def written_out_size(p: ast.Pattern) -> int:
    """How many event patterns ``p`` is once its repetitions are written out.

    ``p{n,m}`` counts ``2m - n`` copies of ``p`` (the optional ones are nested
    ``p OR p ; ...``, see kleene.automata.unroll), ``p{n,}`` counts ``n``.
    """
    if isinstance(p, ast.EventType):
        return 1
    if isinstance(p, ast.Repeat):
        low = max(p.low, 1)
        copies = low if p.high is None else 2 * p.high - low
        return copies * written_out_size(p.pattern)
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.NotEvent | ast.Selector):
        return written_out_size(p.pattern)
    return written_out_size(p.left) + written_out_size(p.right)


def _variables_anywhere(p: ast.Pattern) -> dict[str, frozenset[str]]:
    """Every variable some part of ``p`` binds, also inside UNLESS's right side and NOT(...).

    Those bind nothing outside, but a FILTER inside them may read their own
    variables; whether a FILTER may read a variable is decided per FILTER.
    """
    out = dict(variable_event_types(p))

    def walk(node: ast.Pattern) -> None:
        if isinstance(node, ast.EventType):
            return
        if isinstance(node, ast.Unless | ast.NotEvent):
            inner = node.right if isinstance(node, ast.Unless) else node.pattern
            for var, types in variable_event_types(inner).items():
                out[var] = out.get(var, frozenset()) | types
        if isinstance(node, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent
                      | ast.Selector):
            walk(node.pattern)
        else:
            walk(node.left)
            walk(node.right)

    walk(p)
    return out


def check(query: ast.Query, source: str, schema: Schema | None) -> None:
    """Raise :class:`QueryError` for the first semantic error in ``query``.

    With ``schema`` None only what the query itself shows is checked
    (bound variables, literal types, regexes, clause values); with a schema,
    streams, event types and attributes must exist too.  Constructs that
    parse but cannot be evaluated yet raise :class:`UnsupportedError`.
    """
    # Checked, and then planned, in engine form: nested selectors (selectors.py), and a
    # FILTER's OR naming an enclosing variable unfolded (normal_form.py).
    checker = _Checker(source, schema)
    checker.written = bound_variables(query.where)
    checker.query(unfold_outer_ors(desugar_selectors(query, source)))
