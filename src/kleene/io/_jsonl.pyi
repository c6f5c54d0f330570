import numpy as np

def lines(
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
) -> tuple[bytes, np.ndarray]: ...
