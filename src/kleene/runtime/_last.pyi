from typing import Any

from kleene.runtime.tecs import Node

def last_below(root: Node, tau: int | float, memo: dict[int, Any]) -> Any: ...
