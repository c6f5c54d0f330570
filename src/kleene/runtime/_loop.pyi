from collections.abc import Hashable, Sequence

import numpy as np

from kleene.runtime.contract import FoundSink
from kleene.runtime.engine import Engine
from kleene.runtime.visits import Visits

def steps(engine: Engine, plan: Visits, positions: np.ndarray, times: np.ndarray | None,
          keys: Sequence[Sequence[Hashable]] | None, cand: np.ndarray | None, out: FoundSink) -> bool: ...
