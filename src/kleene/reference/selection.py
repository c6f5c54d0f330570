"""Selection strategies on matches, as the reference evaluator applies them (CEL thesis §4, the
valuation-free reading: full position sets compared among those with the same end).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from kleene.language import ast


def next_less(a: frozenset[int], b: frozenset[int]) -> bool:
    """``a <_next b``: at the first position where they differ, ``b`` has it (thesis §4)."""
    return a != b and min(a ^ b) in b


def last_less(a: frozenset[int], b: frozenset[int]) -> bool:
    """``a <_last b``: at the last position where they differ, ``b`` has it."""
    return a != b and max(a ^ b) in b


def _maximum(
    group: Iterable[frozenset[int]], less: Callable[[frozenset[int], frozenset[int]], bool]
) -> frozenset[int]:
    """The maximum of a non-empty group under a total order given by ``less``."""
    it = iter(group)
    best = next(it)
    for d in it:
        if less(best, d):
            best = d
    return best


def select_matches(
    strategy: ast.Strategy, matches: Iterable[frozenset[int]], substream: Sequence[int]
) -> set[frozenset[int]]:
    """The matches (full position sets) a selection strategy keeps.

    ``matches`` are the matches of one partition, ``substream`` its increasing
    global positions.  Strategies only compare matches with the same end
    (``max``), so each end position is decided on its own, from the prefix
    that ends there (the thesis's streamability requirement).
    """
    all_matches = set(matches)
    if strategy in ("ALL", "ANY"):
        return all_matches
    if strategy == "STRICT":
        rank = {p: k for k, p in enumerate(substream)}
        return {d for d in all_matches if rank[max(d)] - rank[min(d)] + 1 == len(d)}
    by_end: dict[int, list[frozenset[int]]] = defaultdict(list)
    for d in all_matches:
        by_end[max(d)].append(d)
    if strategy == "NEXT":
        return {_maximum(group, next_less) for group in by_end.values()}
    if strategy == "LAST":
        return {_maximum(group, last_less) for group in by_end.values()}
    if strategy == "MAX":
        return {d for group in by_end.values() for d in group if not any(d < e for e in group)}
    raise ValueError(f"unknown selection strategy {strategy!r}")
