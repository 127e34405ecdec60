"""Mineral income of the lite engine against the replays' PlayerStats, by worker count.

Puts N Probes on the Protoss main's 8 mineral fields (spread evenly, as the game's starting split
and worker bounce do), lets them mine for 1,600 loops to settle, then counts minerals over 2,688
loops (two real minutes) and prints the income per real (Faster) minute next to the median
PlayerStats collection rate of the mini-AlphaStar Simple64 replays at the same worker count with
no gas income (3.16.1.55958; liuruoze/HierNet-SC2 and liuruoze/Useful-Big-Resources replays,
s2protocol tracker events; 12 workers is a loop-320 value, during the opening's ramp).

Usage:
    python benchmarks/fullgame_mining.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sc2_envs.lite import kernels  # noqa: E402
from sc2_envs.lite.catalog import TI_RESOURCE  # noqa: E402
from sc2_envs.lite.engine import LiteEngine  # noqa: E402
from sc2_envs.lite.layout import (  # noqa: E402
    OI_KIND,
    OI_TARGET,
    ORD_GATHER,
    PF_COLLECTED_MINERALS,
    UF_X,
    UF_Y,
    UI_ALIVE,
    UI_GATHER,
    UI_NORDERS,
    UI_OWNER,
    UI_TYPE,
)

REPLAY_MEDIAN = {12: 671, 16: 867, 20: 1035, 24: 1133}
"""Median PlayerStats minerals collection rate (per real minute) at N Protoss workers, no gas."""


def income(workers: int) -> float:
    """Minerals per real minute (1,344 game loops) with ``workers`` Probes on the main's fields."""
    eng = LiteEngine(1)
    st, cat = eng.state, eng.catalog
    uf, ui = st.uf[0], st.ui[0]
    probes = np.flatnonzero((ui[:, UI_ALIVE] == 1) & (ui[:, UI_TYPE] == cat.ids["Probe"]))
    ui[probes[workers:], UI_ALIVE] = 0
    hx, hy = eng.map.start_locations[0]
    fields = [
        m
        for m in range(eng.first_free)
        if cat.ti[ui[m, UI_TYPE], TI_RESOURCE] == 1 and np.hypot(uf[m, UF_X] - hx, uf[m, UF_Y] - hy) < 12
    ]
    for k in range(max(0, workers - len(probes))):
        s = kernels.spawn(
            uf,
            ui,
            st.oi[0],
            st.pq[0],
            st.occ[0],
            cat.ti,
            cat.tf,
            cat.ids["Probe"],
            1,
            hx - 2.5,
            hy + 2.5 - 0.3 * k,
            True,
            eng.first_free,
        )
        mine = (ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 1)
        r = min(
            fields, key=lambda m: (int((mine & (ui[:, UI_GATHER] == m)).sum()), np.hypot(uf[m, UF_X] - hx, uf[m, UF_Y] - hy))
        )
        ui[s, UI_GATHER] = r
        st.oi[0, s, 0, OI_KIND], st.oi[0, s, 0, OI_TARGET] = ORD_GATHER, r
        ui[s, UI_NORDERS] = 1
    eng.advance(1600)
    start = st.pf[0, 1, PF_COLLECTED_MINERALS]
    eng.advance(2688)
    return float(st.pf[0, 1, PF_COLLECTED_MINERALS] - start) / 2.0


def main() -> None:
    print("workers  lite/min  replays/min  rel.err")
    for n, ref in REPLAY_MEDIAN.items():
        got = income(n)
        print(f"{n:7d}  {got:8.0f}  {ref:11d}  {(got - ref) / ref:+7.3f}")


if __name__ == "__main__":
    epilog = f"Takes no options; prints one line per worker count ({', '.join(map(str, REPLAY_MEDIAN))})."
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=epilog).parse_args()
    main()
