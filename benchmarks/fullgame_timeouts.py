"""Why a full-game policy's games time out: the state at the end of each game on the lite engine.

Plays ``--games`` games of one policy (an ``AlphaStarPolicy`` checkpoint, or the ``scripted`` /
``random`` baseline) against the lite very_easy Terran bot, all at once, each game to its first end
(a win or loss by the melee rule, or ``--game-steps-per-episode``), and reads the engine's state
after every decision. With the same seed and ``--games`` equal to ``eval_fullgame.py``'s
``--num-envs`` it plays the same games. It prints, per outcome (won / lost / timed out):

* **the end**: mean end minute; median minute of first contact (an agent army unit within ``--near``
  cells of a bot structure); the bot's structures left and how many of them the agent ever saw (fog
  of war: a structure is "seen" once it stood on a visible cell at a decision); the structures
  destroyed, and how many in the last ``--tail-minutes``; both armies at the end (the agent's units,
  and those within ``--near`` of a bot structure); the agent's army units lost; the killed value and
  the games above mini-AlphaStar's 4,000 killed points (:data:`MAS_WIN_KILLED_VALUE`).
* **a timeline** (:data:`TIMELINE` at :data:`TIMELINE_MINUTES`): the agent's army supply, army units
  lost, finished Gateways, workers, minerals, free supply, and the bot's army units.
* **the opening and the last minutes**: the policy's most frequent action types in the first
  ``--opening-minutes`` and the last ``--tail-minutes`` of each game, and the refused commands by kind.
* **how early the outcome is decided**: win rate by the army supply at 5 minutes and by the Gateways
  finished at 4.
* **each game that was not won**: the bot's structures left (type, position, hit points, seen or
  not), the agent's army (units, centre, distance to the nearest bot structure, their orders).

Positions are map cells (x east, y north); minutes are real (Faster) minutes of 1,344 game loops.

Usage:
    python benchmarks/fullgame_timeouts.py --policy checkpoints/fullgame/bc_simple64_tiny_sqrtmix.pt \\
        --games 100 --seed 48
"""

from __future__ import annotations

import os

# Idle OpenMP threads spin ~10 us before they sleep (sc2_envs.training.wait_policy); set before torch loads.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import argparse
import collections
import itertools
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sc2_envs.full_game import spec  # noqa: E402
from sc2_envs.lite import layout as L  # noqa: E402
from sc2_envs.lite.catalog import TF_HP, TI_ARMY, TI_STRUCTURE  # noqa: E402
from sc2_envs.training.fullgame_actor import LOOPS_PER_MINUTE  # noqa: E402
from sc2_envs.training.fullgame_evaluation import load_policy, make_actor  # noqa: E402

ORDER_NAMES = {
    L.ORD_NONE: "idle",
    L.ORD_MOVE: "move",
    L.ORD_ATTACK_MOVE: "attack_move",
    L.ORD_ATTACK: "attack_unit",
    L.ORD_HOLD: "hold",
    L.ORD_FOLLOW: "follow",
}
"""Names of the order kinds an army unit can hold (``sc2_envs.lite.layout`` ``ORD_*``)."""

TIMELINE_MINUTES = (4.0, 5.0, 6.0, 8.0, 10.0, 12.0)
"""Real minutes at which :func:`timeline_row` reads both sides."""

TIMELINE = ("army_supply", "army_lost", "gateways", "workers", "minerals", "supply_free", "bot_army")
"""What :func:`timeline_row` reads: the agent's army supply (``food_army``), its army units lost so far, its
finished Gateways, its workers, its unspent minerals, its free supply (food cap - food used), and the bot's
army units alive."""


@dataclass
class Structure:
    """One bot structure alive at the end of a game.

    Attributes:
        name: unit type (``SupplyDepot``, ``Barracks``, ...); x, y: centre, map cells.
        hp, hp_max: hit points now and at full health; done: finished (not under construction).
        seen: the agent saw it at some decision (its cell was visible); visible: visible at the end.
    """

    name: str
    x: float
    y: float
    hp: float
    hp_max: float
    done: bool
    seen: bool
    visible: bool


@dataclass
class GameTrace:
    """What one game looked like, read from the lite engine's state after every decision.

    Attributes:
        game: index in the batch; outcome: +1 win, -1 loss, 0 timeout (FullGame-v0's final reward).
        end_loop: game loops played.
        first_contact_loop: first loop at which an agent army unit stood within ``near`` cells of a bot
            structure (None: never).
        structures_lost_loops: game loops at which the bot lost a structure.
        structures_left: the bot's structures alive at the end.
        timeline: ``{minute: {name: value}}`` (:data:`TIMELINE`) at the first decision at or past each of
            :data:`TIMELINE_MINUTES` the game reached.
        army_lost: the agent's army units that died; killed_value, lost_value: minerals + gas of the bot's
            and of the agent's units and structures destroyed (score_cumulative killed_value_units + structures).
        army_units, army_near: the agent's army units at the end, and those within ``near`` cells of a
            bot structure; army_centre: their mean (x, y) (None without an army);
            army_distance: the distance from the nearest army unit to the nearest bot structure left (cells;
            None without either); army_orders: ``{order name: units}`` of the army at the end.
        actions: ``[(loop, raw function id, ActionResult code or 0)]``, one per decision (the loop before it).
        bot_army_units: the bot's army units alive at the end.
    """

    game: int
    outcome: float
    end_loop: int
    first_contact_loop: int | None
    structures_lost_loops: list[int]
    structures_left: list[Structure]
    timeline: dict
    army_units: int
    army_near: int
    army_centre: tuple[float, float] | None
    army_distance: float | None
    army_orders: dict
    actions: list[tuple[int, int, int]] = field(repr=False, default_factory=list)
    bot_army_units: int = 0
    army_lost: int = 0
    killed_value: float = 0.0
    lost_value: float = 0.0


def _nearest(px: np.ndarray, py: np.ndarray, qx: np.ndarray, qy: np.ndarray) -> np.ndarray:
    """For each point p, the distance to the nearest q (inf when there is no q)."""
    if len(qx) == 0:
        return np.full(len(px), np.inf)
    return np.sqrt((px[:, None] - qx[None]) ** 2 + (py[:, None] - qy[None]) ** 2).min(1)


def trace_games(
    policy: str,
    games: int,
    seed: int,
    step_mul: int = 0,
    game_steps_per_episode: int = 18000,
    omniscient: bool = False,
    greedy: bool = False,
    near: float = 10.0,
    device: str = "cpu",
) -> list[GameTrace]:
    """Play ``games`` lite games of ``policy`` at once, each to its first end, and trace them.

    Args:
        policy: an ``AlphaStarPolicy`` checkpoint path, or ``scripted`` / ``random``.
        games: B, >= 1; seed: ``env.reset(seed=seed)`` and torch's seed for sampled actions.
        step_mul: game loops per decision (0: the checkpoint's own, else 8).
        game_steps_per_episode: game loops before a game is cut (a timeout); 0: no limit.
        omniscient: no fog of war; greedy: argmax every head.
        near: cells from a bot structure within which an army unit counts as at the bot's base.
        device: torch device of a checkpoint's network.

    Returns:
        One :class:`GameTrace` per game, in batch order.

    Raises:
        ValueError: ``games < 1``, ``near <= 0``, or a policy that is neither a baseline nor a file.
    """
    import torch

    from sc2_envs.training.fullgame_actor import make_vector_env

    if int(games) < 1:
        raise ValueError(f"games={games!r}; expected an int >= 1")
    if not near > 0:
        raise ValueError(f"near={near!r}; expected a distance in cells > 0")
    model, step_mul, res = load_policy(policy, step_mul, device)
    b = int(games)
    env = make_vector_env(
        "lite",
        b,
        step_mul=step_mul,
        game_steps_per_episode=game_steps_per_episode,
        raw_resolution=res,
        minimap_resolution=res,
        omniscient=omniscient,
    )
    try:
        actor = make_actor(policy, model, env, b, raw_resolution=res, greedy=greedy, seed=seed, device=device)
        cat = env.engine.catalog
        is_structure = cat.ti[:, TI_STRUCTURE] == 1
        is_army = cat.ti[:, TI_ARMY] == 1
        names = cat.names
        gateway = cat.ids["Gateway"]
        loop_col = spec.SCALAR_INDEX["game_loop"]
        st = env.engine.state

        def masks():
            ui = st.ui
            alive = ui[:, :, L.UI_ALIVE] == 1
            types, owner = ui[:, :, L.UI_TYPE], ui[:, :, L.UI_OWNER]
            return (
                alive & (owner == 2) & is_structure[types],
                alive & (owner == 1) & is_army[types],
                alive & (owner == 2) & is_army[types],
                ui[:, :, L.UI_RECYCLE].copy(),
            )

        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            obs, _ = env.reset(seed=seed)
            start = np.asarray(obs["scalars"])[:, loop_col].astype(np.int64)
            prev_st, prev_army, _, prev_recycle = masks()
            contact = [None] * b
            lost = [[] for _ in range(b)]
            army_lost = np.zeros(b, np.int64)
            timeline = [dict() for _ in range(b)]
            actions = [[] for _ in range(b)]
            traces: list[GameTrace | None] = [None] * b
            while any(t is None for t in traces):
                action = actor(obs)
                at = np.asarray(action["action_type"]).reshape(b)
                loop_before = np.asarray(obs["scalars"])[:, loop_col].astype(np.int64) - start
                obs, reward, term, trunc, info = env.step(action)
                codes = np.asarray(info["action_errors"]).reshape(b, -1)
                loops = np.asarray(obs["scalars"])[:, loop_col].astype(np.int64) - start
                bot_st, mine, bot_army, recycle = masks()
                same = recycle == prev_recycle  # a slot reused since the last decision holds another unit
                st_gone = prev_st & ~(bot_st & same)
                army_gone = prev_army & ~(mine & same)
                prev_st, prev_army, prev_recycle = bot_st, mine, recycle
                uf, ui, pf = st.uf, st.ui, st.pf
                for g in range(b):
                    if traces[g] is not None:
                        continue
                    refused = codes[g][codes[g] != spec.NO_ACTION_ERROR]
                    actions[g].append((int(loop_before[g]), int(at[g]), int(refused[0]) if len(refused) else 0))
                    lost[g].extend([int(loops[g])] * int(st_gone[g].sum()))
                    army_lost[g] += int(army_gone[g].sum())
                    for m in TIMELINE_MINUTES:
                        if m not in timeline[g] and loops[g] >= m * LOOPS_PER_MINUTE:
                            gates = (ui[g, :, L.UI_ALIVE] == 1) & (ui[g, :, L.UI_TYPE] == gateway) & (ui[g, :, L.UI_DONE] == 1)
                            timeline[g][m] = {
                                "army_supply": float(pf[g, 1, L.PF_FOOD_ARMY]),
                                "army_lost": int(army_lost[g]),
                                "gateways": int((gates & (ui[g, :, L.UI_OWNER] == 1)).sum()),
                                "workers": int(pf[g, 1, L.PF_WORKERS]),
                                "minerals": float(pf[g, 1, L.PF_MINERALS]),
                                "supply_free": float(pf[g, 1, L.PF_FOOD_CAP] - pf[g, 1, L.PF_FOOD_USED]),
                                "bot_army": int(bot_army[g].sum()),
                            }
                    s_idx, a_idx = np.flatnonzero(bot_st[g]), np.flatnonzero(mine[g])
                    dist = _nearest(uf[g, a_idx, L.UF_X], uf[g, a_idx, L.UF_Y], uf[g, s_idx, L.UF_X], uf[g, s_idx, L.UF_Y])
                    if contact[g] is None and (dist <= near).any():
                        contact[g] = int(loops[g])
                    if term[g] or trunc[g]:
                        trace = _final(g, float(reward[g]), int(loops[g]), st, s_idx, a_idx, dist, names, cat, near)
                        trace.first_contact_loop = contact[g]
                        trace.structures_lost_loops = lost[g]
                        trace.timeline = timeline[g]
                        trace.actions = actions[g]
                        trace.bot_army_units = int(bot_army[g].sum())
                        trace.army_lost = int(army_lost[g])
                        trace.killed_value = float(pf[g, 1, L.PF_KILLED_VALUE])
                        trace.lost_value = float(pf[g, 1, L.PF_LOST_VALUE])
                        traces[g] = trace
    finally:
        env.close()
    return traces


def _final(g, outcome, end_loop, st, s_idx, a_idx, dist, names, cat, near) -> GameTrace:
    """The end state of game ``g``: the bot's structures left, the agent's army (the rest is filled by the caller)."""
    ui, uf = st.ui[g], st.uf[g]
    vis = st.vis[g]
    h, w = vis.shape
    left = []
    for i in s_idx:
        x, y = float(uf[i, L.UF_X]), float(uf[i, L.UF_Y])
        t = int(ui[i, L.UI_TYPE])
        left.append(
            Structure(
                name=names[t],
                x=x,
                y=y,
                hp=float(uf[i, L.UF_HP]),
                hp_max=float(cat.tf[t, TF_HP]),
                done=bool(ui[i, L.UI_DONE]),
                seen=bool(ui[i, L.UI_SEEN] & 2),
                visible=bool(vis[min(max(int(y), 0), h - 1), min(max(int(x), 0), w - 1)] == L.VIS_VISIBLE),
            )
        )
    orders = collections.Counter()
    for i in a_idx:
        kind = int(st.oi[g, i, 0, L.OI_KIND]) if ui[i, L.UI_NORDERS] > 0 else L.ORD_NONE
        orders[ORDER_NAMES.get(kind, f"order{kind}")] += 1
    centre = (float(uf[a_idx, L.UF_X].mean()), float(uf[a_idx, L.UF_Y].mean())) if len(a_idx) else None
    finite = dist[np.isfinite(dist)]
    return GameTrace(
        game=g,
        outcome=outcome,
        end_loop=end_loop,
        first_contact_loop=None,
        structures_lost_loops=[],
        structures_left=left,
        timeline={},
        army_units=len(a_idx),
        army_near=int((dist <= near).sum()),
        army_centre=centre,
        army_distance=float(finite.min()) if len(finite) else None,
        army_orders=dict(orders),
    )


# --------------------------------------------------------------------------------------- tables
OUTCOMES = ((1.0, "won"), (-1.0, "lost"), (0.0, "timed out"))


def _minutes(loops) -> str:
    return "-" if loops is None else f"{loops / LOOPS_PER_MINUTE:.1f}"


def _function_names() -> list[str] | None:
    from sc2_envs.full_game import MissingDependencyError

    try:
        return [f.name for f in spec.raw_functions()]
    except MissingDependencyError:
        return None


def _label_fn(fn: int, names) -> str:
    return names[fn] if names is not None and 0 <= fn < len(names) else f"fn{fn}"


def _label_code(code: int) -> str:
    try:
        return spec.action_result_name(code)
    except Exception:  # pysc2 / s2clientprotocol missing: the number stands in
        return f"code{code}"


def window_actions(
    traces: list[GameTrace], start_minute: float | None = None, end_minute: float | None = None, top: int = 6
) -> tuple[list, list, int]:
    """The action types and refused commands of a window of each game in ``traces``.

    Args:
        traces: the games.
        start_minute, end_minute: the window in real minutes from the game's start, ``[start, end)``;
            a negative ``start_minute`` counts back from each game's end (``-3``: its last 3 minutes);
            None: from the start / to the end.
        top: kinds listed, most frequent first.

    Returns:
        ``(actions, refused, decisions)``: ``[(function name, share of the window's decisions)]`` and
        ``[("function:ActionResult", share)]`` (at most ``top`` each), and the decisions counted.
    """
    names = _function_names()
    acts, refused = collections.Counter(), collections.Counter()
    n = 0
    for t in traces:
        lo = -np.inf if start_minute is None else start_minute * LOOPS_PER_MINUTE
        if start_minute is not None and start_minute < 0:
            lo = t.end_loop + start_minute * LOOPS_PER_MINUTE
        hi = np.inf if end_minute is None else end_minute * LOOPS_PER_MINUTE
        for loop, fn, code in t.actions:
            if lo <= loop < hi:
                n += 1
                acts[_label_fn(fn, names)] += 1
                if code:
                    refused[f"{_label_fn(fn, names)}:{_label_code(code)}"] += 1
    d = max(n, 1)
    return [(k, v / d) for k, v in acts.most_common(top)], [(k, v / d) for k, v in refused.most_common(top)], n


MAS_WIN_KILLED_VALUE = 4000
"""mini-AlphaStar's evaluation counts a game as won when the killed points (minerals + gas of the enemy
destroyed) exceed 4,000 at its end (liuruoze/mini-AlphaStar, alphastarmini/core/rl/mp_rl_eval_sl.py at
1539771, ``WIN_THRESHOLD``); eval_fullgame does not (a timeout is not a win). Shown for comparison."""


def outcome_table(traces: list[GameTrace], tail_minutes: float) -> str:
    """The by-outcome table (Markdown): how the games ended, where the armies were, what was destroyed."""
    head = (
        "| outcome | games | end (min) | first contact (min, median; games) | bot structures left | left ever seen | "
        f"bot structures destroyed | of them in the last {tail_minutes:g} min | agent army units at end (at bot base) | "
        "bot army units at end | agent army units lost | killed value | killed value > 4000 |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for value, name in OUTCOMES:
        ts = [t for t in traces if t.outcome == value]
        if not ts:
            continue
        contacts = [t.first_contact_loop for t in ts if t.first_contact_loop is not None]
        contact = f"{_minutes(float(np.median(contacts)))} ({len(contacts)}/{len(ts)})" if contacts else f"- (0/{len(ts)})"
        left = sum(len(t.structures_left) for t in ts)
        seen = sum(s.seen for t in ts for s in t.structures_left)
        lost = sum(len(t.structures_lost_loops) for t in ts)
        late = sum(x >= t.end_loop - tail_minutes * LOOPS_PER_MINUTE for t in ts for x in t.structures_lost_loops)
        lines.append(
            f"| {name} | {len(ts)} | {np.mean([t.end_loop for t in ts]) / LOOPS_PER_MINUTE:.2f} | {contact} | "
            f"{left / len(ts):.1f} | {seen}/{left} | {lost / len(ts):.1f} | {late}/{lost} | "
            f"{np.mean([t.army_units for t in ts]):.1f} ({np.mean([t.army_near for t in ts]):.1f}) | "
            f"{np.mean([t.bot_army_units for t in ts]):.1f} | {np.mean([t.army_lost for t in ts]):.1f} | "
            f"{np.mean([t.killed_value for t in ts]):.0f} | "
            f"{sum(t.killed_value > MAS_WIN_KILLED_VALUE for t in ts)}/{len(ts)} |"
        )
    return "\n".join(lines)


def timeline_table(traces: list[GameTrace]) -> str:
    """Per outcome and minute, the means of :data:`TIMELINE` over the games that reached that minute (Markdown)."""
    head = "| outcome | minute | games | " + " | ".join(TIMELINE) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for value, name in OUTCOMES:
        ts = [t for t in traces if t.outcome == value]
        for m in TIMELINE_MINUTES:
            rows = [t.timeline[m] for t in ts if m in t.timeline]
            if rows:
                cells = " | ".join(f"{np.mean([r[k] for r in rows]):.1f}" for k in TIMELINE)
                lines.append(f"| {name} | {m:g} | {len(rows)} | {cells} |")
    return "\n".join(lines)


def actions_table(traces: list[GameTrace], tail_minutes: float, opening_minutes: float) -> str:
    """Per outcome, the top action types and refused commands of the opening (the first ``opening_minutes``)
    and of the last ``tail_minutes`` of each game (Markdown)."""
    lines = [
        "| outcome | window | decisions | action types (share) | refused (share of decisions) |",
        "|---|---|---|---|---|",
    ]
    windows = ((f"first {opening_minutes:g} min", 0.0, opening_minutes), (f"last {tail_minutes:g} min", -tail_minutes, None))
    for value, name in OUTCOMES:
        ts = [t for t in traces if t.outcome == value]
        for label, lo, hi in windows if ts else ():
            acts, refused, n = window_actions(ts, lo, hi)
            fmt = "; ".join(f"{k} {v:.2f}" for k, v in acts)
            ref = "; ".join(f"{k} {v:.3f}" for k, v in refused) or "none"
            lines.append(f"| {name} | {label} | {n} | {fmt} | {ref} |")
    return "\n".join(lines)


def split_table(traces: list[GameTrace], minute: float = 5.0, key: str = "army_supply", edges=(0, 2, 4, 6, 8)) -> str:
    """Win rate by a :data:`TIMELINE` value at one minute, in bins ``[edges[i], edges[i + 1])`` (the last open),
    over the games that reached that minute (Markdown): how early the outcome is decided.

    Raises:
        ValueError: ``key`` not in :data:`TIMELINE` or ``minute`` not in :data:`TIMELINE_MINUTES`.
    """
    if key not in TIMELINE or minute not in TIMELINE_MINUTES:
        raise ValueError(f"key={key!r}, minute={minute!r}; expected one of {TIMELINE} at one of {TIMELINE_MINUTES}")
    lines = [f"| {key} at {minute:g} min | games | won | timed out | lost | win rate |", "|---|---|---|---|---|---|"]
    bounds = [*edges, np.inf]
    for lo, hi in itertools.pairwise(bounds):
        ts = [t for t in traces if minute in t.timeline and lo <= t.timeline[minute][key] < hi]
        if ts:
            w = sum(t.outcome > 0 for t in ts)
            label = f">= {lo:g}" if hi == np.inf else f"[{lo:g}, {hi:g})"
            lines.append(
                f"| {label} | {len(ts)} | {w} | {sum(t.outcome == 0 for t in ts)} | {sum(t.outcome < 0 for t in ts)} | "
                f"{w / len(ts):.2f} |"
            )
    return "\n".join(lines)


def games_table(traces: list[GameTrace]) -> str:
    """One line per game that was not won (Markdown): the bot's structures left and the agent's army."""
    lines = [
        "| game | outcome | bot structures left: type (x, y) hp/max, seen? | bot army | agent army units (near) | "
        "army centre | nearest army to a structure (cells) | army orders | bot structures lost (minute) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in traces:
        if t.outcome > 0:
            continue
        left = "; ".join(
            f"{s.name} ({s.x:.0f}, {s.y:.0f}) {s.hp:.0f}/{s.hp_max:.0f}{'' if s.done else ' building'}"
            f"{' seen' if s.seen else ' never seen'}{' visible' if s.visible else ''}"
            for s in t.structures_left
        )
        centre = "-" if t.army_centre is None else f"({t.army_centre[0]:.0f}, {t.army_centre[1]:.0f})"
        dist = "-" if t.army_distance is None else f"{t.army_distance:.0f}"
        orders = ", ".join(f"{k} {v}" for k, v in sorted(t.army_orders.items())) or "-"
        lost = ", ".join(_minutes(x) for x in t.structures_lost_loops) or "none"
        outcome = "lost" if t.outcome < 0 else "timed out"
        lines.append(
            f"| {t.game} | {outcome} | {left or 'none'} | {t.bot_army_units} | {t.army_units} ({t.army_near}) | {centre} | "
            f"{dist} | {orders} | {lost} |"
        )
    return "\n".join(lines)


def main(argv=None) -> list[GameTrace]:
    """Parse the command line (``argv``; None: ``sys.argv``), play and trace the games, print the tables.

    Raises:
        SystemExit: status 2 with argparse's usage error for a bad flag or a policy that is neither a
            baseline nor a file.
    """
    p = argparse.ArgumentParser(
        description="Why a full-game policy's games time out against the lite very_easy bot: the bot's "
        "structures left (seen or not), the agent's army and where it is, and what the policy chose in the "
        "last minutes, by outcome and per game.",
    )
    p.add_argument("--policy", required=True, help="AlphaStarPolicy checkpoint, or a baseline: scripted, random")
    p.add_argument("--games", type=int, default=24, help="games, all played at once (default 24)")
    p.add_argument("--seed", type=int, default=48, help="env.reset seed and torch seed of sampled actions (default 48)")
    p.add_argument("--step-mul", type=int, default=0, help="game loops per decision; 0: the checkpoint's own (default)")
    p.add_argument(
        "--game-steps-per-episode", type=int, default=18000, help="game loops before a timeout (mini-AlphaStar's 18,000)"
    )
    p.add_argument("--omniscient", action="store_true", help="no fog of war")
    p.add_argument("--greedy", action="store_true", help="argmax every head (default: sample)")
    p.add_argument("--near", type=float, default=10.0, help="cells from a bot structure that count as at its base")
    p.add_argument("--tail-minutes", type=float, default=3.0, help="real minutes before each end read as 'the last minutes'")
    p.add_argument("--opening-minutes", type=float, default=5.0, help="real minutes read as 'the opening'")
    p.add_argument("--torch-threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = p.parse_args(argv)
    for name in ("games", "torch_threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} {getattr(args, name)}: expected an integer >= 1")
    if args.step_mul < 0 or args.game_steps_per_episode < 0 or not 0 <= args.seed <= 2**63 - 1:
        p.error("--step-mul, --game-steps-per-episode and --seed: expected integers >= 0")
    for name in ("tail_minutes", "opening_minutes", "near"):
        if not getattr(args, name) > 0:  # NaN fails too
            p.error(f"--{name.replace('_', '-')} {getattr(args, name)}: expected a number > 0")
    import torch

    torch.set_num_threads(args.torch_threads)
    t0, c0 = time.time(), time.process_time()
    try:
        traces = trace_games(
            args.policy,
            args.games,
            args.seed,
            step_mul=args.step_mul,
            game_steps_per_episode=args.game_steps_per_episode,
            omniscient=args.omniscient,
            greedy=args.greedy,
            near=args.near,
        )
    except ValueError as e:
        p.error(str(e))
    wins = sum(t.outcome > 0 for t in traces)
    print(
        f"{args.policy}: {len(traces)} games, seed {args.seed}, {wins} won, {sum(t.outcome < 0 for t in traces)} lost, "
        f"{sum(t.outcome == 0 for t in traces)} timed out "
        f"({time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU)\n"
    )
    print(outcome_table(traces, args.tail_minutes), "\n")
    print(timeline_table(traces), "\n")
    print(actions_table(traces, args.tail_minutes, args.opening_minutes), "\n")
    print(split_table(traces, 5.0, "army_supply"), "\n")
    print(split_table(traces, 4.0, "gateways", (0, 1, 2, 3)), "\n")
    print(games_table(traces))
    return traces


if __name__ == "__main__":
    main()
