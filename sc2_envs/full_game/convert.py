"""Conversions between s2clientprotocol messages and the env's numpy observations/actions.

Observation: ``ResponseObservation`` (+ ``ResponseGameInfo``) -> dict of numpy arrays laid
out by ``sc2_envs.full_game.spec``. Action: a dict of AlphaStar heads -> ``RequestAction``
(``ActionRaw``), and back. Only the raw interface is used (pysc2's ``use_raw_units`` /
``use_raw_actions``); minimap planes come from the feature-layer minimap renders.

Sources: s2client-proto ``raw.proto``, ``sc2api.proto``, ``spatial.proto``, ``common.proto``;
pysc2 ``lib/features.py`` (raw transform, minimap layer names).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.full_game._deps import require

ALLIANCE_SELF = 1


class InvalidActionError(ValueError):
    """A well-formed action that cannot be executed on this observation.

    Raised for pointers to padding rows, a unit command with no selected unit, or a target
    row that is not a real entity; ``code`` is the ``spec.InvalidAction`` value. ``FullGameEnv.step``
    turns it into a no-op and reports ``code`` in ``info["invalid_action"]`` (random policies and
    ``check_env`` sample such actions); malformed actions (unknown action_type, bad target_location)
    stay ``ValueError``.
    """

    def __init__(self, message: str, code: spec.InvalidAction):
        super().__init__(message)
        self.code = spec.InvalidAction(code)


def _pb(name: str):
    return require(f"s2clientprotocol.{name}", "converting StarCraft II protocol messages")


@dataclass
class ObsContext:
    """Static game facts needed to convert observations and actions.

    Attributes:
        map_size: ``(W, H)`` in cells, from ``ResponseGameInfo.start_raw.map_size``.
        player_id: the agent's player id (1-based).
        home_race, away_race: s2clientprotocol Race values (requested races).
        raw_resolution: raw grid size R for entity x/y and target_location.
        max_entities: entity rows N (padding beyond the real units).
        max_selected: selected_units slots.
    """

    map_size: tuple[int, int]
    player_id: int = 1
    home_race: int = 0
    away_race: int = 0
    raw_resolution: int = 64
    max_entities: int = 512
    max_selected: int = 64
    minimap_resolution: int = 64
    build_order: spec.BuildOrderTracker = field(default_factory=spec.BuildOrderTracker)


def context_from_game_info(game_info, player_id: int, **sizes) -> ObsContext:
    """Build an ``ObsContext`` from a ``ResponseGameInfo``.

    Args:
        game_info: ``sc2api_pb2.ResponseGameInfo``.
        player_id: the agent's player id.
        **sizes: ``raw_resolution``, ``max_entities``, ``max_selected``, ``minimap_resolution``.

    Raises:
        ValueError: ``game_info`` has no ``start_raw.map_size`` or no entry for ``player_id``.
    """
    size = game_info.start_raw.map_size
    if size.x <= 0 or size.y <= 0:
        raise ValueError(f"game_info.start_raw.map_size={size.x}x{size.y}; expected a positive map size (raw interface on)")
    races = {p.player_id: p.race_requested for p in game_info.player_info}
    if player_id not in races:
        raise ValueError(f"player_id={player_id} is not in game_info.player_info (players {sorted(races)})")
    away = [r for pid, r in races.items() if pid != player_id]
    return ObsContext(
        map_size=(int(size.x), int(size.y)),
        player_id=player_id,
        home_race=int(races[player_id]),
        away_race=int(away[0]) if away else 0,
        **sizes,
    )


def _order_function(order) -> int:
    by_ability = spec.function_by_ability()
    if order.HasField("target_world_space_pos"):
        kind = "pt"
    elif order.HasField("target_unit_tag"):
        kind = "unit"
    else:
        kind = "quick"
    fid = by_ability.get((int(order.ability_id), kind))
    if fid is None:
        fid = next(
            (
                by_ability[(int(order.ability_id), k)]
                for k in ("quick", "pt", "unit")
                if (int(order.ability_id), k) in by_ability
            ),
            0,
        )
    return int(spec.general_function_ids()[fid])


def unit_rows(units, ctx: ObsContext) -> tuple[np.ndarray, np.ndarray]:
    """Entity rows for a sequence of ``raw_pb2.Unit``.

    Args:
        units: sequence of ``raw_pb2.Unit``.
        ctx: conversion context.

    Returns:
        ``(rows, tags)``: rows ``(U, len(ENTITY_FEATURES))`` float32 in ``entity_order``
        (truncated to ``ctx.max_entities``) and their tags ``(U,)`` uint64.
    """
    n = len(units)
    rows = np.zeros((n, len(spec.ENTITY_FEATURES)), dtype=np.float32)
    tags = np.zeros(n, dtype=np.uint64)
    alliance = np.zeros(n, dtype=np.int64)
    if n == 0:
        return rows, tags
    xs = np.array([u.pos.x for u in units])
    ys = np.array([u.pos.y for u in units])
    col, row = spec.world_to_grid(xs, ys, ctx.map_size, ctx.raw_resolution)
    c = spec.ENTITY_INDEX
    for i, u in enumerate(units):
        r = rows[i]
        tags[i] = u.tag
        alliance[i] = u.alliance
        r[c["unit_type"]] = spec.unit_type_index(int(u.unit_type))
        r[c["alliance"]] = u.alliance
        r[c["owner"]] = u.owner
        r[c["x"]] = col[i]
        r[c["y"]] = row[i]
        r[c["build_progress"]] = u.build_progress
        for name in ("health", "health_max", "shield", "shield_max", "energy", "energy_max", "display_type", "cloak"):
            r[c[name]] = getattr(u, name)
        for name in ("is_powered", "is_active", "is_on_screen", "is_flying", "is_burrowed", "is_selected"):
            r[c[name]] = float(getattr(u, name))
        r[c["is_hallucination"]] = float(u.is_hallucination)
        for name in (
            "mineral_contents",
            "vespene_contents",
            "cargo_space_taken",
            "cargo_space_max",
            "assigned_harvesters",
            "ideal_harvesters",
            "weapon_cooldown",
            "attack_upgrade_level",
            "armor_upgrade_level",
            "shield_upgrade_level",
        ):
            r[c[name]] = getattr(u, name)
        r[c["order_length"]] = len(u.orders)
        for k, order in enumerate(u.orders[:2]):
            r[c[f"order_id_{k}"]] = _order_function(order)
            r[c[f"order_progress_{k}"]] = order.progress
        for k, buff in enumerate(list(u.buff_ids)[:2]):
            r[c[f"buff_id_{k}"]] = buff
    order = spec.entity_order(alliance, tags)[: ctx.max_entities]
    return rows[order], tags[order]


def decode_image(image, expected: tuple[int, int] | None = None) -> np.ndarray:
    """Decode a ``common_pb2.ImageData`` to a ``(H, W)`` uint8 array.

    Supports 1 bit (packed, MSB first) and 8 bit per pixel images, the two depths SC2 uses
    for minimap layers.

    Raises:
        ValueError: unsupported ``bits_per_pixel``, a data length that does not match the
            size, or a size different from ``expected`` ``(W, H)``.
    """
    w, h = int(image.size.x), int(image.size.y)
    if expected is not None and (w, h) != tuple(expected):
        raise ValueError(f"minimap layer is {w}x{h}; expected {expected[0]}x{expected[1]} (minimap_resolution)")
    data = np.frombuffer(image.data, dtype=np.uint8)
    if image.bits_per_pixel == 8:
        if data.size != w * h:
            raise ValueError(f"8-bit image of {w}x{h} has {data.size} bytes; expected {w * h}")
        return data.reshape(h, w).copy()
    if image.bits_per_pixel == 1:
        bits = np.unpackbits(data)
        if bits.size < w * h:
            raise ValueError(f"1-bit image of {w}x{h} has {bits.size} bits; expected at least {w * h}")
        return bits[: w * h].reshape(h, w).copy()
    raise ValueError(f"bits_per_pixel={image.bits_per_pixel}; expected 1 or 8")


def minimap_planes(observation, ctx: ObsContext) -> np.ndarray:
    """Minimap planes ``(len(MINIMAP_FEATURES), R, R)`` uint8 from ``Observation``.

    Layers missing from the message (feature layers off) are zeros.
    """
    r = ctx.minimap_resolution
    out = np.zeros((len(spec.MINIMAP_FEATURES), r, r), dtype=np.uint8)
    if not observation.HasField("feature_layer_data"):
        return out
    renders = observation.feature_layer_data.minimap_renders
    for k, name in enumerate(spec.MINIMAP_FEATURES):
        if renders.HasField(name):
            out[k] = decode_image(getattr(renders, name), (r, r))
    return out


def scalar_vector(observation, ctx: ObsContext, last_action: tuple[int, int, int] = (0, 0, 0)) -> np.ndarray:
    """Scalar features ``(len(SCALAR_FEATURES),)`` float32 from an ``Observation``.

    Args:
        observation: ``sc2api_pb2.Observation``.
        ctx: conversion context (races).
        last_action: ``(action_type, delay, queued)`` of the agent's previous action.
    """
    pc = observation.player_common
    out = np.zeros(len(spec.SCALAR_FEATURES), dtype=np.float32)
    c = spec.SCALAR_INDEX
    out[c["game_loop"]] = observation.game_loop
    out[c["home_race"]] = ctx.home_race
    out[c["away_race"]] = ctx.away_race
    for name in spec.PLAYER_COMMON_FIELDS:
        out[c[name]] = getattr(pc, name)
    out[c["last_action_type"]], out[c["last_delay"]], out[c["last_queued"]] = last_action
    return out


def available_function_mask(query_response=None) -> np.ndarray:
    """action_type mask ``(564,)`` int8 from a ``ResponseQueryAvailableAbilities`` list.

    A function is available when some own unit reports its ability id in
    ``ResponseQuery.abilities``; a specific ability (e.g. 298 Harvest_Gather_Probe) also
    enables its general function (Harvest_Gather_unit), never the reverse. ``no_op`` and
    ``raw_move_camera`` are always available; so are Smart_pt/Smart_unit when any own unit
    reported abilities.

    Args:
        query_response: ``query_pb2.ResponseQuery`` or None (then everything is available).
    """
    n = spec.num_functions()
    if query_response is None:
        return np.ones(n, dtype=np.int8)
    mask = np.zeros(n, dtype=np.int8)
    mask[0] = 1
    mask[168] = 1
    ability_ids = {int(a.ability_id) for unit in query_response.abilities for a in unit.abilities}
    if any(len(unit.abilities) for unit in query_response.abilities):
        ability_ids.add(1)  # Smart
    generals = spec.general_function_ids()
    for f in spec.raw_functions():
        if f.ability_id and f.ability_id in ability_ids:
            mask[f.id] = 1
            mask[generals[f.id]] = 1  # a specific ability also enables its general function
    return mask


def observation_to_arrays(
    response_observation, ctx: ObsContext, last_action=(0, 0, 0), query_response=None
) -> tuple[dict, np.ndarray]:
    """Full observation dict from a ``ResponseObservation``.

    Args:
        response_observation: ``sc2api_pb2.ResponseObservation``.
        ctx: conversion context; its build-order tracker is updated.
        last_action: ``(action_type, delay, queued)`` of the agent's previous action.
        query_response: optional ``ResponseQuery`` with available abilities for the mask.

    Returns:
        ``(obs, tags)``. ``obs`` keys and shapes (N = max_entities, R = minimap resolution):
        ``entities (N, F) float32``, ``entity_mask (N,) int8`` (real rows),
        ``selectable_mask (N,) int8`` (own units), ``scalars (S,) float32``,
        ``minimap (C, R, R) uint8``, ``upgrades (89,) int8``, ``unit_counts (375,) float32``
        (own units per vocabulary index), ``build_order (20,) int64``,
        ``action_type_mask (564,) int8``. ``tags (N,) uint64`` maps rows to unit tags
        (0 for padding).
    """
    obs = response_observation.observation
    rows, tags = unit_rows(list(obs.raw_data.units), ctx)
    n = len(rows)
    entities = np.zeros((ctx.max_entities, len(spec.ENTITY_FEATURES)), dtype=np.float32)
    entities[:n] = rows
    entity_mask = np.zeros(ctx.max_entities, dtype=np.int8)
    entity_mask[:n] = 1
    own = rows[:, spec.ENTITY_INDEX["alliance"]] == ALLIANCE_SELF
    selectable = np.zeros(ctx.max_entities, dtype=np.int8)
    selectable[:n] = own
    padded_tags = np.zeros(ctx.max_entities, dtype=np.uint64)
    padded_tags[:n] = tags

    own_units = [u for u in obs.raw_data.units if u.alliance == ALLIANCE_SELF]
    ctx.build_order.update([u.tag for u in own_units], [u.unit_type for u in own_units])
    counts = np.zeros(spec.num_unit_types(), dtype=np.float32)
    np.add.at(counts, rows[own, spec.ENTITY_INDEX["unit_type"]].astype(np.int64), 1.0)
    upgrades = np.zeros(len(spec.upgrade_ids()), dtype=np.int8)
    for uid in obs.raw_data.player.upgrade_ids:
        k = spec.upgrade_index(int(uid))
        if k >= 0:
            upgrades[k] = 1
    out = {
        "entities": entities,
        "entity_mask": entity_mask,
        "selectable_mask": selectable,
        "scalars": scalar_vector(obs, ctx, last_action),
        "minimap": minimap_planes(obs, ctx),
        "upgrades": upgrades,
        "unit_counts": counts,
        "build_order": ctx.build_order.as_array(),
        "action_type_mask": available_function_mask(query_response),
    }
    return out, padded_tags


def replay_observable(obs: dict) -> dict:
    """The replay-observable subset of a live observation dict (feature parity).

    Returns:
        ``entities (N, len(REPLAY_ENTITY_FEATURES)) int16`` (build_progress x100, rounded),
        ``entity_mask``, ``scalars (len(REPLAY_SCALAR_FEATURES),) float32``, ``upgrades``,
        ``unit_counts``, ``build_order``: the same keys, columns and encoding that
        ``sc2_envs.replays`` writes per sample.
    """
    ent_cols = [spec.ENTITY_INDEX[n] for n in spec.REPLAY_ENTITY_FEATURES]
    sca_cols = [spec.SCALAR_INDEX[n] for n in spec.REPLAY_SCALAR_FEATURES]
    entities = obs["entities"][:, ent_cols].copy()
    bp = spec.REPLAY_ENTITY_FEATURES.index("build_progress")
    entities[:, bp] = np.round(entities[:, bp] * 100)
    return {
        "entities": entities.astype(np.int16),
        "entity_mask": obs["entity_mask"],
        "scalars": obs["scalars"][sca_cols],
        "upgrades": obs["upgrades"],
        "unit_counts": obs["unit_counts"],
        "build_order": obs["build_order"],
    }


# --------------------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------------------
def _selected_indices(selected, n_real: int, max_entities: int) -> list[int]:
    out = []
    for v in np.asarray(selected, dtype=np.int64).reshape(-1):
        if v == max_entities or v < 0:  # EOF (or -1 padding in datasets)
            break
        if v >= n_real:
            raise InvalidActionError(
                f"selected_units index {int(v)} points at a padding row; there are {n_real} entities",
                spec.InvalidAction.SELECTED_UNIT_IS_PADDING,
            )
        out.append(int(v))
    return out


def action_to_request(action: dict, tags: np.ndarray, ctx: ObsContext):
    """AlphaStar action heads -> ``sc2api_pb2.RequestAction``.

    Args:
        action: ``action_type`` int in [0, 564); ``queued`` 0/1; ``selected_units``
            ``(max_selected,)`` entity indices ended by ``max_entities`` (EOF);
            ``target_unit`` entity index; ``target_location`` ``(2,)`` grid (col, row).
            ``delay`` is not part of the request (the env uses it to step).
        tags: ``(N,)`` uint64 unit tags of the entity rows (0 = padding).
        ctx: conversion context (map size, resolution).

    Returns:
        ``RequestAction``; empty for ``no_op``.

    Raises:
        ValueError: unknown action_type, a target_location off the grid or not integer, a non-integer
            ``action_type`` / ``selected_units`` / ``target_unit``, or a ``queued`` / ``delay``
            that is not an int in its head's range (``bool(2)`` would queue, a negative delay would step 1 loop).
        InvalidActionError: a command with no selected unit, or a selected/target index
            that is not a real entity row.
    """
    sc_pb = _pb("sc2api_pb2")
    raw_pb = _pb("raw_pb2")
    for head in ("action_type", "selected_units", "target_unit"):  # int() / astype(int64) would truncate 3.7 to 3
        if head in action and not np.issubdtype(np.asarray(action[head]).dtype, np.integer):
            raise ValueError(f"{head}={action[head]!r}; expected integer entity / function indices")
    for head, hi in (("queued", 1), ("delay", spec.MAX_DELAY)):  # Discrete(2) / Discrete(MAX_DELAY + 1) heads
        if head in action:
            v = np.asarray(action[head])
            if v.size != 1 or not np.issubdtype(v.dtype, np.integer) or not 0 <= int(v.reshape(())) <= hi:
                raise ValueError(f"{head}={action[head]!r}; expected an int in [0, {hi}]")
    fid = int(action["action_type"])
    funcs = spec.raw_functions()
    if not 0 <= fid < len(funcs):
        raise ValueError(f"action_type={fid} is not a raw function id; expected 0..{len(funcs) - 1}")
    f = funcs[fid]
    request = sc_pb.RequestAction()
    if f.kind == "no_op":
        return request
    n_real = int(np.count_nonzero(tags))
    raw = request.actions.add().action_raw
    if f.kind == "move_camera":
        x, y = grid_to_world_checked(action["target_location"], ctx)
        raw.camera_move.center_world_space.x = x
        raw.camera_move.center_world_space.y = y
        return request
    selected = _selected_indices(action["selected_units"], n_real, ctx.max_entities)
    if not selected:
        raise InvalidActionError(
            f"action_type={fid} ({f.name}) needs selected_units but none were given before EOF",
            spec.InvalidAction.NO_SELECTED_UNITS,
        )
    unit_tags = [int(tags[i]) for i in selected]
    if f.kind == "autocast":
        raw.toggle_autocast.ability_id = f.ability_id
        raw.toggle_autocast.unit_tags.extend(unit_tags)
        return request
    cmd: raw_pb.ActionRawUnitCommand = raw.unit_command
    cmd.ability_id = f.ability_id
    cmd.unit_tags.extend(unit_tags)
    cmd.queue_command = bool(int(action.get("queued", 0)))
    if f.kind == "pt":
        x, y = grid_to_world_checked(action["target_location"], ctx)
        cmd.target_world_space_pos.x = x
        cmd.target_world_space_pos.y = y
    elif f.kind == "unit":
        t = int(action["target_unit"])
        if not 0 <= t < n_real:
            raise InvalidActionError(
                f"target_unit={t} is not a real entity row; there are {n_real} entities",
                spec.InvalidAction.TARGET_UNIT_IS_PADDING,
            )
        cmd.target_unit_tag = int(tags[t])
    return request


def grid_to_world_checked(location, ctx: ObsContext) -> tuple[float, float]:
    """``target_location`` (col, row) -> world (x, y) with a clear error for bad values."""
    raw = np.asarray(location)
    if raw.size != 2 or not np.issubdtype(raw.dtype, np.integer):  # a float cell (3.7) would be truncated to 3
        raise ValueError(f"target_location={location!r}; expected two integer grid coordinates (col, row)")
    loc = raw.astype(np.int64).reshape(-1)
    return spec.grid_to_world(int(loc[0]), int(loc[1]), ctx.map_size, ctx.raw_resolution)


def request_to_action(request, tags: np.ndarray, ctx: ObsContext) -> dict:
    """``RequestAction`` (first raw action) -> AlphaStar heads; inverse of ``action_to_request``.

    Tags not among the entity rows are dropped from ``selected_units``; an unknown target
    tag gives ``target_unit = max_entities`` (no target). Delay is set to 0.

    Raises:
        ValueError: the ability/kind pair is not a raw function.
    """
    action = empty_action(ctx)
    if not request.actions:
        return action
    raw = request.actions[0].action_raw
    row_of = {int(t): i for i, t in enumerate(tags) if t}
    by_ability = spec.function_by_ability()
    which = raw.WhichOneof("action")
    if which == "camera_move":
        action["action_type"] = 168
        p = raw.camera_move.center_world_space
        col, row = spec.world_to_grid(p.x, p.y, ctx.map_size, ctx.raw_resolution)
        action["target_location"] = np.array([col, row], dtype=np.int64)
        return action
    if which == "toggle_autocast":
        cmd, kind = raw.toggle_autocast, "autocast"
    elif which == "unit_command":
        cmd = raw.unit_command
        kind = "pt" if cmd.HasField("target_world_space_pos") else "unit" if cmd.HasField("target_unit_tag") else "quick"
        action["queued"] = int(cmd.queue_command)
        if kind == "pt":
            p = cmd.target_world_space_pos
            col, row = spec.world_to_grid(p.x, p.y, ctx.map_size, ctx.raw_resolution)
            action["target_location"] = np.array([col, row], dtype=np.int64)
        if kind == "unit":
            action["target_unit"] = row_of.get(int(cmd.target_unit_tag), ctx.max_entities)
    else:
        return action
    fid = by_ability.get((int(cmd.ability_id), kind))
    if fid is None:
        raise ValueError(f"ability_id={cmd.ability_id} with a {kind} target is not a raw function")
    action["action_type"] = fid
    rows = [row_of[int(t)] for t in cmd.unit_tags if int(t) in row_of][: ctx.max_selected]
    action["selected_units"][: len(rows)] = rows
    return action


def empty_action(ctx: ObsContext) -> dict:
    """A ``no_op`` action with every head at its "absent" value (EOF / no target)."""
    selected = np.full(ctx.max_selected, ctx.max_entities, dtype=np.int64)
    return {
        "action_type": 0,
        "delay": 0,
        "queued": 0,
        "selected_units": selected,
        "target_unit": ctx.max_entities,
        "target_location": np.zeros(2, dtype=np.int64),
    }


def grid_to_world(col: int, row: int, ctx: ObsContext) -> tuple[float, float]:
    """Convenience wrapper of ``spec.grid_to_world`` with a context."""
    return spec.grid_to_world(col, row, ctx.map_size, ctx.raw_resolution)
