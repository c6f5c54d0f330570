"""The limits of the CEQL parser, checked on the parse tree before the AST is built.

As SQLite documents and tests its own (``SQLITE_MAX_SQL_LENGTH``, ``SQLITE_MAX_EXPR_DEPTH``),
kleene's parser has fixed limits, so that no query text reaches Python's recursion limit,
its 4,300-digit limit of integer conversion or the engine's 64-bit integers, and each is a
:class:`QueryError` with line, column and caret that names the limit:

* :data:`MAX_QUERY_LENGTH` characters of query text;
* :data:`MAX_DEPTH` levels of nesting of the parse tree (parentheses that group nothing
  new add no level; every operator, clause and comparison adds one);
* :data:`MAX_NUMBER_LENGTH` characters of a number literal, and no integer literal above
  what a 64-bit float holds (a float literal that overflows is refused by the parser too);
* :data:`MAX_COUNT` for ``WITHIN n EVENTS``, ``WITHIN n [attr]`` and ``LIMIT n``;
  :data:`MAX_DURATION_NANOS` (36,500 days) for ``WITHIN <duration>`` and ``--max-delay``:
  the engine subtracts a window from 64-bit times and positions.

A *flat* list is not deep: a chain of one associative operator (``OR`` and ``AND`` of
predicates and of FILTER atoms, ``OR`` and ``;`` of patterns) longer than
:data:`BALANCE_AT` terms is rebalanced into a tree of logarithmic depth before the check
(its meaning is the same: each is associative), so a 10,000-term ``name = 'a' OR ...``
list parses and runs.  Shorter chains keep the left-nested shape the grammar gives them.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Tree
from lark.tree import Meta

from kleene.language.errors import QueryError

MAX_QUERY_LENGTH = 1_000_000
"""Characters of query text (a 10,000-term OR list of comparisons is ~250,000)."""

MAX_DEPTH = 200
"""Levels of the parse tree: a query of ordinary shape is 10-20 deep."""

MAX_NUMBER_LENGTH = 400
"""Characters of one number literal (a float has at most 17 significant digits; 400 leaves
room for any exponent-free spelling of a float, far below Python's 4,300-digit limit)."""

MAX_COUNT = 10**18
"""The largest ``WITHIN n EVENTS``, ``WITHIN n [attr]`` (integer) and ``LIMIT n``: below 2**63,
so a position minus the window fits the engine's 64-bit integers."""

MAX_DURATION_NANOS = 36_500 * 86_400 * 10**9
"""The longest ``WITHIN <duration>`` (and ``--max-delay``): 36,500 days, about 100 years, in
nanoseconds (3.2e18): a nanosecond timestamp of today minus it still fits 64 bits."""

BALANCE_AT = 32
"""Chains of one associative operator longer than this are rebalanced."""

ASSOCIATIVE = frozenset({"pr_or", "pr_and", "f_or", "f_and", "p_or", "p_seq"})
"""Parse-tree rules (see grammar.lark) whose operator is associative."""


def check_length(text: str) -> None:
    """:data:`MAX_QUERY_LENGTH`, with the caret at the first character past it."""
    if len(text) <= MAX_QUERY_LENGTH:
        return
    line = text.count("\n", 0, MAX_QUERY_LENGTH) + 1
    column = MAX_QUERY_LENGTH - (text.rfind("\n", 0, MAX_QUERY_LENGTH) + 1) + 1
    raise QueryError(
        f"the query is {len(text):,} characters long, over kleene's limit of "
        f"{MAX_QUERY_LENGTH:,} (kleene.language.limits.MAX_QUERY_LENGTH)",
        line,
        column,
        text,
    )


def balance_and_check(tree: Tree[Token], text: str) -> Tree[Token]:
    """Rebalance long associative chains, then check :data:`MAX_DEPTH`; both without
    recursion (the tree may be deeper than Python's recursion limit)."""
    stack: list[Tree[Token]] = [tree]
    while stack:
        node = stack.pop()
        if node.data in ASSOCIATIVE:
            leaves = _chain(node)
            if len(leaves) > BALANCE_AT:
                node.children = _balanced(str(node.data), leaves).children
        stack.extend(c for c in node.children if isinstance(c, Tree))
    _check_depth(tree, text)
    return tree


def _chain(node: Tree[Token]) -> list[Any]:
    """The operands of the chain of ``node``'s operator rooted at ``node``, left to right."""
    leaves: list[Any] = []
    todo: list[Any] = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, Tree) and item.data == node.data and len(item.children) == 2:
            todo.append(item.children[1])  # popped after the left side: left to right
            todo.append(item.children[0])
        else:
            leaves.append(item)
    return leaves


def _balanced(rule: str, leaves: list[Any]) -> Tree[Token]:
    """A balanced tree of ``rule`` over ``leaves`` (in order); iterative, by levels."""
    level = list(leaves)
    while len(level) > 1:
        paired = [_joined(rule, level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    node = level[0]
    assert isinstance(node, Tree)
    return node


def _joined(rule: str, left: Any, right: Any) -> Tree[Token]:
    meta = Meta()
    start, end = _position(left), _position(right)
    meta.line, meta.column, meta.start_pos = start[0], start[1], start[4]
    meta.end_line, meta.end_column, meta.end_pos = end[2], end[3], end[5]
    meta.empty = False
    return Tree(rule, [left, right], meta)


def _position(item: Any) -> tuple[int, int, int, int, int, int]:
    """Line, column, end line, end column, start and end offsets of a node or token."""
    if isinstance(item, Token):
        return (
            item.line or 0,
            item.column or 0,
            item.end_line or 0,
            item.end_column or 0,
            item.start_pos or 0,
            item.end_pos or 0,
        )
    m = item.meta
    return m.line, m.column, m.end_line, m.end_column, m.start_pos, m.end_pos


def _check_depth(tree: Tree[Token], text: str) -> None:
    stack: list[tuple[Tree[Token], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            line, column = _position(node)[:2]
            raise QueryError(
                f"the query is nested more than {MAX_DEPTH} levels deep, kleene's limit "
                "(kleene.language.limits.MAX_DEPTH): write a long list flat (a OR b OR c ...), "
                "not nested in parentheses",
                line,
                column,
                text,
            )
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))


def number_error(text: str) -> str | None:
    """Why a number literal (as written) is refused, or None: :data:`MAX_NUMBER_LENGTH`."""
    if len(text) > MAX_NUMBER_LENGTH:
        return (
            f"a number of {len(text):,} characters is over kleene's limit of "
            f"{MAX_NUMBER_LENGTH} (kleene.language.limits.MAX_NUMBER_LENGTH)"
        )
    return None
