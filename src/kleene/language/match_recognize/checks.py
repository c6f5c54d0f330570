"""The standard's static rules for a MATCH_RECOGNIZE clause, each a QueryError with a caret.

What is checked (ISO/IEC 9075-2 §7.6 as Trino and Oracle document it, see the
spec note §1.3 and §1.5): DEFINE, SUBSET, SKIP TO and qualified references
name known variables; a variable is defined once; SUBSET names are new and
their members primary; FINAL only in MEASURES; no aggregate or navigation
inside an aggregate; no navigation or aggregate inside FIRST/LAST; a PREV/NEXT
may hold a FIRST/LAST only as its whole argument; the column references of
one navigation or aggregate name one variable (or none), and a navigation
reads at least one column or CLASSIFIER; ``X.*`` only in COUNT (the grammar);
AFTER MATCH SKIP TO FIRST/LAST v not certain to target every match's first
row; no exclusion with WITH UNMATCHED ROWS; measure names unique; ONE ROW PER
MATCH has something to return; WITHIN needs ORDER BY.  Checks that need the
input's columns (unknown columns, WITHIN's unit against the key's type) are
the evaluator's.
"""

from __future__ import annotations

from collections.abc import Iterator

from kleene.language.errors import QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.ast import NO_SPAN, Span

__all__ = [
    "check", "first_variables", "most_occurrences", "pattern_variables", "referenced_variables",
    "sub_expressions",
]


def pattern_variables(pattern: ast.Pattern) -> list[str]:
    """The primary variables of ``pattern``, in order of first appearance."""
    found: dict[str, None] = {}

    def walk(p: ast.Pattern) -> None:
        if isinstance(p, ast.Var):
            found.setdefault(p.name)
        elif isinstance(p, ast.Concat | ast.Alternation | ast.Permute):
            for item in p.items:
                walk(item)
        elif isinstance(p, ast.Exclude | ast.Quantified):
            walk(p.body)

    walk(pattern)
    return list(found)


def has_exclusion(pattern: ast.Pattern) -> ast.Exclude | None:
    """The first ``{- -}`` in ``pattern``, or None."""
    if isinstance(pattern, ast.Exclude):
        return pattern
    if isinstance(pattern, ast.Concat | ast.Alternation | ast.Permute):
        for item in pattern.items:
            if (found := has_exclusion(item)) is not None:
                return found
    if isinstance(pattern, ast.Quantified):
        return has_exclusion(pattern.body)
    return None


def first_variables(p: ast.Pattern) -> tuple[frozenset[str], bool]:
    """The variables that may label the first row of a match of ``p``, and whether ``p``
    can match no row at all."""
    if isinstance(p, ast.Var):
        return frozenset([p.name]), False
    if isinstance(p, ast.Empty | ast.Anchor):
        return frozenset(), True
    if isinstance(p, ast.Exclude):
        return first_variables(p.body)
    if isinstance(p, ast.Quantified):
        first, nullable = first_variables(p.body)
        return (first if p.high != 0 else frozenset()), nullable or p.low == 0
    parts = [first_variables(i) for i in p.items]
    if isinstance(p, ast.Alternation):
        return frozenset().union(*(f for f, _ in parts)), any(n for _, n in parts)
    if isinstance(p, ast.Permute):  # any item may come first
        return frozenset().union(*(f for f, _ in parts)), all(n for _, n in parts)
    found: frozenset[str] = frozenset()
    for first, nullable in parts:
        found |= first
        if not nullable:
            return found, False
    return found, True


def most_occurrences(p: ast.Pattern, variables: set[str]) -> float:
    """The most rows one match of ``p`` can map to any of ``variables`` (``inf``: unbounded)."""
    if isinstance(p, ast.Var):
        return 1 if p.name in variables else 0
    if isinstance(p, ast.Empty | ast.Anchor):
        return 0
    if isinstance(p, ast.Exclude):
        return most_occurrences(p.body, variables)
    if isinstance(p, ast.Quantified):
        inner = most_occurrences(p.body, variables)
        if inner == 0 or p.high == 0:
            return 0
        return float("inf") if p.high is None else inner * p.high
    counts = [most_occurrences(i, variables) for i in p.items]
    return max(counts) if isinstance(p, ast.Alternation) else sum(counts)


def children(e: ast.Expr) -> tuple[ast.Expr, ...]:
    """The direct sub-expressions of ``e``."""
    if isinstance(e, ast.Nav):
        return (e.arg,)
    if isinstance(e, ast.Aggregate):
        return (e.arg,) if e.arg is not None else ()
    if isinstance(e, ast.Func):
        return e.args
    if isinstance(e, ast.BinOp):
        return (e.left, e.right)
    if isinstance(e, ast.Not | ast.IsNull):
        return (e.operand,)
    if isinstance(e, ast.Between):
        return (e.operand, e.low, e.high)
    if isinstance(e, ast.InList):
        return (e.operand, *e.items)
    if isinstance(e, ast.Case):
        flat = [x for pair in e.whens for x in pair]
        return (*flat, e.default) if e.default is not None else tuple(flat)
    return ()


def sub_expressions(e: ast.Expr) -> Iterator[ast.Expr]:
    """``e`` and everything inside it, depth first."""
    yield e
    for c in children(e):
        yield from sub_expressions(c)


def referenced_variables(e: ast.Expr) -> set[str | None]:
    """Qualifiers of the column references and CLASSIFIER calls in ``e`` (None: unqualified)."""
    found: set[str | None] = set()
    for x in sub_expressions(e):
        if isinstance(x, ast.Column | ast.Classifier):
            found.add(x.var)
    return found


def _error(message: str, span: Span, source: str) -> QueryError:
    return QueryError(message, span.line or 1, span.column or 1, source)


def check(mr: ast.MatchRecognize) -> None:
    """Raise :class:`QueryError` for the first broken static rule of ``mr``."""
    src = mr.source
    primaries = pattern_variables(mr.pattern)
    known_primary = set(primaries)
    subsets: dict[str, ast.Subset] = {}
    for s in mr.subsets:
        if s.name in known_primary:
            raise _error(f"SUBSET {s.name}: the name is already a pattern variable", s.span, src)
        if s.name in subsets:
            raise _error(f"SUBSET {s.name} is declared twice", s.span, src)
        spans = s.member_spans or tuple(s.span for _ in s.members)
        for member, where in zip(s.members, spans, strict=True):
            if member not in known_primary:
                raise _error(
                    f"SUBSET {s.name}: {member} is not a variable of PATTERN "
                    f"({_listing(primaries)})", where, src,
                )
        subsets[s.name] = s
    known = known_primary | set(subsets)

    defined: set[str] = set()
    for d in mr.defines:
        if d.var in defined:
            raise _error(f"{d.var} is defined twice in DEFINE", d.span, src)
        if d.var not in known_primary:
            what = "a SUBSET name, which" if d.var in subsets else "not a variable of PATTERN and"
            raise _error(
                f"DEFINE {d.var}: {d.var} is {what} cannot be defined "
                f"(PATTERN has {_listing(primaries)})", d.span, src,
            )
        defined.add(d.var)
        _check_expr(d.condition, known, primaries, in_define=True, source=src)
        if not _may_be_boolean(d.condition):
            raise _error(f"DEFINE {d.var}: a condition must be true or false, not a value "
                         "(compare it, e.g. x > 0)", d.condition.span, src)

    names: set[str] = set()
    for m in mr.measures:
        if m.name.upper() in names:
            raise _error(f"measure {m.name!r} is named twice", m.span, src)
        names.add(m.name.upper())
        _check_expr(m.expr, known, primaries, in_define=False, source=src)

    if mr.skip.var is not None and mr.skip.var not in known:
        raise _error(
            f"AFTER MATCH SKIP {mr.skip.kind.value} {mr.skip.var}: {mr.skip.var} is not a "
            f"variable of PATTERN or SUBSET ({_listing(sorted(known))})", mr.skip.span, src,
        )
    _check_skip_loops(mr)
    excluded = has_exclusion(mr.pattern)
    if excluded is not None and mr.rows_per_match is ast.RowsPerMatch.ALL_WITH_UNMATCHED:
        raise _error(
            "a pattern exclusion {- -} cannot be used with ALL ROWS PER MATCH WITH UNMATCHED ROWS",
            excluded.span, src,
        )
    if mr.rows_per_match is ast.RowsPerMatch.ONE and not mr.measures and not mr.partition_by:
        raise _error(
            "ONE ROW PER MATCH without MEASURES or PARTITION BY has no column to return",
            mr.span if mr.span != NO_SPAN else Span(1, 1, 1, 1), src,
        )
    if mr.within is not None and not mr.order_by:
        raise _error("WITHIN needs ORDER BY: the span is measured on its first key",
                     mr.within.span, src)
    if mr.within is not None and mr.order_by[0].descending:
        raise _error("WITHIN needs the first ORDER BY key ascending", mr.order_by[0].span, src)


def _check_skip_loops(mr: ast.MatchRecognize) -> None:
    """SKIP TO a row that is the first row of *every* match would restart the search there
    forever: the evaluator raises it at run time (as Trino does), and where the pattern makes
    it certain it is a static error."""
    skip = mr.skip
    if skip.var is None or skip.kind not in (ast.SkipKind.TO_FIRST, ast.SkipKind.TO_LAST):
        return
    members = {skip.var}
    for s in mr.subsets:
        if s.name == skip.var:
            members = set(s.members)
    first, _ = first_variables(mr.pattern)
    if not first or not first <= members:
        return
    if skip.kind is ast.SkipKind.TO_LAST:
        if most_occurrences(mr.pattern, members) > 1:
            return
    raise _error(
        f"AFTER MATCH SKIP {skip.kind.value} {skip.var}: every match starts with "
        f"{skip.var}{'' if skip.kind is ast.SkipKind.TO_FIRST else ', its only row'}, so the "
        "search would restart at a match's first row forever; skip PAST LAST ROW, TO NEXT ROW, "
        "or to a later variable", skip.span, mr.source,
    )


def _may_be_boolean(e: ast.Expr) -> bool:
    """False for expressions that are certainly not booleans (numbers, strings, counts)."""
    if isinstance(e, ast.Literal):
        return e.value is None or isinstance(e.value, bool)
    if isinstance(e, ast.BinOp):
        return e.op not in ("+", "-", "*", "/", "%")
    if isinstance(e, ast.Not):
        return not e.negate
    if isinstance(e, ast.Aggregate):
        return e.func in ("MIN", "MAX")  # of a boolean column, perhaps
    if isinstance(e, ast.Func):
        return e.name == "COALESCE"
    return not isinstance(e, ast.MatchNumber | ast.Classifier)


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


def _check_expr(e: ast.Expr, known: set[str], primaries: list[str], *, in_define: bool,
                source: str, inside: str | None = None) -> None:
    """Recursive walk; ``inside`` names the enclosing navigation kind or ``aggregate``."""
    def unknown(var: str, span: Span) -> QueryError:
        return _error(f"{var} is not a pattern variable (PATTERN and SUBSET have "
                      f"{_listing(sorted(known))})", span, source)

    if isinstance(e, ast.Column | ast.Classifier) and e.var is not None and e.var not in known:
        raise unknown(e.var, e.span)
    if isinstance(e, ast.Aggregate | ast.Nav):
        if e.semantics == "FINAL" and in_define:
            raise _error("FINAL is not allowed in DEFINE (conditions see the match so far)",
                         e.span, source)
    if isinstance(e, ast.Aggregate):
        if inside is not None:
            where = "another aggregate" if inside == "aggregate" else f"{inside}"
            raise _error(f"an aggregate cannot be nested inside {where}", e.span, source)
        if e.star_var is not None and e.star_var not in known:
            raise unknown(e.star_var, e.span)
        if e.arg is not None:
            _one_variable(e.arg, f"{e.func}", e.span, source)
            _check_expr(e.arg, known, primaries, in_define=in_define, source=source,
                        inside="aggregate")
        return
    if isinstance(e, ast.Nav):
        if inside == "aggregate":
            raise _error(f"{e.kind} cannot be used inside an aggregate", e.span, source)
        if inside in ("FIRST", "LAST"):
            raise _error(f"{e.kind} cannot be nested inside {inside}", e.span, source)
        if inside in ("PREV", "NEXT") and e.physical:
            raise _error(f"{e.kind} cannot be nested inside {inside}", e.span, source)
        if e.physical and not isinstance(e.arg, ast.Nav):
            for x in sub_expressions(e.arg):
                if isinstance(x, ast.Nav) and x is not e.arg:
                    raise _error(f"a FIRST/LAST inside {e.kind} must be its whole first argument",
                                 x.span, source)
        target = e.arg.arg if isinstance(e.arg, ast.Nav) else e.arg
        if not any(isinstance(x, ast.Column | ast.Classifier) for x in sub_expressions(target)):
            raise _error(f"the first argument of {e.kind} must read a column or CLASSIFIER()",
                         e.span, source)
        _one_variable(e.arg, e.kind, e.span, source)
        _check_expr(e.arg, known, primaries, in_define=in_define, source=source, inside=e.kind)
        return
    for c in children(e):
        _check_expr(c, known, primaries, in_define=in_define, source=source, inside=inside)


def _one_variable(e: ast.Expr, what: str, span: Span, source: str) -> None:
    found = referenced_variables(e)
    if len(found) > 1:
        names = ", ".join(sorted("(unqualified)" if v is None else v for v in found))
        raise _error(
            f"the column references inside {what}(...) must all name the same pattern "
            f"variable, not {names}", span, source,
        )
