from collections.abc import Hashable

from kleene.runtime.enumeration import Columns, Ints
from kleene.runtime.tecs import Node

def walk(
    node: Node, tau: int | float, limit: int, starts: Ints, lengths: Ints, flat: Ints
) -> int: ...
def add_node(self: Columns, node: Node, tau: int | float, limit: int, end: int, key: Hashable) -> int: ...
def _release() -> None: ...
