from collections.abc import Callable

import numpy as np

class Lines:
    line_offsets: np.ndarray
    def __init__(
        self,
        start: np.ndarray,
        end: np.ndarray,
        offsets: np.ndarray,
        positions: np.ndarray,
        rows: np.ndarray,
        row_offsets: np.ndarray,
        row_data: np.ndarray,
        heads: list[bytes],
        head_of: np.ndarray | None,
        tails: list[bytes],
        tail_of: np.ndarray | None,
    ) -> None: ...
    def text(self) -> bytes: ...
    def write_to(self, write: Callable[[memoryview], object], chunk: int = ...) -> int: ...

def join(constants: list[bytes], offsets: list[np.ndarray], datas: list[np.ndarray]) -> tuple[bytes, np.ndarray]: ...
