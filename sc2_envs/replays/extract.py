"""Per-player action streams and replay-observable features from a decoded replay.

Pass 1 walks the player's game events: it rebuilds the active selection from
``SSelectionDeltaEvent`` / ``SControlGroupUpdateEvent`` and turns each ``SCmdEvent`` into a
raw-function action (``abilities.AbilityMapper``). Pass 2 walks the tracker events in game
loop order and, at each sample loop, snapshots the unit roster, player stats, upgrades and
build order into the same columns the live env emits (``spec.REPLAY_*``), then maps the
action's selected/target tags to entity rows of that snapshot.

Sampling (``sample``): ``"actions"`` gives one row per action of the player (AlphaStar /
mini-AlphaStar style); ``"every_k"`` gives one row every ``k`` game loops whose label is the
player's first action in ``[t, t + k)`` or ``no_op`` when there is none (fixed stride, as an
env with ``step_mul = k`` would see it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.replays import abilities
from sc2_envs.replays.decode import DecodedReplay, ReplayError

ALLIANCE_SELF, ALLIANCE_NEUTRAL, ALLIANCE_ENEMY = 1, 3, 4
_RACE_IDS = {"Terran": 1, "Zerg": 2, "Protoss": 3}
_QUEUED_FLAG = 0x2
_WORLD_FIXED = 4096.0  # TargetPoint x/y are fixed point, 1/4096 of a cell


@dataclass
class RawAction:
    """One decoded command of a player (before it is tied to entity rows).

    Attributes:
        game_loop: loop of the command.
        function: general raw function id (pysc2 ``hide_specific_actions=True``).
        specific_function: the raw function before generalisation.
        queued: 1 when the command was shift-queued (``m_cmdFlags & 0x2``).
        target_point: world ``(x, y)`` in cells, or None.
        target_tag: target unit tag, or None.
        selection: tags of the active selection when the command was given.
    """

    game_loop: int
    function: int
    specific_function: int
    queued: int
    target_point: tuple[float, float] | None
    target_tag: int | None
    selection: tuple[int, ...]


@dataclass
class StreamStats:
    """Counts for one player's stream.

    Attributes:
        commands: ``SCmdEvent``s of the player.
        mapped: those mapped to a raw function.
        unmapped: ``{link_name:cmd_index:kind: count}`` for the misses.
        selection_errors: remove masks that did not fit the tracked selection.
        empty_selection: mapped unit commands for which no own unit was selected.
        target_updates: ``SCmdUpdateTargetPoint/UnitEvent``s of the player (counted only with
            ``include_target_updates``).
        target_updates_mapped: those emitted as actions; the rest follow an unmapped command (or none),
            or re-aim an ability that has no raw function for the new target's kind.
    """

    commands: int = 0
    mapped: int = 0
    selection_errors: int = 0
    empty_selection: int = 0
    unmapped: dict | None = None
    target_updates: int = 0
    target_updates_mapped: int = 0


def apply_remove_mask(selection: list[int], mask: dict) -> tuple[list[int], bool]:
    """Apply an s2protocol remove mask to a selection.

    Args:
        selection: tags in selection order.
        mask: ``m_removeMask`` / ``m_mask``: ``{"None": None}``, ``{"Mask": (bits, nbits)}``
            (bit i set = remove item i), ``{"OneIndices": [i, ...]}`` (remove these) or
            ``{"ZeroIndices": [i, ...]}`` (keep only these).

    Returns:
        ``(new_selection, error)``; ``error`` is True when the mask removes or keeps items
        beyond the tracked selection (the reconstruction has drifted from the game's).
    """
    kind, data = next(iter(mask.items()))
    n = len(selection)
    if kind == "None":
        return selection, False
    if kind == "Mask":
        value, nbits = data
        keep = [t for i, t in enumerate(selection) if not (i < nbits and (value >> i) & 1)]
        return keep, (value >> n) != 0  # the mask may be longer than the selection; set bits beyond it are drift
    if kind == "OneIndices":
        drop = set(data)
        return [t for i, t in enumerate(selection) if i not in drop], any(i >= n for i in data)
    if kind == "ZeroIndices":
        return [selection[i] for i in data if i < n], any(i >= n for i in data)
    return selection, True


def player_actions(
    replay: DecodedReplay, player_id: int, mapper: abilities.AbilityMapper, include_target_updates: bool = False
):
    """Pass 1: the player's commands with reconstructed selections.

    Args:
        replay: decoded replay.
        player_id: 1-based player id.
        mapper: ability mapper for the replay's build.
        include_target_updates: also emit ``SCmdUpdateTargetPoint/UnitEvent`` as actions. The
            client records a command that repeats the previous command's ability as such an
            update, with only the new target (sc2reader, ``sc2reader/events/game.py``,
            ``UpdateTargetUnitCommandEvent``): each becomes the previous command's ability
            mapped for the new target's kind (a Smart on a point re-aimed at a mineral field
            is ``Smart_unit``) and the selection at the update. Updates with no raw function are
            left out and counted (``StreamStats.target_updates`` minus ``target_updates_mapped``).

    Returns:
        ``(actions, stats)``: list of ``RawAction`` in game-loop order and ``StreamStats``.

    Raises:
        TypeError: ``include_target_updates`` is not a bool, or ``player_id`` not an int.
        KeyError: no player ``player_id`` in the replay.
        ReplayError: the player is a built-in AI or has no user id (no game events).
    """
    if not isinstance(include_target_updates, (bool, np.bool_)):
        raise TypeError(f"include_target_updates={include_target_updates!r}; expected a bool")
    player = replay.player(player_id)
    if player.user_id is None:
        raise ReplayError(
            f"{replay.path}: player {player_id} ({player.race}, {player.control}) has no game events (built-in AI)"
        )
    groups: dict[int, list[int]] = {i: [] for i in range(11)}
    stats = StreamStats(unmapped={})
    out: list[RawAction] = []
    last_cmd: tuple[dict | None, int] | None = None  # (m_abil, queued) of the last mapped command
    for e in replay.game_events:
        if e.get("_userid", {}).get("m_userId") != player.user_id:
            continue
        name = e["_event"]
        if name == "NNet.Game.SSelectionDeltaEvent":
            gid = e["m_controlGroupId"]
            sel, err = apply_remove_mask(groups[gid], e["m_delta"]["m_removeMask"])
            groups[gid] = sorted(set(sel) | set(e["m_delta"]["m_addUnitTags"]))
            stats.selection_errors += int(err)
        elif name == "NNet.Game.SControlGroupUpdateEvent":
            gid, update = e["m_controlGroupIndex"], e["m_controlGroupUpdate"]
            if update in (0, 4):  # set (4: set and steal)
                groups[gid] = list(groups[10])
            elif update in (1, 5):  # append (5: append and steal)
                groups[gid] = sorted(set(groups[gid]) | set(groups[10]))
            elif update == 2:  # recall
                sel, err = apply_remove_mask(groups[gid], e["m_mask"])
                groups[10] = list(sel)
                stats.selection_errors += int(err)
            elif update == 3:  # clear
                groups[gid] = []
        elif name == "NNet.Game.SCmdEvent":
            stats.commands += 1
            kind = abilities.command_kind(e)
            mapped = mapper.map(e["m_abil"], kind)
            if mapped is None:
                abil = e["m_abil"]
                link = (mapper.link_name(abil["m_abilLink"]) or f"link{abil['m_abilLink']}") if abil else "Smart"
                key = f"{link}:{abil['m_abilCmdIndex'] if abil else '-'}:{kind}"
                stats.unmapped[key] = stats.unmapped.get(key, 0) + 1
                last_cmd = None
                continue
            stats.mapped += 1
            queued = int(bool(e["m_cmdFlags"] & _QUEUED_FLAG))
            point, tag = _target(e["m_data"])
            last_cmd = (e["m_abil"], queued)
            out.append(RawAction(e["_gameloop"], mapped[1], mapped[0], queued, point, tag, tuple(groups[10])))
        elif include_target_updates and name in (
            "NNet.Game.SCmdUpdateTargetPointEvent",
            "NNet.Game.SCmdUpdateTargetUnitEvent",
        ):
            stats.target_updates += 1
            if last_cmd is None:  # it re-aims an unmapped command (or none): counted, not emitted
                continue
            target = e["m_target"]
            if name.endswith("PointEvent"):
                point, tag, kind = (target["x"] / _WORLD_FIXED, target["y"] / _WORLD_FIXED), None, "pt"
            else:
                point, tag, kind = None, int(target["m_tag"]), "unit"
            # The update repeats the last command's ability on a new target, which may be of the
            # other kind (a Smart on a point re-aimed at a unit): map the ability for the new kind.
            mapped = mapper.map(last_cmd[0], kind)
            if mapped is None:
                continue
            stats.target_updates_mapped += 1
            out.append(RawAction(e["_gameloop"], mapped[1], mapped[0], last_cmd[1], point, tag, tuple(groups[10])))
    return out, stats


def _target(data: dict | None) -> tuple[tuple[float, float] | None, int | None]:
    data = data or {}
    if "TargetPoint" in data:
        p = data["TargetPoint"]
        return (p["x"] / _WORLD_FIXED, p["y"] / _WORLD_FIXED), None
    if "TargetUnit" in data:
        return None, int(data["TargetUnit"]["m_tag"])
    return None, None


class Roster:
    """Unit roster rebuilt from tracker events (omniscient: both players' units).

    Each unit: tag -> ``[game_unit_id, owner, x, y, done]`` with x, y in cells (last known).
    """

    def __init__(self, unit_ids: dict[str, int]):
        self.units: dict[int, list] = {}
        self.tag_of_index: dict[int, int] = {}
        self.unit_ids = unit_ids

    def _type(self, name) -> int:
        return self.unit_ids.get(name.decode("utf-8", "replace") if isinstance(name, bytes) else name, 0)

    def apply(self, e: dict) -> None:
        """Update the roster with one tracker event."""
        name = e["_event"].rsplit(".", 1)[-1]
        if name in ("SUnitBornEvent", "SUnitInitEvent"):
            tag = (e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"]
            self.units[tag] = [
                self._type(e["m_unitTypeName"]),
                e["m_controlPlayerId"],
                e["m_x"],
                e["m_y"],
                name == "SUnitBornEvent",
            ]
            self.tag_of_index[e["m_unitTagIndex"]] = tag
        elif name == "SUnitDoneEvent":
            u = self.units.get((e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"])
            if u is not None:
                u[4] = True
        elif name == "SUnitDiedEvent":
            self.units.pop((e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"], None)
        elif name == "SUnitTypeChangeEvent":
            u = self.units.get((e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"])
            if u is not None:
                u[0] = self._type(e["m_unitTypeName"])
        elif name == "SUnitOwnerChangeEvent":
            u = self.units.get((e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"])
            if u is not None:
                u[1] = e["m_controlPlayerId"]
        elif name == "SUnitPositionsEvent":
            index = e["m_firstUnitIndex"]
            items = e["m_items"]
            for k in range(0, len(items) - 2, 3):
                index += items[k]
                u = self.units.get(self.tag_of_index.get(index, -1))
                if u is not None:
                    u[2], u[3] = items[k + 1], items[k + 2]


@dataclass
class StreamConfig:
    """Sizes and options of a converted stream.

    Attributes:
        max_entities: entity rows per sample (own units first, then enemies, then neutral).
        max_selected: selected-unit slots per action.
        raw_resolution: raw grid R (entity x/y and target location).
        enemy_units: ``"all"`` (tracker events are omniscient: every enemy unit) or ``"none"``.
        sample: ``"actions"`` or ``"every_k"``.
        k: stride in game loops for ``every_k``.
        include_target_updates: see ``player_actions``.
    """

    max_entities: int = 256
    max_selected: int = 64
    raw_resolution: int = 64
    enemy_units: str = "all"
    sample: str = "actions"
    k: int = 8
    include_target_updates: bool = False

    def __post_init__(self):
        if self.sample not in ("actions", "every_k"):
            raise ValueError(f"sample={self.sample!r}; expected 'actions' or 'every_k'")
        if self.enemy_units not in ("all", "none"):
            raise ValueError(f"enemy_units={self.enemy_units!r}; expected 'all' or 'none'")
        if self.k <= 0:
            raise ValueError(f"k={self.k!r}; expected a positive number of game loops")
        for name in ("max_entities", "max_selected", "raw_resolution"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a positive integer")


def sample_labels(actions: list[RawAction], game_loops: int, cfg: StreamConfig) -> list[tuple[int, RawAction | None, int]]:
    """Sample loops with their labels.

    Returns:
        list of ``(loop, action or None for no_op, delay)``; ``delay`` is game loops to the
        player's next action (for ``actions``) or to the label action / next sample
        (``every_k``), capped at ``spec.MAX_DELAY``.
    """
    out = []
    if cfg.sample == "actions":
        for i, a in enumerate(actions):
            nxt = actions[i + 1].game_loop if i + 1 < len(actions) else a.game_loop
            out.append((a.game_loop, a, min(nxt - a.game_loop, spec.MAX_DELAY)))
        return out
    j = 0
    for t in range(0, max(game_loops, 1), cfg.k):
        while j < len(actions) and actions[j].game_loop < t:
            j += 1
        if j < len(actions) and actions[j].game_loop < t + cfg.k:
            out.append((t, actions[j], min(actions[j].game_loop - t, spec.MAX_DELAY)))
        else:
            out.append((t, None, min(cfg.k, spec.MAX_DELAY)))
    return out


def _stream_arrays(t_count: int, cfg: StreamConfig) -> dict[str, np.ndarray]:
    """The zeroed (or -1 padded) arrays of one stream of ``t_count`` samples (shapes: ``extract_player``)."""
    n, k = cfg.max_entities, cfg.max_selected
    return {
        "game_loop": np.zeros(t_count, np.int32),
        "function": np.zeros(t_count, np.int16),
        "specific_function": np.zeros(t_count, np.int16),
        "queued": np.zeros(t_count, np.int8),
        "delay": np.zeros(t_count, np.int16),
        "selected": np.full((t_count, k), -1, np.int16),
        "selected_count": np.zeros(t_count, np.int16),
        "target_unit": np.full(t_count, -1, np.int16),
        "target_location": np.full((t_count, 2), -1, np.int16),
        "entities": np.zeros((t_count, n, len(spec.REPLAY_ENTITY_FEATURES)), np.int16),
        "entity_count": np.zeros(t_count, np.int16),
        "scalars": np.zeros((t_count, len(spec.REPLAY_SCALAR_FEATURES)), np.float32),
        "upgrades": np.zeros((t_count, len(spec.upgrade_ids())), np.int8),
        "unit_counts": np.zeros((t_count, spec.num_unit_types()), np.int16),
        "build_order": np.zeros((t_count, spec.BUILD_ORDER_LENGTH), np.int16),
    }


class _TrackerReplay:
    """One player's view of the replay's tracker events, replayed in game-loop order.

    Holds the unit roster, the player's last ``PlayerStats`` (``stats_row``; food in supply, not
    SC2's x4096 fixed point), the finished upgrades and the build order (seeded with the units the
    player owns at game loop 0).
    """

    def __init__(self, tracker: list, player_id: int, unit_ids: dict, upgrade_ids: dict):
        self.tracker, self.player_id, self.upgrade_ids = tracker, player_id, upgrade_ids
        self.roster = Roster(unit_ids)
        self.build_order = spec.BuildOrderTracker()
        self.upgrades = np.zeros(len(spec.upgrade_ids()), np.int8)
        self.stats_row = {"minerals": 0.0, "vespene": 0.0, "food_used": 0.0, "food_cap": 0.0, "food_workers": 0.0}
        self.next = 0  # index of the first tracker event not yet applied
        self.started = False

    def advance_to(self, loop: int) -> None:
        """Apply every tracker event up to and including game loop ``loop``."""
        tracker, player_id = self.tracker, self.player_id
        while self.next < len(tracker) and tracker[self.next]["_gameloop"] <= loop:
            e = tracker[self.next]
            self.next += 1
            name = e["_event"].rsplit(".", 1)[-1]
            if name == "SPlayerStatsEvent" and e["m_playerId"] == player_id:
                st = e["m_stats"]
                self.stats_row = {
                    "minerals": st["m_scoreValueMineralsCurrent"],
                    "vespene": st["m_scoreValueVespeneCurrent"],
                    "food_used": st["m_scoreValueFoodUsed"] / 4096.0,
                    "food_cap": st["m_scoreValueFoodMade"] / 4096.0,
                    "food_workers": st["m_scoreValueWorkersActiveCount"],
                }
            elif name == "SUpgradeEvent" and e["m_playerId"] == player_id:
                uid = self.upgrade_ids.get(e["m_upgradeTypeName"].decode("utf-8", "replace"), -1)
                pos = spec.upgrade_index(uid) if uid >= 0 else -1
                if pos >= 0:
                    self.upgrades[pos] = 1
            else:
                self.roster.apply(e)
            if not self.started and (self.next >= len(tracker) or tracker[self.next]["_gameloop"] > 0):
                own0 = [(tag, u[0]) for tag, u in self.roster.units.items() if u[1] == player_id]
                self.build_order.update([t for t, _ in own0], [u for _, u in own0])
                self.started = True


def extract_player(replay: DecodedReplay, player_id: int, cfg: StreamConfig, stableid_path=None) -> tuple[dict, StreamStats]:
    """Convert one player's side of a replay into arrays.

    Args:
        replay: decoded replay.
        player_id: 1-based player id (a human player).
        cfg: sizes and sampling.
        stableid_path: ``stableid.json`` (default ``abilities.default_stableid_path()``).

    Returns:
        ``(arrays, stats)``. With T samples, N = max_entities, K = max_selected:
        ``game_loop (T,) int32``; labels ``function (T,) int16`` (general raw function, 0 =
        no_op), ``specific_function (T,) int16``, ``queued (T,) int8``, ``delay (T,) int16``
        (game loops), ``selected (T, K) int16`` (entity rows, -1 padded),
        ``selected_count (T,) int16``, ``target_unit (T,) int16`` (entity row, -1 none or not
        visible), ``target_location (T, 2) int16`` (grid col, row; -1 none); features
        ``entities (T, N, 6) int16`` (``spec.REPLAY_ENTITY_FEATURES``; build_progress x100),
        ``entity_count (T,) int16``, ``scalars (T, 11) float32``
        (``spec.REPLAY_SCALAR_FEATURES``), ``upgrades (T, 89) int8``,
        ``unit_counts (T, 375) int16``, ``build_order (T, 20) int16``.

    Raises:
        ReplayError: built-in AI player; UnsupportedBuildError: no ability table.
    """
    mapper = abilities.AbilityMapper(replay.base_build, stableid_path)
    unit_ids = abilities.read_stableid_units(stableid_path)
    upgrade_ids = abilities.read_stableid_upgrades(stableid_path)
    actions, stats = player_actions(replay, player_id, mapper, cfg.include_target_updates)
    samples = sample_labels(actions, replay.game_loops, cfg)
    player = replay.player(player_id)
    others = [p for p in replay.players if p.player_id != player_id]
    home = _RACE_IDS.get(player.race, 0)
    away = _RACE_IDS.get(others[0].race, 0) if others else 0
    enemy_ids = {p.player_id for p in others}

    n, k = cfg.max_entities, cfg.max_selected
    arr = _stream_arrays(len(samples), cfg)
    events = _TrackerReplay(replay.tracker_events, player_id, unit_ids, upgrade_ids)
    last = (0, 0, 0)  # last action type, last delay, last queued
    prev_action_loop = None
    sca = {name: i for i, name in enumerate(spec.REPLAY_SCALAR_FEATURES)}
    for s, (loop, action, delay) in enumerate(samples):
        events.advance_to(loop)
        roster = events.roster
        tags, rows = snapshot_entities(roster, player_id, enemy_ids, cfg, replay.map_size)
        own_mask = rows[:, 1] == ALLIANCE_SELF
        events.build_order.update(tags[own_mask].tolist(), [roster.units[int(t)][0] for t in tags[own_mask]])
        m = min(len(rows), n)
        arr["entities"][s, :m] = rows[:m]
        arr["entity_count"][s] = m
        counts = np.bincount(rows[own_mask, 0].astype(np.int64), minlength=spec.num_unit_types())
        arr["unit_counts"][s] = counts[: spec.num_unit_types()]
        arr["upgrades"][s] = events.upgrades
        arr["build_order"][s] = events.build_order.as_array()
        arr["game_loop"][s] = loop
        sc = arr["scalars"][s]
        sc[sca["game_loop"]] = loop
        sc[sca["home_race"]], sc[sca["away_race"]] = home, away
        for key, v in events.stats_row.items():
            sc[sca[key]] = v
        sc[sca["last_action_type"]], sc[sca["last_delay"]], sc[sca["last_queued"]] = last
        arr["delay"][s] = delay
        if action is None:
            continue
        row_of = {int(t): i for i, t in enumerate(tags[:m])}
        arr["function"][s] = action.function
        arr["specific_function"][s] = action.specific_function
        arr["queued"][s] = action.queued
        sel = [row_of[t] for t in action.selection if t in row_of and rows[row_of[t], 1] == ALLIANCE_SELF]
        arr["selected_count"][s] = len(sel)
        sel = sel[:k]
        arr["selected"][s, : len(sel)] = sel
        if not sel and spec.argument_masks()[action.function, 3]:
            stats.empty_selection += 1
        if action.target_tag is not None:
            arr["target_unit"][s] = row_of.get(action.target_tag, -1)
        if action.target_point is not None:
            col, row = spec.world_to_grid(action.target_point[0], action.target_point[1], replay.map_size, cfg.raw_resolution)
            arr["target_location"][s] = (int(col), int(row))
        gap = 0 if prev_action_loop is None else min(action.game_loop - prev_action_loop, spec.MAX_DELAY)
        last = (action.function, gap, action.queued)
        prev_action_loop = action.game_loop
    return arr, stats


def snapshot_entities(
    roster: Roster, player_id: int, enemy_ids: set[int], cfg: StreamConfig, map_size
) -> tuple[np.ndarray, np.ndarray]:
    """Entity rows of the roster from ``player_id``'s point of view.

    Args:
        roster: current unit roster (positions in cells, game unit ids).
        player_id: the observing player.
        enemy_ids: the other players' ids.
        cfg: sizes and ``enemy_units`` option.
        map_size: ``(W, H)`` in cells.

    Returns:
        ``(tags (U,) uint64, rows (U, len(REPLAY_ENTITY_FEATURES)) int16)`` in
        ``spec.entity_order``; neutral units get owner 16 as in the live API, and
        build_progress is 0 or 100.
    """
    tags, rows = [], []
    for tag, (uid, owner, x, y, done) in roster.units.items():
        if owner == player_id:
            alliance = ALLIANCE_SELF
        elif owner in enemy_ids:
            if cfg.enemy_units == "none":
                continue
            alliance = ALLIANCE_ENEMY
        else:
            alliance = ALLIANCE_NEUTRAL
            owner = 16  # the live API's neutral player id
        tags.append(tag)
        rows.append((spec.unit_type_index(uid), alliance, owner, x, y, 100 if done else 0))
    if not rows:
        return np.zeros(0, np.uint64), np.zeros((0, len(spec.REPLAY_ENTITY_FEATURES)), np.int16)
    tags_a = np.asarray(tags, dtype=np.uint64)
    rows_f = np.asarray(rows, dtype=np.float64)
    col, row = spec.world_to_grid(rows_f[:, 3], rows_f[:, 4], map_size, cfg.raw_resolution)
    rows_a = rows_f.astype(np.int64)
    rows_a[:, 3], rows_a[:, 4] = col, row
    order = spec.entity_order(rows_a[:, 1], tags_a)
    return tags_a[order], rows_a[order].astype(np.int16)
