"""MATCH_RECOGNIZE's PATTERN compiled to a prioritised automaton (a Pike-VM program).

The program is a list of instructions; a thread is a program counter plus a few
registers.  ``SPLIT a b`` forks a thread, the branch ``a`` being the preferred
one, so that following the epsilon moves depth first, ``a`` before ``b``, lists
the threads in the standard's preferment order (spec note §2.2): alternation
left first, greedy quantifiers "one more iteration" first, reluctant ones "stop"
first, PERMUTE as the alternation of every order in lexicographic order.

Counted repetition is unrolled (``p{2,4}`` is ``p p (p (p)?)?`` with the
priorities of the quantifier), an unbounded tail becomes a loop.  The Perl
stopping rule (an iteration that consumed no row, once the count reached the
minimum, ends the loop) is kept with a register per iteration: ``MARK r``
stores the position where the iteration began and ``CHECK r exit`` leaves the
loop when the iteration ended where it began.  ``CHECK`` clears the register,
so that two threads whose futures are equal have equal registers (what the
runtime merges threads on).

The automaton has no condition on its transitions: ``VAR`` names the pattern
variable a row must satisfy (its DEFINE), decided by the runtime.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from kleene.language.match_recognize import ast

__all__ = ["BEGIN", "CHECK", "END", "JMP", "MARK", "MATCH", "MAX_INSTRUCTIONS", "Program",
           "SPLIT", "VAR", "compile_pattern"]

VAR, SPLIT, JMP, BEGIN, END, MARK, CHECK, MATCH = range(8)
"""Opcodes.  VAR (label, excluded): consume one row labelled ``label``; SPLIT (a, b): go to
``a``, else to ``b``; JMP (a); BEGIN/END: the ``^``/``$`` anchors; MARK (reg): remember the
position; CHECK (reg, exit): go to ``exit`` if nothing was consumed since MARK; MATCH."""

MAX_INSTRUCTIONS = 200_000
"""Unrolled counted repetition and PERMUTE can grow a program; beyond this it is an error."""


@dataclass(frozen=True)
class Program:
    """The instructions (``ops[pc]``, ``a[pc]``, ``b[pc]``) and the register count.

    For VAR, ``a`` is the index of the label in ``labels`` and ``b`` is 1 when the row is
    excluded from ALL ROWS output (inside ``{- -}``).
    """

    ops: tuple[int, ...]
    a: tuple[int, ...]
    b: tuple[int, ...]
    labels: tuple[str, ...]
    registers: int

    def __len__(self) -> int:
        return len(self.ops)


class _Builder:
    def __init__(self, labels: list[str]) -> None:
        self.ops: list[int] = []
        self.a: list[int] = []
        self.b: list[int] = []
        self.labels = labels
        self.registers = 0

    def emit(self, op: int, a: int = 0, b: int = 0) -> int:
        if len(self.ops) >= MAX_INSTRUCTIONS:
            raise ValueError(f"the pattern unrolls to more than {MAX_INSTRUCTIONS} instructions")
        self.ops.append(op)
        self.a.append(a)
        self.b.append(b)
        return len(self.ops) - 1

    def patch(self, pc: int, a: int | None = None, b: int | None = None) -> None:
        if a is not None:
            self.a[pc] = a
        if b is not None:
            self.b[pc] = b

    def here(self) -> int:
        return len(self.ops)

    def pattern(self, p: ast.Pattern, excluded: bool) -> None:
        if isinstance(p, ast.Var):
            self.emit(VAR, self.labels.index(p.name), int(excluded))
        elif isinstance(p, ast.Empty):
            pass
        elif isinstance(p, ast.Anchor):
            self.emit(BEGIN if p.start else END)
        elif isinstance(p, ast.Concat):
            for item in p.items:
                self.pattern(item, excluded)
        elif isinstance(p, ast.Alternation):
            self.alternation(list(p.items), excluded)
        elif isinstance(p, ast.Permute):
            orders = [ast.Concat(order) for order in itertools.permutations(p.items)]
            self.alternation(list(orders), excluded)
        elif isinstance(p, ast.Exclude):
            self.pattern(p.body, True)
        else:
            self.quantified(p, excluded)

    def alternation(self, items: list[ast.Pattern], excluded: bool) -> None:
        jumps = []
        for item in items[:-1]:
            split = self.emit(SPLIT)
            self.patch(split, a=self.here())
            self.pattern(item, excluded)
            jumps.append(self.emit(JMP))
            self.patch(split, b=self.here())
        self.pattern(items[-1], excluded)
        for j in jumps:
            self.patch(j, a=self.here())

    def iteration(self, q: ast.Quantified, count: int, excluded: bool) -> tuple[int, int | None]:
        """One iteration (the ``count``-th, from 0); returns the CHECK to patch (or -1) and
        the pc of the MARK."""
        reg = self.registers
        self.registers += 1
        mark = self.emit(MARK, reg)
        self.pattern(q.body, excluded)
        check = self.emit(CHECK, reg) if count + 1 >= q.low else -1
        return check, mark

    def quantified(self, q: ast.Quantified, excluded: bool) -> None:
        exits: list[int] = []  # CHECKs and SPLITs whose exit is the end of the loop
        for count in range(q.low):  # the mandatory iterations
            check, _ = self.iteration(q, count, excluded)
            if check >= 0:
                exits.append(check)
        if q.high is None:  # a loop: SPLIT (body, exit); body; CHECK; JMP back
            head = self.emit(SPLIT)
            body = self.here()
            check, _ = self.iteration(q, q.low, excluded)
            exits.append(check)
            self.emit(JMP, head)
            split_exit = self.here()
            if q.greedy:
                self.patch(head, a=body, b=split_exit)
            else:
                self.patch(head, a=split_exit, b=body)
            self.patch_exits(exits, split_exit)
            return
        splits = []
        for count in range(q.low, q.high):
            head = self.emit(SPLIT)
            body = self.here()
            check, _ = self.iteration(q, count, excluded)
            exits.append(check)
            splits.append((head, body))
        end = self.here()
        for head, body in splits:
            if q.greedy:
                self.patch(head, a=body, b=end)
            else:
                self.patch(head, a=end, b=body)
        self.patch_exits(exits, end)

    def patch_exits(self, checks: list[int], target: int) -> None:
        for c in checks:
            self.patch(c, b=target)


def compile_pattern(pattern: ast.Pattern, labels: list[str]) -> Program:
    """The program of ``pattern``; ``labels`` are the primary variables (VAR's index)."""
    builder = _Builder(labels)
    builder.pattern(pattern, False)
    builder.emit(MATCH)
    return Program(tuple(builder.ops), tuple(builder.a), tuple(builder.b), tuple(labels),
                   builder.registers)
