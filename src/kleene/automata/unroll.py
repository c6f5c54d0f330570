"""Counted repetition ``p{n,m}`` written out with the operators the engines compile.

Both engines (the CEA of :mod:`kleene.automata.compile` and the SRT of
:mod:`kleene.registers.automaton`) evaluate ``;``, ``:``, OR, ``+`` and ``:+``;
a repetition is the same as its copies written out, so it is rewritten into
those before compiling.  The rewriting gives the repetition's *non-empty*
matches: ``p{0,m}`` becomes ``p{1,m}`` and the caller keeps the "may match
nothing" flag (:func:`kleene.language.variables.nullable`), exactly as ``p*``
is compiled as ``p+`` plus that flag.

The optional copies nest, ``p{1,3} = p OR p ; (p OR p ; p)``, so the size is
linear in the count (at most ``2 * m`` copies of ``p``).  The reference
evaluator (:mod:`kleene.reference.oracle`) does not use this: it evaluates the
repetition from its definition.
"""

from __future__ import annotations

from kleene.language import ast

__all__ = ["unroll"]


def unroll(p: ast.Repeat) -> ast.Pattern:
    """The non-empty matches of ``p`` as sequences, ORs and iterations of copies of ``p.pattern``."""
    body, glue, span = p.pattern, p.contiguous, p.span
    low = max(p.low, 1)

    def seq(left: ast.Pattern | None, right: ast.Pattern) -> ast.Pattern:
        return right if left is None else ast.Seq(left, right, glue, span)

    head: ast.Pattern | None = None  # low - 1 copies, then the last required one with the tail
    for _ in range(low - 1):
        head = seq(head, body)
    if p.high is None:
        return seq(head, ast.Iter(body, glue, span))  # p{n,} = p{n-1} ; p+
    # 1 to (high - low + 1) copies: p OR p ; (1 to k - 1 copies), nested.
    tail: ast.Pattern = body
    for _ in range(p.high - low):
        tail = ast.Or(body, ast.Seq(body, tail, glue, span), span)
    return seq(head, tail)
