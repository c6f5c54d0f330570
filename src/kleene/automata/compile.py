"""CEL formula → CEA, the linear-size construction of the CORE paper's appendix A.

The construction first builds a *VCEA* (:mod:`kleene.automata.construction`, by induction on
the formula): transitions carry the set of variables that the event read by the transition is
bound to.  This module then finishes it:

* a fresh initial state ``q0`` replicates the transitions out of the initial
  states, so no transition re-enters ``q0`` (runs may start anywhere);
* under ``SELECT STRICT``, a product with a monitor that allows no gap inside a match;
* a transition is *marked* (•) iff its variable set meets the projected
  variables (every non-empty set for ``SELECT *``), else unmarked (◦);
* only the useful states (reachable from ``q0`` and reaching a final state) are kept.

Two errata of the printed construction are fixed (see docs/semantics.md): the
fresh state of ``ψ+`` gets a TRUE/∅ self-loop, exactly like the initial states
of the right operand of ``;`` (iterations are not contiguous); and the ◦ case
reads ``L ∩ proj = ∅``.  CORE's contiguous operators ``:`` and ``:+`` are the
same constructions without those self-loops.
"""

from __future__ import annotations

import gc

from kleene.automata.cea import CEA, Transition
from kleene.automata.construction import Builder
from kleene.automata.fragments import VT
from kleene.language import ast
from kleene.limits import Limits
from kleene.predicates.atoms import Atoms


def compile_pattern(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None = None,
    *,
    strict: bool = False,
    limits: Limits | None = None,
) -> CEA:
    """Compile a CEL pattern to a CEA.

    ``projection`` is the set of SELECTed variables (``None`` for ``*``): an
    event is marked iff it is bound to one of them.  ``strict`` keeps only
    runs whose events are contiguous (``SELECT STRICT``).  A construction
    passing ``limits.max_states`` stops with a LimitError (:mod:`kleene.limits`).
    """
    return compile_labelled(pattern, atoms, projection, strict=strict, limits=limits)[0]


Labels = dict[Transition, frozenset[bool]]
"""Per marked transition: whether the event it reads is bound to a projected variable
(both when several variable sets give the same transition)."""


def compile_labelled(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None = None,
    *,
    strict: bool = False,
    project: frozenset[str] | None = None,
    limits: Limits | None = None,
) -> tuple[CEA, Labels]:
    """:func:`compile_pattern`, plus which marked transitions bind a variable of ``project``.

    A selection strategy compares whole matches, so it runs on the CEA of
    ``SELECT *`` (``projection=None``); the labels then say which positions
    of a chosen match the projection ``project`` keeps (runtime/projection.py).
    """
    cea, labels, _ = _compile(pattern, atoms, projection, strict, project, limits)
    return cea, labels


Variables = dict[Transition, frozenset[frozenset[str]]]
"""Per transition: the sets of names (event types and variables) the event it reads is bound
to; several when several transitions of the construction became one."""


def compile_named(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None = None,
    *,
    strict: bool = False,
) -> tuple[CEA, Variables]:
    """:func:`compile_pattern`, plus the names each transition binds: to draw the automaton."""
    cea, _, variables = _compile(pattern, atoms, projection, strict, None)
    return cea, variables


def _compile(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None,
    strict: bool,
    project: frozenset[str] | None,
    limits: Limits | None = None,
) -> tuple[CEA, Labels, Variables]:
    builder = Builder(atoms, limits)
    # The construction makes many small objects and frees none: the cyclic garbage
    # collector would scan them again and again (a large product took 2.7x as long).
    collecting = gc.isenabled()
    gc.disable()
    try:
        frag = builder.build(pattern)
    finally:
        if collecting:
            gc.enable()
    q0 = builder.state()
    vts = list(frag.transitions)
    anchored = bool(frag.waits)
    if anchored:
        # A NEXT/LAST/MAX at the start of the pattern (kleene.language.selectors allows it
        # without a window): the automaton runs once, from the stream's start, so that the
        # selector's competitors are all the matches of its pattern since then; the other
        # starts wait with a TRUE loop, as after ';' (kleene.runtime.anchored).
        if strict:
            raise ValueError("a nested selector at the start of the pattern under SELECT STRICT")
        vts.extend(VT(i, 0, frozenset(), i) for i in sorted(frag.initial - frag.waits))
    vts.extend(t.moved(q0, t.target) for t in list(vts) if t.source in frag.initial)
    builder.grew(len(vts))
    finals_in = set(frag.finals)
    if strict:
        vts, q0, finals_in = _strict(vts, q0, finals_in)
        builder.grew(len(vts))

    def marked(labels: frozenset[str]) -> bool:
        return bool(labels) if projection is None else bool(labels & projection)

    # Keep only useful states, reachable from q0 and reaching a final state:
    # runs anywhere else can never output, so they need not be tracked.
    forward: dict[int, set[int]] = {}
    backward: dict[int, set[int]] = {}
    for t in vts:
        forward.setdefault(t.source, set()).add(t.target)
        backward.setdefault(t.target, set()).add(t.source)
    reachable = _closure({q0}, forward)
    useful = reachable & _closure(finals_in, backward)
    reachable = useful | {q0}
    numbering = {s: n for n, s in enumerate(sorted(reachable))}
    labels: dict[Transition, set[bool]] = {}
    names: dict[Transition, set[frozenset[str]]] = {}
    for t in vts:
        if t.source in reachable and t.target in useful:
            tr = Transition(
                numbering[t.source], t.mask, marked(t.labels), numbering[t.target], t.neg
            )
            flags = labels.setdefault(tr, set())
            names.setdefault(tr, set()).add(t.labels)
            if tr.marked and project is not None:
                flags.add(bool(t.labels & project))
    transitions = tuple(
        sorted(labels, key=lambda t: (t.source, t.target, t.mask, t.neg, t.marked))
    )
    finals = frozenset(numbering[s] for s in finals_in if s in useful)
    cea = CEA(len(numbering), transitions, numbering[q0], finals, anchored)
    return (
        cea,
        {t: frozenset(f) for t, f in labels.items() if f},
        {t: frozenset(v) for t, v in names.items()},
    )


def _strict(vts: list[VT], q0: int, finals: set[int]) -> tuple[list[VT], int, set[int]]:
    """Product with a monitor that allows no gap inside a match (CEL thesis Thm 7.4).

    An event is in the match iff its transition binds a variable (non-empty
    label); a TRUE/∅ transition skips an event.  Once a run has skipped an
    event after its first one, it may only skip: it can still reach a final
    state only if it already did.  Runs start in mode "contiguous" (their
    first event is in the match), so the product has two copies of each
    state: ``(q, False)`` contiguous so far, ``(q, True)`` after a gap.
    The strategy sees the whole match, before projection.
    """
    ids: dict[tuple[int, bool], int] = {}

    def state(q: int, gap: bool) -> int:
        return ids.setdefault((q, gap), len(ids))

    start = state(q0, False)
    by_source: dict[int, list[VT]] = {}
    for t in vts:
        by_source.setdefault(t.source, []).append(t)
    out: list[VT] = []
    todo = [(q0, False)]
    seen = {(q0, False)}
    while todo:
        q, gap = todo.pop()
        for t in by_source.get(q, ()):
            if t.labels and gap:
                continue  # an event of the match after a gap: not contiguous
            nxt = (t.target, gap or not t.labels)
            out.append(t.moved(state(q, gap), state(*nxt)))
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    new_finals = {i for (q, _), i in ids.items() if q in finals}
    return out, start, new_finals


def _closure(start: set[int], edges: dict[int, set[int]]) -> set[int]:
    seen, todo = set(start), list(start)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
