"""Re-simulate real Simple64 replays on the lite engine and compare the human's economy and builds.

For each replay in REPLAY_DIR (the mini-AlphaStar Simple64 set: player 1 a human Protoss, player 2
the built-in very_easy Terran AI): start the lite engine from Simple64's loop-0 state, feed the
human's commands (``sc2_envs.replays.extract.player_actions``: raw function, reconstructed
selection, target, queued) at their game loops, let the engine's very_easy bot play player 2, and
until first contact (the first unit killed by the other player in the replay) compare:

* every 160-loop PlayerStats sample of player 1: minerals collection rate (the engine's from its
  deliveries with ``ECONOMY.collection_rate``), food used, workers;
* every player-1 structure's UnitInit loop, matched by type and order, and its Done loop.

Replay units are tied to engine units by type: the loop-0 units by type and cell (neutrals) or
order (workers), later ones by the order in which each type appears. A command naming a unit the
engine has not made yet drops that unit; a command left with no unit is skipped (counted).

The bot's side is the engine's own bot (seeded), not the replay's AI timeline: the comparison is of
player 1 only, and before contact the AI does not touch it.

Last line: ``SUMMARY replays=N collection_rate_median_abs_rel_err=X collection_rate_p90_abs_rel_err=Y
food_exact=F workers_exact=W structure_init_within_160_loops=S`` (the engine's fidelity targets: X <= 0.05,
Y <= 0.10, F and W >= 0.95, S >= 0.95) plus ``structure_done_exact=D`` and the collection-rate
median / p90 of the replays a human played and of those an agent played (``played_by_agent``).

Usage:
    python benchmarks/fullgame_resim.py REPLAY_DIR [--limit N] [--check-every 16] [--samples-csv PATH]

``--samples-csv`` writes one row per compared PlayerStats sample (replay, who played it, loop,
the replay's and the engine's collection rate, the signed relative error, food, workers): the
signed error by loop, worker count or replay is what tells a rule's error from noise.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STATS_PERIOD = 160
WINDOW_STEP = 80  # gcd of the 160-loop samples and the 240-loop collection-rate window
TRAIN_RETRY_LOOPS = 160  # a train the engine refuses at the replay's start loop is asked again this long
WORKERS = ("Probe", "SCV")
AGENT_LOOP_GRID = 8  # an agent stepping the game 8 loops at a time issues every command on this grid
AGENT_GRID_SHARE = 0.9  # a human's commands fall on the grid about 1 time in 8


@dataclass
class Reference:
    """What the replay says about player 1 (and where contact begins)."""

    contact: int
    initial: list = field(default_factory=list)  # (tag, unit, owner, cell x, cell y)
    births: dict = field(default_factory=lambda: defaultdict(list))  # (owner, unit) -> [tag] in order
    stats: list = field(default_factory=list)  # (loop, collection rate, food used, workers)
    structures: list = field(default_factory=list)  # (unit, init loop, done loop or None)
    actions: list = field(default_factory=list)  # RawAction
    trains: list = field(default_factory=list)  # (start loop, unit, producer tag) from UnitBorn


def reference(path: Path) -> Reference:
    """Decode one replay into a ``Reference``."""
    from sc2_envs.lite.data.profile_3_16_1 import ECONOMY, UNITS
    from sc2_envs.replays import decode_replay
    from sc2_envs.replays.abilities import AbilityMapper
    from sc2_envs.replays.extract import player_actions

    r = decode_replay(path)
    owner_of: dict[int, tuple[str, int]] = {}
    contact = r.game_loops
    ref = Reference(contact=contact)
    init_of: dict[int, int] = {}
    for e in r.tracker_events:
        kind = e["_event"].rsplit(".", 1)[-1]
        loop = e["_gameloop"]
        if kind in ("SUnitBornEvent", "SUnitInitEvent"):
            tag = (e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"]
            name = e["m_unitTypeName"].decode()
            owner = e["m_controlPlayerId"]
            owner_of[tag] = (name, owner)
            creator = e.get("m_creatorAbilityName")
            if kind == "SUnitBornEvent" and owner == 1 and creator in (b"NexusTrain", b"GatewayTrain") and name in UNITS:
                producer_tag = (e["m_creatorUnitTagIndex"] << 18) + e["m_creatorUnitTagRecycle"]
                producer = "Nexus" if creator == b"NexusTrain" else "Gateway"
                start = loop - ECONOMY.train_time(UNITS[name], producer)
                ref.trains.append((start, name, producer_tag))
            if loop == 0:
                ref.initial.append((tag, name, owner, e["m_x"], e["m_y"]))
            else:
                ref.births[(owner, name)].append(tag)
            if owner == 1 and name in UNITS and UNITS[name].is_structure and loop > 0:
                init_of[tag] = len(ref.structures)
                ref.structures.append([name, loop, loop if kind == "SUnitBornEvent" else None])
        elif kind == "SUnitDoneEvent":
            tag = (e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"]
            if tag in init_of:
                ref.structures[init_of[tag]][2] = loop
        elif kind == "SUnitDiedEvent":
            tag = (e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"]
            killer = e.get("m_killerPlayerId")
            victim = owner_of.get(tag, ("?", 0))[1]
            if killer in (1, 2) and victim in (1, 2) and killer != victim:
                ref.contact = min(ref.contact, loop)
        elif kind == "SPlayerStatsEvent" and e["m_playerId"] == 1 and loop > 0:
            s = e["m_stats"]
            ref.stats.append(
                (
                    loop,
                    s["m_scoreValueMineralsCollectionRate"],
                    s["m_scoreValueFoodUsed"] / 4096,
                    s["m_scoreValueWorkersActiveCount"],
                )
            )
    mapper = AbilityMapper(r.base_build)
    # Target updates are commands too: a player repeating the last ability on a new target (the
    # second right-click sending Probes into an Assimilator, a Nexus rally moved onto a mineral
    # field) is recorded as SCmdUpdateTarget{Point,Unit}Event, not as another SCmdEvent.
    ref.actions, _ = player_actions(r, 1, mapper, include_target_updates=True)
    return ref


def played_by_agent(actions: list) -> bool:
    """Whether player 1's commands came from an agent stepping the game ``AGENT_LOOP_GRID`` loops at a time.

    Args:
        actions: the player's ``RawAction``s (their ``game_loop`` only is read).

    Returns:
        True when at least 20 commands were given and at least ``AGENT_GRID_SHARE`` of them at a
        multiple of ``AGENT_LOOP_GRID`` loops (a human's land there about 1 time in 8; the 9 agent
        replays of the set put every command there).
    """
    if len(actions) < 20:
        return False
    on_grid = sum(a.game_loop % AGENT_LOOP_GRID == 0 for a in actions)
    return on_grid >= AGENT_GRID_SHARE * len(actions)


class TagMap:
    """Replay unit tag <-> engine unit, built as units appear on both sides.

    An engine unit is its slot and the slot's recycle count (``UI_RECYCLE``): the engine reuses
    the slots of dead units, and a unit born into a reused slot is a new unit to tie, while the
    replay tag of the dead one must not reach it.
    """

    def __init__(self, ref: Reference, engine):
        from sc2_envs.lite.layout import UF_X, UF_Y, UI_ALIVE, UI_OWNER, UI_TYPE

        self.slot: dict[int, tuple[int, int]] = {}  # replay tag -> (slot, recycle)
        self.known: set[tuple[int, int]] = set()
        self.queues = {k: deque(v) for k, v in ref.births.items()}
        self.eng = engine
        names = engine.catalog.names
        ui, uf = engine.state.ui[0], engine.state.uf[0]
        alive = np.flatnonzero(ui[:, UI_ALIVE] == 1)
        by_cell = {}
        by_type = defaultdict(list)
        for s in alive:
            name, owner = names[int(ui[s, UI_TYPE])], int(ui[s, UI_OWNER])
            by_cell[(name, owner, int(uf[s, UF_X]), int(uf[s, UF_Y]))] = int(s)
            by_type[(name, owner)].append(int(s))
            self.known.add(self._unit(int(s)))
        for tag, name, owner, x, y in ref.initial:
            s = by_cell.get((name, owner, x, y))
            if s is None and by_type.get((name, owner)):
                s = by_type[(name, owner)].pop(0)  # workers: any of the starting ones
            if s is not None:
                self.slot[tag] = self._unit(s)

    def _unit(self, s: int) -> tuple[int, int]:
        from sc2_envs.lite.layout import UI_RECYCLE

        return s, int(self.eng.state.ui[0, s, UI_RECYCLE])

    def get(self, tag: int) -> int | None:
        """The engine slot of replay unit ``tag``, or None (not made yet, or its slot reused)."""
        from sc2_envs.lite.layout import UI_ALIVE

        unit = self.slot.get(tag)
        if unit is None or self._unit(unit[0]) != unit or self.eng.state.ui[0, unit[0], UI_ALIVE] == 0:
            return None
        return unit[0]

    def update(self) -> None:
        """Tie the engine's new units to the replay's next units of the same owner and type."""
        from sc2_envs.lite.layout import UF_BORN, UI_ALIVE, UI_OWNER, UI_TYPE

        ui, uf = self.eng.state.ui[0], self.eng.state.uf[0]
        new = [int(s) for s in np.flatnonzero(ui[:, UI_ALIVE] == 1) if self._unit(int(s)) not in self.known]
        new.sort(key=lambda s: (uf[s, UF_BORN], s))
        names = self.eng.catalog.names
        for s in new:
            self.known.add(self._unit(s))
            q = self.queues.get((int(ui[s, UI_OWNER]), names[int(ui[s, UI_TYPE])]))
            if q:
                self.slot[q.popleft()] = self._unit(s)


@dataclass
class _Train:
    """A training order taken from a UnitBorn event (issued at the loop it must start)."""

    game_loop: int
    unit: str
    producer_tag: int
    start: int = -1  # the loop the replay started it (the first try)

    def __post_init__(self):
        if self.start < 0:
            self.start = self.game_loop


def resimulate(ref: Reference, seed: int, check_every: int, train_from_tracker: bool = True) -> dict:
    """Play one replay's human commands on the engine until contact; returns per-sample values.

    With ``train_from_tracker`` the human's units are trained from the replay's UnitBorn events
    (each at birth minus its train time, at the producer the event names) and the human's Train
    commands are skipped: the replays record fewer Train commands than births (over the 80: 394
    NexusTrain commands for 655 Probes, 539 for 1,052 Zealots; one command at loop 122 is followed
    by three Probes 236 loops apart), so commands alone under-train. A train the engine refuses
    at that loop (its Pylon done a few loops later than the replay's) is asked again every
    ``check_every`` loops for up to ``TRAIN_RETRY_LOOPS``, as the game's queue would have held it.
    """
    from sc2_envs.lite.bot import VeryEasyTerranBot
    from sc2_envs.lite.commands import CMD_UNSUPPORTED, command_tables
    from sc2_envs.lite.data.profile_3_16_1 import ECONOMY, UNITS
    from sc2_envs.lite.engine import LiteEngine
    from sc2_envs.lite.layout import (
        AR_SUCCESS,
        CK_KIND,
        CK_PARAM,
        CK_PLAYER,
        CK_QUEUED,
        CK_TARGET,
        CMD_NONE,
        NCK,
        PF_COLLECTED_MINERALS,
        PF_FOOD_USED,
        PF_WORKERS,
        UF_BORN,
        UI_ALIVE,
        UI_DONE,
        UI_OWNER,
        UI_TYPE,
    )

    eng = LiteEngine(num_games=1)
    bot = VeryEasyTerranBot(eng)
    bot.reset(np.array([0]), np.array([seed]))
    cmd_table, param_table = command_tables(eng.catalog)
    tags = TagMap(ref, eng)
    names = eng.catalog.names
    end = min(ref.contact, max((s[0] for s in ref.stats), default=0))
    collected = {0: 0.0}
    samples, skipped, applied = [], 0, 0
    structures: dict[int, list] = {}  # engine slot -> [unit, init, done]
    from sc2_envs.lite.layout import CMD_TRAIN

    stream = [a for a in ref.actions if a.game_loop < end]
    if train_from_tracker:
        stream = [a for a in stream if int(cmd_table[int(a.specific_function)]) != CMD_TRAIN or a.function < 0]
        stream += [_Train(max(t, 0), u, p) for t, u, p in ref.trains if t < end]
    stream.sort(key=lambda a: a.game_loop)
    actions = deque(stream)
    checkpoints = sorted(
        set(range(check_every, end + 1, check_every))
        | set(range(WINDOW_STEP, end + 1, WINDOW_STEP))
        | {a.game_loop for a in actions}
    )
    loop = 0
    for target in checkpoints:
        if target > loop:
            bot.run(np.array([target - loop], np.int64))
            loop = target
        tags.update()
        ui, uf, pf = eng.state.ui[0], eng.state.uf[0], eng.state.pf[0]
        for s in np.flatnonzero((ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 1)):
            name = names[int(ui[s, UI_TYPE])]
            if UNITS[name].is_structure and name != "Nexus" or (name == "Nexus" and uf[s, UF_BORN] > 0):
                rec = structures.setdefault(int(s), [name, int(uf[s, UF_BORN]), None])
                if rec[2] is None and ui[s, UI_DONE] == 1:
                    rec[2] = loop
        if loop % WINDOW_STEP == 0:
            collected[loop] = float(pf[1, PF_COLLECTED_MINERALS])
        if loop % STATS_PERIOD == 0:
            delivered = collected[loop] - collected.get(max(loop - 240, 0), 0.0)
            rate = ECONOMY.collection_rate(int(delivered), loop)
            samples.append((loop, rate, float(pf[1, PF_FOOD_USED]), float(pf[1, PF_WORKERS])))
        while actions and actions[0].game_loop <= loop:
            a = actions.popleft()
            if isinstance(a, _Train):
                producer = tags.get(a.producer_tag)
                if producer is None:
                    skipped += 1
                    continue
                ck = np.zeros((1, NCK), np.int64)
                ck[0, CK_KIND], ck[0, CK_PARAM], ck[0, CK_PLAYER] = CMD_TRAIN, eng.catalog.type_id(a.unit), 1
                ck[0, CK_TARGET], ck[0, CK_QUEUED] = -1, 1
                code = int(eng.apply(ck, np.zeros((1, 2), np.float32), np.array([[producer, -1]], np.int64))[0])
                if code == AR_SUCCESS:
                    applied += 1
                elif a.game_loop - a.start < TRAIN_RETRY_LOOPS:
                    # Refused (supply or minerals a few loops short of the replay's): the player's
                    # real Train command came earlier and the game's queue held the unit until it
                    # could start, so ask again at the next check.
                    retry = _Train(loop + check_every, a.unit, a.producer_tag, a.start)
                    k = next((j for j, b in enumerate(actions) if b.game_loop > retry.game_loop), len(actions))
                    actions.insert(k, retry)
                else:
                    skipped += 1
                continue
            f = int(a.specific_function)
            kind = int(cmd_table[f]) if 0 <= f < len(cmd_table) else CMD_UNSUPPORTED
            if kind in (CMD_NONE, CMD_UNSUPPORTED):
                skipped += kind == CMD_UNSUPPORTED
                continue
            sel = [s for s in map(tags.get, a.selection) if s is not None]
            target_slot = -1
            if a.target_tag is not None:
                found = tags.get(int(a.target_tag))
                target_slot = -2 if found is None else found
            if not sel or target_slot == -2:
                skipped += 1
                continue
            ck = np.zeros((1, NCK), np.int64)
            ck[0, CK_KIND], ck[0, CK_PARAM], ck[0, CK_PLAYER] = kind, param_table[f], 1
            ck[0, CK_TARGET], ck[0, CK_QUEUED] = target_slot, int(a.queued)
            cf = np.zeros((1, 2), np.float32)
            if a.target_point is not None:
                cf[0] = a.target_point
            cs = np.full((1, len(sel) + 1), -1, np.int64)
            cs[0, : len(sel)] = sel
            eng.apply(ck, cf, cs)
            applied += 1
    return {"samples": samples, "structures": list(structures.values()), "skipped": skipped, "applied": applied, "end": end}


def compare(ref: Reference, sim: dict, check_every: int) -> dict:
    """Per-replay errors: collection-rate relative errors, food/worker matches, structure timing."""
    from sc2_envs.lite.data.profile_3_16_1 import UNITS

    ours = {s[0]: s for s in sim["samples"]}
    rel, food, workers, sample_rows = [], [], [], []
    for loop, rate, food_used, n_workers in ref.stats:
        if loop > sim["end"] or loop not in ours:
            continue
        _, r2, f2, w2 = ours[loop]
        if rate > 0:
            rel.append(abs(r2 - rate) / rate)
        sample_rows.append((loop, rate, r2, (r2 - rate) / rate if rate > 0 else float("nan"), food_used, f2, n_workers, w2))
        food.append(f2 == food_used)
        workers.append(w2 == n_workers)
    init_ok, done_ok = [], []
    theirs = defaultdict(list)
    for name, init, done in ref.structures:
        if init < sim["end"]:
            theirs[name].append((init, done))
    mine = defaultdict(list)
    for name, init, done in sorted(sim["structures"], key=lambda r: r[1]):
        mine[name].append((init, done))
    for name, rows in theirs.items():
        for k, (init, _done) in enumerate(rows):
            if k < len(mine[name]):
                my_init, my_done = mine[name][k]
                init_ok.append(abs(my_init - init) <= STATS_PERIOD)
                if my_done is not None:
                    # Done is read every check_every loops: exact up to that reading.
                    done_ok.append(0 <= my_done - (my_init + UNITS[name].build_time) < check_every + 1)
            else:
                init_ok.append(False)
    return {"rel": rel, "food": food, "workers": workers, "init": init_ok, "done": done_ok, "samples": sample_rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("replay_dir", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="first N replays only (0: all)")
    ap.add_argument("--check-every", type=int, default=16, help="loops between engine state reads")
    ap.add_argument(
        "--train-from-commands",
        action="store_true",
        help="train the human's units from its Train commands only (default: from the replay's UnitBorn events)",
    )
    ap.add_argument("--samples-csv", type=Path, default=None, help="write every compared PlayerStats sample here")
    args = ap.parse_args()
    paths = sorted(args.replay_dir.glob("*.SC2Replay"))
    if args.limit > 0:
        paths = paths[: args.limit]
    if not paths:
        print(f"no .SC2Replay files in {args.replay_dir}", file=sys.stderr)
        return 2
    allr = {"rel": [], "food": [], "workers": [], "init": [], "done": []}
    by_player = {"human": [], "agent": []}  # collection-rate abs. rel. errors
    n_human = 0
    samples = []
    t0 = time.perf_counter()
    for i, p in enumerate(paths):
        ref = reference(p)
        sim = resimulate(ref, seed=i, check_every=args.check_every, train_from_tracker=not args.train_from_commands)
        res = compare(ref, sim, args.check_every)
        for k in allr:
            allr[k] += res[k]
        player = "agent" if played_by_agent(ref.actions) else "human"
        n_human += player == "human"
        by_player[player] += res["rel"]
        samples += [(p.stem, player, *row) for row in res["samples"]]
        med = np.median(res["rel"]) if res["rel"] else float("nan")
        print(
            f"{p.name}: contact {ref.contact} commands applied {sim['applied']} skipped {sim['skipped']} "
            f"rate_err_median {med:.3f} food {np.mean(res['food']) if res['food'] else float('nan'):.2f} "
            f"workers {np.mean(res['workers']) if res['workers'] else float('nan'):.2f} "
            f"init {np.mean(res['init']) if res['init'] else float('nan'):.2f}"
        )
    rel = np.asarray(allr["rel"]) if allr["rel"] else np.asarray([np.nan])

    def share(v):
        return float(np.mean(v)) if v else float("nan")

    if args.samples_csv is not None:
        with open(args.samples_csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(
                ["replay", "player", "game_loop", "replay_rate", "engine_rate", "signed_rel_err"]
                + ["replay_food", "engine_food", "replay_workers", "engine_workers"]
            )
            w.writerows(samples)

    def quantiles(v):
        return (f"{np.median(v):.3f}", f"{np.percentile(v, 90):.3f}") if v else ("nan", "nan")

    (hm, hp), (am, ap90) = quantiles(by_player["human"]), quantiles(by_player["agent"])
    print(f"({time.perf_counter() - t0:.0f} s)")
    print(
        f"SUMMARY replays={len(paths)} collection_rate_median_abs_rel_err={np.median(rel):.3f} "
        f"collection_rate_p90_abs_rel_err={np.percentile(rel, 90):.3f} food_exact={share(allr['food']):.3f} "
        f"workers_exact={share(allr['workers']):.3f} structure_init_within_160_loops={share(allr['init']):.3f} "
        f"structure_done_exact={share(allr['done']):.3f} human_replays={n_human} human_median={hm} human_p90={hp} "
        f"agent_replays={len(paths) - n_human} agent_median={am} agent_p90={ap90}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
