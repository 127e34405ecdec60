"""Ground navigation on a map's pathing grid: a coarse graph with all-pairs next hops.

The map's pathing grid is grouped into square blocks of ``block`` cells (2 by default). A block is
a node when at least half of its cells are pathable; nodes are joined to their 8 neighbours (a
diagonal only when both side neighbours are nodes, so paths never cut a cliff corner) with the
centre-to-centre distance as cost. Ramps are pathable cells joining the levels, so routes between
plateaus go over them. All-pairs shortest paths (Dijkstra, ``scipy.sparse.csgraph``) give, for
every (target, current) pair, the next node to walk to: a unit walks to the centre of that node
until it is in the target's node, then straight to the target.

The table costs ``nodes**2`` int16 (about 6 MB for Simple64's ~1,700 nodes) and is computed
once per map and process (about 1 s).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Navigation:
    """Next-hop tables of one pathing grid.

    Attributes:
        node: ``(H, W)`` int32, the node of each cell (an unpathable cell maps to the nearest node;
            -1 only when the grid has no pathable cell).
        next_hop: ``(N, N)`` int16, ``next_hop[target, current]`` is the node after ``current`` on
            a shortest path to ``target`` (-1 when unreachable; ``target`` itself when adjacent).
        x, y: ``(N,)`` float32, node centres in cells.
        block: block size in cells.
    """

    node: np.ndarray
    next_hop: np.ndarray
    x: np.ndarray
    y: np.ndarray
    block: int


def build_navigation(pathing: np.ndarray, block: int = 2) -> Navigation:
    """Navigation tables of a pathing grid.

    Args:
        pathing: ``(H, W)`` array, nonzero where ground units may walk; row ``y`` is world y
            (bottom row first), column ``x`` is world x.
        block: block size in cells (>= 1).

    Returns:
        A ``Navigation``.

    Raises:
        ValueError: ``pathing`` is not 2-D, or ``block`` is not a positive int.
    """
    from scipy.ndimage import distance_transform_edt
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import shortest_path

    grid = np.asarray(pathing)
    if grid.ndim != 2:
        raise ValueError(f"pathing has shape {grid.shape}; expected a 2-D (H, W) grid")
    if not isinstance(block, int) or block < 1:
        raise ValueError(f"block={block!r}; expected a positive int")
    h, w = grid.shape
    bh, bw = -(-h // block), -(-w // block)
    padded = np.zeros((bh * block, bw * block), dtype=np.float32)
    padded[:h, :w] = grid != 0
    share = padded.reshape(bh, block, bw, block).mean(axis=(1, 3))
    is_node = share >= 0.5
    ids = -np.ones((bh, bw), dtype=np.int64)
    n = int(is_node.sum())
    ids[is_node] = np.arange(n)
    by, bx = np.nonzero(is_node)
    # Node centre: the mean of its pathable cells, so a half-open block's centre stays on the open side.
    cell_y, cell_x = np.mgrid[0 : bh * block, 0 : bw * block]
    wsum = padded.reshape(bh, block, bw, block).sum(axis=(1, 3))
    cx = (padded * (cell_x + 0.5)).reshape(bh, block, bw, block).sum(axis=(1, 3)) / np.maximum(wsum, 1)
    cy = (padded * (cell_y + 0.5)).reshape(bh, block, bw, block).sum(axis=(1, 3)) / np.maximum(wsum, 1)
    rows, cols, costs = [], [], []
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        ny, nx = by + dy, bx + dx
        ok = (ny >= 0) & (ny < bh) & (nx >= 0) & (nx < bw)
        ny_, nx_ = np.where(ok, ny, 0), np.where(ok, nx, 0)
        ok &= is_node[ny_, nx_]
        if dx != 0 and dy != 0:
            ok &= is_node[by, np.clip(bx + dx, 0, bw - 1)] & is_node[np.clip(by + dy, 0, bh - 1), bx]
        a = ids[by[ok], bx[ok]]
        b = ids[ny_[ok], nx_[ok]]
        d = np.hypot(cx[by[ok], bx[ok]] - cx[ny_[ok], nx_[ok]], cy[by[ok], bx[ok]] - cy[ny_[ok], nx_[ok]])
        rows += [a, b]
        cols += [b, a]
        costs += [d, d]
    if n == 0:
        return Navigation(
            -np.ones((h, w), np.int32), np.zeros((0, 0), np.int16), np.zeros(0, np.float32), np.zeros(0, np.float32), block
        )
    graph = coo_matrix((np.concatenate(costs), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)).tocsr()
    _, pred = shortest_path(graph, method="D", directed=False, return_predecessors=True)
    # pred[t, c] is the node before c on the path from t to c, i.e. the node after c toward t.
    next_hop = np.where(pred < 0, -1, pred).astype(np.int16)
    np.fill_diagonal(next_hop, np.arange(n, dtype=np.int16))
    if n >= np.iinfo(np.int16).max:
        raise ValueError(f"{n} navigation nodes do not fit int16; use a larger block")
    # Every cell maps to its block's node, or to the nearest node block when its block is not one.
    _, (iy, ix) = distance_transform_edt(~is_node, return_indices=True)
    block_node = ids[iy, ix].astype(np.int32)
    node = np.repeat(np.repeat(block_node, block, axis=0), block, axis=1)[:h, :w]
    return Navigation(
        node=np.ascontiguousarray(node),
        next_hop=np.ascontiguousarray(next_hop),
        x=cx[by, bx].astype(np.float32),
        y=cy[by, bx].astype(np.float32),
        block=block,
    )


@functools.lru_cache(maxsize=4)
def cached_navigation(key: str, pathing_bytes: bytes, shape: tuple[int, int], block: int = 2) -> Navigation:
    """``build_navigation`` memoised per map (``key`` names it; the grid travels as bytes)."""
    grid = np.frombuffer(pathing_bytes, dtype=np.uint8).reshape(shape)
    return build_navigation(grid, block)
