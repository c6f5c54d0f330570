"""What the registers of a run hold at each state, and which guards that leaves to the start.

:mod:`kleene.registers.aggregate` counts a query's runs with one vector per *start* (the run's
first event): it can do so only where a guard's truth depends on the start through one key
``K`` (a range of the key order, the same for every start in it), or not at all.  This module
classifies, for every live state ``q`` and register ``r``, what ``r`` holds for every run at
``q``, whatever its start and its path:

* **start** (:data:`START`): written by every transition out of the initial state and by no
  other transition, never cleared after: the start's event.  Guards on it are key ranges.
* **empty** (:data:`EMPTY`): ``None`` on every path into ``q`` (never written there, or cleared
  after its last write), e.g. ``prev(t)`` before the first ``t``.
* **fresh** (:data:`FRESH`): every transition entering ``q``, labelled or gap, writes ``r``, and
  ``q`` is not stationary: a run at ``q`` entered it on the partition's previous event (any
  other event of the partition moves or kills it), so ``r`` holds that event for every run at
  ``q``, e.g. ``prev(t)`` inside a contiguous ``:+`` iteration, or ``b`` after ``b :``.
* **other**: anything else (a register written mid-pattern and read after a gap, seq6's ``d``).

A guard conjunct of a transition out of ``q`` reads each register after the transition's
clears: a conjunct reading only start registers is a key conjunct ``E op K``
(:func:`split_key`); one reading only empty and fresh registers (or none) has one truth per
event and state, evaluated once per event with the partition's previous event in the fresh
registers (:class:`Check`); any other conjunct keeps the query outside the class, and
:func:`classify_guards` says why.  :func:`holds`, :func:`beside` and :data:`SINGLE` give a key
conjunct's truth on each range of the key order that an event's values cut.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kleene.language import ast
from kleene.registers.guards import Guard, Key, compile_key
from kleene.registers.liveness import may_hold, registers_read
from kleene.registers.srt import SRT, Condition, RTransition

START, EMPTY, FRESH, OTHER = "start", "empty", "fresh", "other"
OPS = {"<", "<=", ">", ">=", "=="}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
}
BIG = 1 << 62
"""A sequence number above every start's: the cut after every key of one value."""
SINGLE = {
    ">": ((0, True), (-1, False)), ">=": ((0, True), (BIG, False)),
    "<": ((0, False), (BIG, True)), "<=": ((0, False), (-1, True)),
    "==": ((0, False), (-1, True), (BIG, False)),
}
"""Per op of one conjunct ``e op K``: the truth below the event's value ``e`` in the key order,
then each cut ``(e, seq)`` and the truth after it."""
Conjunct = tuple[str, Callable[[Any, Any], Key | None]]
"""``(op, event side)``: the conjunct ``event op K``."""


@dataclass(frozen=True)
class Check:
    """A conjunct with one truth per event: ``guard`` over the event and registers that hold
    ``None`` except ``fresh``, which hold the partition's previous event."""

    guard: Guard
    fresh: tuple[int, ...]
    text: str
    ident: Any
    """Equal for the same conjunct with the same fresh registers (evaluated once per event)."""
    test: Callable[[Any, Any], bool]
    """``(event, previous event) -> truth``: the guard with ``fresh`` holding the previous one."""


def _test(guard: Guard, c: Condition, fresh: tuple[int, ...], n: int,
          attrs: dict[str, int]) -> Callable[[Any, Any], bool]:
    """The check as ``(event, previous) -> bool``.  ``attr op v.attr`` (``v`` fresh) compares two
    numbers directly (NaN compares false, as an undefined value does) and hands anything else
    to the guard."""

    def general(ev: Any, prev: Any) -> bool:
        regs: list[Any] = [None] * n
        for r in fresh:
            regs[r] = prev
        return bool(guard(ev, regs))

    p = c.pred
    if not (isinstance(p, ast.Compare) and p.op in OPS and len(fresh) == 1):
        return general
    left, right, op = p.left, p.right, str(p.op)
    if isinstance(left, ast.VarAttr) and not (left.var == c.target and not left.prev):
        left, right, op = right, left, FLIP[op]
    mine = isinstance(left, ast.Attr) or (isinstance(left, ast.VarAttr) and left.var == c.target
                                          and not left.prev)
    other = isinstance(right, ast.VarAttr) and not (right.var == c.target and not right.prev)
    if not (mine and other and left.name in attrs and right.name in attrs):  # type: ignore[union-attr]
        return general
    i, j = attrs[left.name], attrs[right.name]  # type: ignore[union-attr]
    f = _CMP[op]

    def fast(ev: Any, prev: Any) -> bool:
        x, y = ev[i], prev[j]
        tx, ty = type(x), type(y)
        if (tx is float or tx is int) and (ty is float or ty is int):
            return f(x, y)
        return general(ev, prev)

    return fast


@dataclass(frozen=True)
class Guards:
    """The guards of the live transitions, split (see the module doc)."""

    key: Callable[[Any, Any], Key | None] | None
    """``K`` over the registers (None: no key conjunct)."""
    key_text: str
    conjuncts: dict[int, tuple[Conjunct, ...]]
    """Per labelled transition (``id``): its key conjuncts ``event op K``."""
    checks: dict[int, tuple[Check, ...]]
    """Per labelled transition (``id``): its conjuncts with one truth per event."""
    start: frozenset[int]
    """The start registers."""


def register_classes(srt: SRT, reach: set[int]) -> tuple[frozenset[int], dict[int, list[str]]]:
    """The start registers, and per state of ``reach`` (plus the initial one) each register's
    class (the module doc)."""
    init, n = srt.initial, srt.num_registers
    states = sorted(reach | {init})
    moves = [(q, t) for q in states for t in (*srt.labelled[q], *srt.gaps[q])]
    firsts = srt.labelled[init]
    start = set(range(n))
    for t in firsts:
        start &= set(t.writes)
    for q, t in moves:
        if q != init:
            start -= set(t.writes) | set(t.clears)
    maybe = may_hold([t for _, t in moves], srt.num_states)  # non-empty on some path
    entering: dict[int, list[RTransition]] = {}
    for _, t in moves:
        entering.setdefault(t.target, []).append(t)
    classes: dict[int, list[str]] = {init: [EMPTY] * n}
    for q in states:
        if q == init:
            continue
        row = []
        for r in range(n):
            if r in start:
                row.append(START)
            elif r not in maybe[q]:
                row.append(EMPTY)
            elif not srt.stationary[q] and all(r in t.writes for t in entering.get(q, ())):
                row.append(FRESH)
            else:
                row.append(OTHER)
        classes[q] = row
    return frozenset(start), classes


def _reads(node: Any, target: str, event: bool) -> bool:
    """Does an expression read the current event (``event``) or a register (not ``event``)?"""
    if isinstance(node, ast.Attr):
        return event
    if isinstance(node, ast.VarAttr):
        here = node.var == target and not node.prev
        return here if event else not here
    return any(
        _reads(child, target, event)
        for name in ("left", "right", "operand", "low", "high")
        if (child := getattr(node, name, None)) is not None
    )


def split_key(c: Condition) -> tuple[str, ast.Expr, ast.Expr] | None:
    """``(op, event side, register side)`` of ``event op K``, or None if not of that form."""
    p = c.pred
    if c.vacuous_when_empty or not isinstance(p, ast.Compare) or p.op not in OPS:
        return None
    x = c.target
    left, right = p.left, p.right
    if _reads(left, x, True) and not _reads(left, x, False) and _reads(right, x, False) \
            and not _reads(right, x, True):
        return p.op, left, right
    if _reads(right, x, True) and not _reads(right, x, False) and _reads(left, x, False) \
            and not _reads(left, x, True):
        return FLIP[p.op], right, left
    return None


def classify_guards(srt: SRT, reach: set[int]) -> tuple[Guards | None, str]:
    """The guards of the transitions out of the initial state and ``reach``, split into key
    conjuncts and per-event checks, or None and why a conjunct is neither."""
    start, classes = register_classes(srt, reach)
    attrs = {a: k for k, a in enumerate(srt.attributes)}
    key_side: tuple[Any, ...] | None = None
    key_fn: Callable[[Any, Any], Key | None] | None = None
    conjuncts: dict[int, tuple[Conjunct, ...]] = {}
    checks: dict[int, tuple[Check, ...]] = {}
    memo: dict[Condition, Conjunct] = {}
    for q in sorted(reach | {srt.initial}):
        for t in srt.labelled[q]:
            if len(t.guards) != len(t.conditions):
                return None, "a guard without its condition"
            mine: list[Conjunct] = []
            events: list[Check] = []
            for g, c in zip(t.guards, t.conditions, strict=True):
                kinds = {r: EMPTY if r in t.clears else classes[q][r] for r in registers_read(c)}
                seen = set(kinds.values())
                if seen and seen <= {START}:
                    parts = split_key(c)
                    if parts is None:
                        return None, f"the condition {c.pred} is not a comparison of the event with a register"
                    op, event_side, register_side = parts
                    slots = dict(c.slots)
                    reads = tuple(sorted((v, s) for (v, prev), s in slots.items() if v != c.target))
                    side = (register_side, reads)
                    if key_side is None:
                        key_side = side
                        key_fn = compile_key(register_side, c.target, slots, attrs)
                    elif side != key_side:
                        return None, "the conditions compare with more than one register expression"
                    if c not in memo:  # one conjunct object per condition: evaluated once
                        memo[c] = (op, compile_key(event_side, c.target, slots, attrs))
                    mine.append(memo[c])
                elif seen <= {EMPTY, FRESH}:
                    fresh = tuple(sorted(r for r, k in kinds.items() if k == FRESH))
                    if c.vacuous_when_empty and not fresh:
                        continue  # its prev() register is empty: it holds (the vacuous rule)
                    test = _test(g, c, fresh, srt.num_registers, attrs)
                    events.append(Check(g, fresh, _text(c.pred), (c, fresh), test))
                elif OTHER in seen:
                    return None, (f"the condition {_text(c.pred)} reads a register written after the "
                                  "first event and before a gap (not the partition's previous event)")
                else:
                    return None, (f"the condition {_text(c.pred)} reads the first event's registers "
                                  "and the previous event's together")
            if mine:
                conjuncts[id(t)] = tuple(mine)
            if events:
                checks[id(t)] = tuple(events)
    text = "none" if key_side is None else _text(key_side[0])
    return Guards(key_fn, text, conjuncts, checks, start), ""


def _text(e: Any) -> str:
    """Short CEQL-like text of an expression or comparison, for explain()."""
    if isinstance(e, ast.VarAttr):
        return f"prev({e.var}).{e.name}" if e.prev else f"{e.var}.{e.name}"
    if isinstance(e, ast.Attr):
        return e.name
    if isinstance(e, ast.Const):
        return repr(e.value)
    if isinstance(e, ast.Compare):
        return f"{_text(e.left)} {e.op} {_text(e.right)}"
    if isinstance(e, ast.BinOp):
        return f"{_text(e.left)} {e.op} {_text(e.right)}"
    return type(e).__name__.lower()


def holds(op: str, e: Any, k: Any) -> bool:
    """``e op k``."""
    return bool(_CMP[op](e, k))


def beside(op: str, above: bool) -> bool:
    """``e op K`` for every ``K`` strictly between two thresholds, ``e`` one of them: above
    them (``above``) or below."""
    return op in (">", ">=") if above else op in ("<", "<=")
