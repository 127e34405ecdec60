"""AlphaStar action heads (``sc2_envs.full_game.spec``) -> lite engine commands, for B games.

The heads mean what they mean on the real game (``convert.action_to_request``): ``action_type``
a raw function id, ``selected_units`` entity rows ended by EOF (``max_entities``), ``target_unit``
an entity row, ``target_location`` a raw-grid cell (col, row), ``queued`` 0/1. Raw functions map
to engine commands through their general function (``spec.general_function_ids``), so
``Harvest_Gather_Probe_unit`` and ``Harvest_Gather_unit`` are one command.

Errors follow FullGame-v0: a malformed action (wrong type or range of a head) raises
``ValueError`` (``sc2_envs.full_game.heads``, whose ``check_heads`` and ``check_action_keys`` this module
re-exports: the real game's env refuses the same actions); a well-formed action that points at padding rows or selects nothing
becomes a no-op with a ``spec.InvalidAction`` code (``InvalidActionError.code`` there); a command the game
would refuse (a function the engine does not model, not enough minerals, a bad build site)
reaches the engine and comes back as an ``action_errors`` ActionResult code.
"""

from __future__ import annotations

import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.full_game.heads import HEADS, check_action_keys, check_heads  # noqa: F401 - public names kept here
from sc2_envs.lite.catalog import TI_ABILITY_ID, TI_BUILT_BY_WORKER, Catalog
from sc2_envs.lite.layout import (
    CK_KIND,
    CK_PARAM,
    CK_PLAYER,
    CK_QUEUED,
    CK_TARGET,
    CMD_ATTACK_PT,
    CMD_ATTACK_UNIT,
    CMD_BUILD_PT,
    CMD_BUILD_UNIT,
    CMD_CALLDOWN_MULE,
    CMD_CANCEL_BUILD,
    CMD_CANCEL_LAST,
    CMD_GATHER,
    CMD_HOLD,
    CMD_MOVE_PT,
    CMD_MOVE_UNIT,
    CMD_NONE,
    CMD_RALLY,
    CMD_RETURN,
    CMD_SMART_PT,
    CMD_SMART_UNIT,
    CMD_STOP,
    CMD_TRAIN,
    NCK,
)

CMD_UNSUPPORTED = -1  # a raw function the lite engine does not model: ActionResult NotSupported
MOVE_CAMERA = 168


def command_tables(catalog: Catalog) -> tuple[np.ndarray, np.ndarray]:
    """Per raw function: the engine command and its type parameter.

    Returns:
        ``(cmd, param)``: ``(num_functions,)`` int64 each. ``cmd`` is a ``CMD_*`` value,
        ``CMD_NONE`` for no_op / raw_move_camera, ``CMD_UNSUPPORTED`` for the rest.
    """
    funcs = spec.raw_functions()
    generals = spec.general_function_ids()
    by_name = {f.name: f.id for f in funcs}
    general_cmd = {
        "Smart_pt": CMD_SMART_PT,
        "Smart_unit": CMD_SMART_UNIT,
        "Attack_pt": CMD_ATTACK_PT,
        "Attack_unit": CMD_ATTACK_UNIT,
        "Move_pt": CMD_MOVE_PT,
        "Move_unit": CMD_MOVE_UNIT,
        # Patrol walks to the point like Move; the lite engine does not walk back and forth.
        "Patrol_pt": CMD_MOVE_PT,
        "Patrol_unit": CMD_MOVE_UNIT,
        "HoldPosition_quick": CMD_HOLD,
        "Stop_quick": CMD_STOP,
        "Harvest_Gather_unit": CMD_GATHER,
        "Harvest_Return_quick": CMD_RETURN,
        "Rally_Units_pt": CMD_RALLY,
        "Rally_Units_unit": CMD_RALLY,
        "Rally_Workers_pt": CMD_RALLY,
        "Rally_Workers_unit": CMD_RALLY,
        "Cancel_Last_quick": CMD_CANCEL_LAST,
        "Cancel_quick": CMD_CANCEL_BUILD,
        "Effect_CalldownMULE_pt": CMD_CALLDOWN_MULE,
        "Effect_CalldownMULE_unit": CMD_CALLDOWN_MULE,
    }
    cmd = np.full(len(funcs), CMD_UNSUPPORTED, np.int64)
    param = np.full(len(funcs), -1, np.int64)
    cmd[0] = CMD_NONE
    cmd[MOVE_CAMERA] = CMD_NONE
    gid = {by_name[n]: c for n, c in general_cmd.items()}
    ability_type = {int(catalog.ti[t, TI_ABILITY_ID]): t for t in range(len(catalog.names)) if catalog.ti[t, TI_ABILITY_ID]}
    for f in funcs:
        g = int(generals[f.id])
        if g in gid:
            cmd[f.id] = gid[g]
            continue
        t = ability_type.get(f.ability_id)
        if t is None and f.general_id:
            t = ability_type.get(f.general_id) if f.general_id != 3682 else ability_type.get(421)  # Build_TechLab
        if t is None or f.kind not in ("quick", "pt", "unit"):
            continue
        if catalog.ti[t, TI_BUILT_BY_WORKER]:
            cmd[f.id] = CMD_BUILD_UNIT if f.kind == "unit" else CMD_BUILD_PT
        else:
            cmd[f.id] = CMD_TRAIN
        param[f.id] = t
    return cmd, param


def decode(
    heads: dict,
    cmd_table: np.ndarray,
    param_table: np.ndarray,
    row_slot: np.ndarray,
    entity_mask: np.ndarray,
    map_size: tuple[int, int],
    resolution: int,
    player: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None], np.ndarray]:
    """Engine commands of validated heads (``check_heads``) against the last observation.

    Args:
        heads: validated heads (leading axis B).
        cmd_table, param_table: from ``command_tables``.
        row_slot: ``(B, N)`` engine slot of each entity row (-1 for padding; ghost rows are < -1).
        entity_mask: ``(B, N)`` 1 for real rows.
        map_size: ``(W, H)`` cells.
        resolution: raw grid R.
        player: the commanding player.

    Returns:
        ``(ck, cf, cs, invalid, camera)``: command arrays for ``LiteEngine.apply`` (unsupported
        functions come back as ``CK_KIND == CMD_UNSUPPORTED`` for the caller to report), ``(B,)``
        int32 ``spec.InvalidAction`` codes (why a game's action is played as a no-op; 0 when it is
        played), and ``(B, 2)`` float32 camera targets (NaN where the action was not ``raw_move_camera``).
    """
    fid = heads["action_type"]
    b, n = row_slot.shape
    ck = np.zeros((b, NCK), np.int64)
    ck[:, CK_PLAYER] = player
    ck[:, CK_TARGET] = -1
    cf = np.zeros((b, 2), np.float32)
    sel = heads["selected_units"]
    cs = np.full(sel.shape, -1, np.int64)
    invalid = np.zeros(b, np.int32)  # spec.InvalidAction.NONE
    camera = np.full((b, 2), np.nan, np.float32)
    w, h = map_size
    cell = max(w, h) / resolution
    loc = heads["target_location"]
    x = (loc[:, 0] + 0.5) * cell
    y = h - (loc[:, 1] + 0.5) * cell
    masks = spec.argument_masks()
    kinds = cmd_table[fid]
    for g in np.flatnonzero(fid != 0):
        f = int(fid[g])
        if f == MOVE_CAMERA:
            camera[g] = (x[g], y[g])
            continue
        m = masks[f]
        n_real = int(entity_mask[g].sum())
        rows = []
        for v in sel[g]:
            if v == n or v < 0:
                break
            if v >= n_real:
                invalid[g] = spec.InvalidAction.SELECTED_UNIT_IS_PADDING
                break
            rows.append(int(v))
        if invalid[g]:
            continue
        if m[3] and not rows:
            invalid[g] = spec.InvalidAction.NO_SELECTED_UNITS
            continue
        target = -1
        if m[4]:
            t = int(heads["target_unit"][g])
            if not 0 <= t < n_real:
                invalid[g] = spec.InvalidAction.TARGET_UNIT_IS_PADDING
                continue
            target = int(row_slot[g, t])
            if target < 0:
                target = 1 << 30  # a snapshot of a destroyed structure: the engine answers CantTargetThatUnit
        ck[g, CK_KIND] = kinds[g]
        ck[g, CK_PARAM] = param_table[f]
        ck[g, CK_TARGET] = target
        ck[g, CK_QUEUED] = heads["queued"][g]
        cf[g] = (x[g], y[g])
        slots = [int(row_slot[g, r]) for r in rows]
        cs[g, : len(slots)] = [s if s >= 0 else 1 << 30 for s in slots]
    return ck, cf, cs, invalid, camera
