"""Measure how well the lite engine's Simple64 terrain description agrees with a copy of the map.

Reads a ``Simple64.SC2Map`` (yours, or a public copy such as natangold85/IAIAI_RL_pysc2
``Maps/Simple64.SC2Map`` @0542232; it is read, never stored) with
``sc2_envs.lite.data.simple64.from_map_archive`` and compares its cliff-level, pathing and
placement grids with the description's (``cliff_level_grid``, ``pathing_grid``,
``placement_grid``). Prints the share of equal cells over the whole 88 x 96 map and over the
cells that are ground in either grid. Exit status 1 when the whole-map cliff agreement is under
0.98 (the issue's bar).

``--derive EPS`` instead prints a description traced from the archive: the boundary of the ground
and of the high ground, simplified with Douglas-Peucker at tolerance EPS cells and rounded to
half cells, and each ramp's cells as a diamond with its low and high ends. The polygons in
``simple64.py`` came from ``--derive 0.8``.

Usage:
    python scripts/lite_simple64_terrain.py PATH/TO/Simple64.SC2Map
    python scripts/lite_simple64_terrain.py PATH/TO/Simple64.SC2Map --derive 0.8
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def agreement(ours: np.ndarray, theirs: np.ndarray, ground: np.ndarray) -> tuple[float, float]:
    """(share of equal cells over the map, share over ``ground`` cells)."""
    eq = ours == theirs
    return float(eq.mean()), float(eq[ground].mean())


def _douglas_peucker(pts: np.ndarray, eps: float) -> np.ndarray:
    if len(pts) < 3:
        return pts
    a, b = pts[0], pts[-1]
    ab = b - a
    n = float(np.hypot(*ab))
    rel = pts - a
    d = np.abs(ab[0] * rel[:, 1] - ab[1] * rel[:, 0]) / n if n > 0 else np.hypot(rel[:, 0], rel[:, 1])
    i = int(np.argmax(d))
    if d[i] > eps:
        left = _douglas_peucker(pts[: i + 1], eps)
        right = _douglas_peucker(pts[i:], eps)
        return np.vstack([left[:-1], right])
    return np.vstack([a, b])


def trace(mask: np.ndarray, eps: float) -> list[list[tuple[float, float]]]:
    """Simplified boundary polygons (x, y) of a [y, x] mask, through the 0.5 contour of its cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h, w = mask.shape
    padded = np.pad(mask.astype(float), 1)
    cs = plt.contour(np.arange(-1, w + 1) + 0.5, np.arange(-1, h + 1) + 0.5, padded, levels=[0.5])
    out = []
    for seg in cs.allsegs[0]:
        if len(seg) < 8:
            continue
        simple = _douglas_peucker(np.vstack([seg, seg[:1]]), eps)[:-1]
        out.append([(float(x), float(y)) for x, y in np.round(simple * 2) / 2])
    plt.close("all")
    return out


def derive(arc, eps: float) -> None:
    from scipy import ndimage

    cliff = arc.cliff_level.astype(int)
    print("GROUND_POLYGONS =", trace(cliff > 0, eps))
    print("PLATEAU_POLYGONS =", trace(cliff >= 184, eps))
    labels, n = ndimage.label((cliff > 128) & (cliff < 192))
    for i in range(1, n + 1):
        cells = np.argwhere(labels == i)  # (y, x)
        lv = cliff[labels == i]
        low = cells[lv == lv.min()].mean(0)[::-1] + 0.5
        high = cells[lv == lv.max()].mean(0)[::-1] + 0.5
        cy, cx = cells.mean(0) + 0.5
        r = np.abs(cells[:, 1] + 0.5 - cx).max() + np.abs(cells[:, 0] + 0.5 - cy).max()
        print(
            f"ramp {i}: {len(cells)} cells, centre ({cx:.2f}, {cy:.2f}), diamond half-diagonal <= {r:.2f}, "
            f"low {low}, high {high}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("map", type=Path, help="a Simple64.SC2Map")
    ap.add_argument("--derive", type=float, metavar="EPS", help="print a description traced from the map instead")
    args = ap.parse_args()

    from sc2_envs.lite.data import simple64

    digest = hashlib.sha256(args.map.read_bytes()).hexdigest()
    print(f"map {args.map} sha256 {digest}")
    arc = simple64.from_map_archive(args.map)
    if args.derive is not None:
        derive(arc, args.derive)
        return 0
    ours_cliff = simple64.cliff_level_grid()
    ground = (ours_cliff > 0) | (arc.cliff_level > 0)
    rows = {
        "cliff_level": agreement(ours_cliff, arc.cliff_level, ground),
        "pathing": agreement(simple64.pathing_grid(), arc.pathable, ground),
        "placement": agreement(simple64.placement_grid(), arc.placement, ground),
        "pathing_rule_on_archive_cliffs": agreement(simple64.pathing_grid(arc.cliff_level), arc.pathable, ground),
    }
    for name, (whole, on_ground) in rows.items():
        print(f"{name:32s} all cells {whole:.4f}   ground cells {on_ground:.4f}")
    print(f"playable area: archive {arc.playable_area}, module {simple64.PLAYABLE_AREA}")
    cliff_all = rows["cliff_level"][0]
    print(
        f"SUMMARY cliff_all={cliff_all:.4f} cliff_ground={rows['cliff_level'][1]:.4f} "
        f"pathing_all={rows['pathing'][0]:.4f} pathing_ground={rows['pathing'][1]:.4f} "
        f"placement_all={rows['placement'][0]:.4f} placement_ground={rows['placement'][1]:.4f}"
    )
    return 0 if cliff_all >= 0.98 else 1


if __name__ == "__main__":
    sys.exit(main())
