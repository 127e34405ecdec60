"""Derive the terrain grids of the 23 SMAC maps from SMAC's own map archives.

Usage::

    python scripts/derive_terrain.py MAPS_DIR [--out sc2_envs/data/smac_terrain.npz] [--check]

``MAPS_DIR`` holds the ``<map>.SC2Map`` archives of oxwhirl/smac
(``smac/env/starcraft2/maps/SMAC_Maps/``, MIT licence). ``--check`` re-derives and compares with the
committed file instead of writing it (exit status 1 on any difference).

Each archive is an MPQ (read with ``mpyq``). Three of its terrain files are used; each starts with a
four-character tag, a version and the grid size (little-endian ``uint32`` at bytes 8 and 12):

``t3SyncCliffLevel`` (tag ``CLIF``, 32-byte header): one ``uint16`` per cell, row-major ``[y][x]``.
    Plateaus are multiples of 64 (0 = the lowest level, 64, 128, ...); ramp cells hold the
    in-between values (72, 88, 104 on 2c_vs_64zg's ramps).
``t3CellFlags`` (tag ``LFCT``, 32-byte header): one byte per cell, row-major ``[y][x]``. Bit 0 marks
    the cells ground units cannot stand on, at the resolution of the editor's 2x2 cliff cells: the
    cliff faces along every change of cliff level and the ground painted unpathable.
``t3SyncHeightMap`` (tag ``SMAP``, 64-byte header): one ``uint32`` per *vertex*, ``(w+1) x (h+1)``,
    row-major; the low 16 bits are the gameplay terrain height in 1/256 world units (plateau 64 at
    8.0, plateau 128 at 10.0: SC2 cliff levels are 2 units apart).

Outputs, per map ``m`` (arrays indexed ``[x, y]``, cell ``[x, x+1) x [y, y+1)``, y up as in SC2):

``m/pathing``      bool   walkable for ground units, at cell resolution (see ``cell_pathing``): a cell
                   is closed if any of its 8 neighbours lies on another plateau (the cliff face:
                   one cell on each side of a change of cliff level), or if it is at cliff level 0
                   and ``t3CellFlags`` marks it unpathable; next to ramp cells ``t3CellFlags`` decides
                   (the ramp's side walls). This equals ``t3CellFlags`` on every axis-aligned
                   cliff; along diagonal cliffs ``t3CellFlags`` closes whole 2x2 blocks, which
                   would cut corridor's neck (the zerglings could never reach their attack point),
                   while this keeps the staircase cell by cell.
``m/editor_pathing`` bool ``t3CellFlags`` bit 0 clear, kept for comparison.
``m/cliff_level``  uint16 ``t3SyncCliffLevel``.
``m/height``       uint8  the terrain-height byte of the SC2 API's ``GameInfo.start_raw.terrain_height``
                   (the image SMAC reads for ``obs_terrain_height`` and divides by 255): world height
                   ``z`` at the cell centre (mean of its four vertices), encoded as
                   ``round((z + 16) * 255 / 32)``, the inverse of ``z = -16 + 32 * byte / 255`` used by
                   BurnySc2/python-sc2 (``sc2/bot_ai.py`` ``get_terrain_z_height``).
``m/sha256``       the archive's SHA-256, so a test can tell which archive the grids came from.

The file formats are not published by Blizzard; the layouts above were read from the bytes and agree
with public map tools (e.g. the ``CLIF``/``SMAP`` readers of open-source SC2 map generators) and with
the maps' own outlines (the walkable band of the marine maps is rows 8..23, as SMAClite's
``simple.slt`` terrain has it).
"""

from __future__ import annotations

import argparse
import hashlib
import struct
import sys
from pathlib import Path

import numpy as np

SMAC_MAPS = [
    "3m",
    "8m",
    "25m",
    "5m_vs_6m",
    "8m_vs_9m",
    "10m_vs_11m",
    "27m_vs_30m",
    "MMM",
    "MMM2",
    "2s3z",
    "3s5z",
    "3s5z_vs_3s6z",
    "3s_vs_3z",
    "3s_vs_4z",
    "3s_vs_5z",
    "1c3s5z",
    "2m_vs_1z",
    "corridor",
    "6h_vs_8z",
    "2s_vs_1sc",
    "so_many_baneling",
    "bane_vs_bane",
    "2c_vs_64zg",
]
UNPATHABLE_BIT = 0x01


def _header(blob: bytes, tag: bytes, name: str) -> tuple[int, int]:
    if blob[:4] != tag:
        raise ValueError(f"{name}: expected tag {tag!r}, got {blob[:4]!r}")
    return struct.unpack_from("<II", blob, 8)


def _cells(blob: bytes, tag: bytes, name: str, dtype: str, header: int) -> np.ndarray:
    """A per-cell grid stored row-major ``[y][x]``, returned indexed ``[x, y]``."""
    w, h = _header(blob, tag, name)
    if tag == b"LFCT":  # the cell-flags header keeps its size at bytes 24..31
        w, h = struct.unpack_from("<II", blob, 24)
    n = w * h * np.dtype(dtype).itemsize
    if len(blob) < header + n:
        raise ValueError(f"{name}: {len(blob)} bytes, expected at least {header + n} for a {w}x{h} grid")
    return np.frombuffer(blob[header : header + n], dtype=dtype).reshape(h, w).T.copy()


def cell_pathing(cliff: np.ndarray, editor_pathing: np.ndarray) -> np.ndarray:
    """Ground pathing at cell resolution from the cliff levels and the editor's 2x2 pathing (``[x, y]``).

    A cell is closed when an 8-neighbour lies on another plateau (``round(level / 64)`` differs;
    the map border counts as the same plateau), or when it is at level 0 and the editor marks it
    unpathable. Within one cell of a ramp cell (level not a multiple of 64) the editor's flag is
    used as is: it carries the ramp's walkable width and its side walls.
    """
    n, m = cliff.shape
    plateau = np.floor(cliff.astype(np.float64) / 64 + 0.5).astype(np.int64)
    ramp = (cliff % 64) != 0
    pad_p = np.pad(plateau, 1, mode="edge")
    pad_r = np.pad(ramp, 1)
    face = np.zeros((n, m), dtype=bool)
    near_ramp = np.zeros((n, m), dtype=bool)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            face |= pad_p[1 + dx : 1 + dx + n, 1 + dy : 1 + dy + m] != plateau
            near_ramp |= pad_r[1 + dx : 1 + dx + n, 1 + dy : 1 + dy + m]
    own = ~face & ((cliff > 0) | editor_pathing)
    return np.where(near_ramp, editor_pathing, own)


def derive_map(path: Path) -> dict[str, np.ndarray]:
    """The grids of one ``.SC2Map`` archive (see the module docstring for the formats).

    Raises:
        ValueError: if a terrain file is missing or not in the expected format.
    """
    import mpyq  # only this script needs it: pip install mpyq==0.2.5

    raw = path.read_bytes()
    arch = mpyq.MPQArchive(str(path))
    files = {}
    for f in ("t3SyncCliffLevel", "t3CellFlags", "t3SyncHeightMap"):
        blob = arch.read_file(f)
        if blob is None:
            raise ValueError(f"{path.name}: no {f} in the archive")
        files[f] = blob
    cliff = _cells(files["t3SyncCliffLevel"], b"CLIF", f"{path.name}:t3SyncCliffLevel", "<u2", 32)
    flags = _cells(files["t3CellFlags"], b"LFCT", f"{path.name}:t3CellFlags", "u1", 32)
    vw, vh = _header(files["t3SyncHeightMap"], b"SMAP", f"{path.name}:t3SyncHeightMap")
    if (vw - 1, vh - 1) != cliff.shape:
        raise ValueError(f"{path.name}: height map has {vw}x{vh} vertices, expected {cliff.shape[0] + 1}x{cliff.shape[1] + 1}")
    vert = np.frombuffer(files["t3SyncHeightMap"][64 : 64 + vw * vh * 4], dtype="<u4").reshape(vh, vw).T
    z_vert = (vert & 0xFFFF).astype(np.float64) / 256.0  # [x, y] vertices, world units
    z_cell = (z_vert[:-1, :-1] + z_vert[1:, :-1] + z_vert[:-1, 1:] + z_vert[1:, 1:]) / 4.0
    height = np.clip(np.round((z_cell + 16.0) * 255.0 / 32.0), 0, 255).astype(np.uint8)
    editor = (flags & UNPATHABLE_BIT) == 0
    return {
        "pathing": cell_pathing(cliff, editor),
        "editor_pathing": editor,
        "cliff_level": cliff.astype(np.uint16),
        "height": height,
        "sha256": np.array(hashlib.sha256(raw).hexdigest()),
    }


def derive_all(maps_dir: Path) -> dict[str, np.ndarray]:
    """Grids of every SMAC map, keyed ``"<map>/<grid>"``.

    Raises:
        FileNotFoundError: if an archive is missing from ``maps_dir``.
    """
    out = {}
    for name in SMAC_MAPS:
        path = maps_dir / f"{name}.SC2Map"
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found; expected the 23 SMAC_Maps archives of oxwhirl/smac in {maps_dir}")
        for k, v in derive_map(path).items():
            out[f"{name}/{k}"] = v
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("maps_dir", type=Path, help="folder with SMAC's <map>.SC2Map archives")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "sc2_envs" / "data" / "smac_terrain.npz")
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = ap.parse_args(argv)
    grids = derive_all(args.maps_dir)
    if args.check:
        with np.load(args.out) as old:
            bad = [k for k in grids if k not in old or not np.array_equal(old[k], grids[k])]
            bad += [k for k in old.files if k not in grids]
        for k in bad:
            print(f"differs: {k}")
        print(f"{len(grids) - len(bad)}/{len(grids)} arrays equal")
        return 1 if bad else 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **grids)
    for name in SMAC_MAPS:
        p, c = grids[f"{name}/pathing"], grids[f"{name}/cliff_level"]
        e = grids[f"{name}/editor_pathing"]
        print(
            f"{name:18s} walkable {int(p.sum()):4d} "
            f"(t3CellFlags: {int(e.sum()):4d}, {int((p != e).sum()):2d} cells differ)  "
            f"cliff levels {sorted(set(c.ravel().tolist()))}  "
            f"height bytes {sorted(set(grids[f'{name}/height'][p].ravel().tolist()))}"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
