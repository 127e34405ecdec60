"""SMAC v1 observations, global state, available actions, shaped reward and game result, batched.

Everything here is a vectorised re-statement of oxwhirl/smac d6aab33
``smac/env/starcraft2/starcraft2.py`` (``get_obs_agent``, ``get_state_dict``,
``get_avail_agent_actions``, ``reward_battle``, ``update_units``, ``only_medivac_left``,
``get_obs_*_size``). It works on a
:class:`~sc2_envs.sim.state.WorldState` of ``B`` envs and ``U = N + E`` units (allies first) and
reproduces SMAC's vectors to float32 precision, quirks included:

* the enemy unit-type one-hot on stalkers-and-zealots maps is zealot=0, stalker=1 (the reverse of
  the ally one-hot), carried by ``UnitTable.type_bit``;
* a medivac's attack columns ``6 + j`` are "heal ally j" (alive, not a medivac, centre distance
  <= 6), so its enemy-feature column 0 shows whether *ally* ``j`` is healable;
* a dead agent sees all zeros (move features included) and may only take the no-op;
* sight is a strict centre distance < 9, attack (and heal) availability a centre distance <= 6,
  both from the raw unit centres and computed in float64 like SMAC's ``math.hypot`` (as
  ``sqrt(dx*dx + dy*dy)``: IEEE operations only, so the compiled CPU kernel
  ``sim.numba.features`` reproduces every bit; ``hypot`` implementations differ by an ulp);
* the move probes truncate toward zero (Python ``int``), so ``x = -0.5`` probes cell 0;
* with ``obs_timestep_number`` SMAC's own-feature block already reserves one slot for the timestep
  (which stays 0) *and* appends the timestep after it, so the real vector is one longer than SMAC's
  ``get_obs_size()``. We return that real vector, and ``obs_size`` is its true length (the dead
  slot is named ``"timestep_pad"`` in :meth:`SMACFeatures.env_info`'s ``obs_layout``);
* with ``reward_only_positive`` the shaped reward is ``abs(...)``, so enemy shield regeneration
  counts as positive reward (``RewardConfig.reward_clip_regen`` swaps this for ``max(., 0)``).

Terrain height (``obs_terrain_height``): SMAC reads ``GameInfo.start_raw.terrain_height`` (one byte
per cell), transposes it, **flips it in y** and divides by 255, while it does not flip the pathing
grid (``_launch``); so its height at cell ``(x, y)`` is the byte of cell ``(x, 31 - y)``. We do the
same with the bytes derived from each map archive's ``t3SyncHeightMap`` (``maps.terrain_grids``;
plateau 64 reads 191/255, plateau 128 207/255). Out-of-bounds points read as 1, as in SMAC.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sc2_envs.maps import MAP_SIZE, MapSpec, terrain_grids
from sc2_envs.sim.state import UnitTable, WorldState

N_ACTIONS_NO_ATTACK = 6
"""SMAC's no-op, stop and four moves; action ``6 + j`` targets unit ``j``."""
N_ACTIONS_MOVE = 4
SHOOT_RANGE = 6.0
"""SMAC's ``unit_shoot_range`` for every unit (centre distance, ``<=``)."""
SIGHT_RANGE = 9.0
"""SMAC's ``unit_sight_range`` for every unit (centre distance, strict ``<``)."""
MOVE_AMOUNT = 2
"""SMAC's ``move_amount`` (game units): a move action orders a walk to a point this far away; moves probe
``move_amount / 2`` ahead, obs points ``move_amount`` and twice that."""
N_OBS_PATHING = 8
N_OBS_HEIGHT = 9


@dataclass(frozen=True)
class FeatureConfig:
    """Observation and state options, with SMAC v1's keyword names and defaults.

    ``obs_all_health=True`` forces ``obs_own_health=True``, as in SMAC's ``__init__``.
    """

    obs_all_health: bool = True
    obs_own_health: bool = True
    obs_last_action: bool = False
    obs_pathing_grid: bool = False
    obs_terrain_height: bool = False
    obs_timestep_number: bool = False
    obs_instead_of_state: bool = False
    state_last_action: bool = True
    state_timestep_number: bool = False


@dataclass(frozen=True)
class RewardConfig:
    """Reward options, with SMAC v1's keyword names and defaults.

    ``reward_clip_regen`` (ours, default False = SMAC): with ``reward_only_positive`` use
    ``max(delta, 0)`` instead of SMAC's ``abs(delta)``, so that enemy shield regeneration is not
    rewarded (the fix SMACv2 made). It has no effect when ``reward_only_positive`` is False.
    """

    reward_sparse: bool = False
    reward_only_positive: bool = True
    reward_death_value: float = 10
    reward_win: float = 200
    reward_defeat: float = 0
    reward_negative_scale: float = 0.5
    reward_scale: bool = True
    reward_scale_rate: float = 20
    reward_clip_regen: bool = False


# ---------------------------------------------------------------------------------------------------
# What SMAC v1 (SMACFeatures) and SMACv2 (SMACv2Features) compute alike, written once. The roster
# switch is in the arguments: a v1 map passes per-unit tables ([U] or [B, N, U, ...] views of them),
# a SMACv2 scenario the per-env values gathered from ``WorldState.unit_kind``.


def geometry(pos: torch.Tensor, n_agents: int, ddt: torch.dtype):
    """Agent-to-unit offsets and centre distances: ``(dx, dy, dist)``, each ``[B, N, U]`` in ``ddt``.

    ``dist = sqrt(dx*dx + dy*dy)``, not ``torch.hypot``: every step is a correctly rounded IEEE
    operation, so the Numba kernels (``sim.numba.features``, ``features_v2``) compute the same bits;
    ``hypot`` (SLEEF in vectorised loops, libm otherwise) may differ from any other hypot by an ulp.
    """
    p = pos.to(ddt)
    pa = p[:, :n_agents]
    d = p[:, None, :, :] - pa[:, :, None, :]
    dx, dy = d[..., 0], d[..., 1]
    return dx, dy, torch.sqrt(dx * dx + dy * dy)


def grid_lookup(grid: torch.Tensor, xi: torch.Tensor, yi: torch.Tensor, oob, size: int) -> torch.Tensor:
    """``grid[xi, yi]`` for integer index tensors on a ``size x size`` map, ``oob`` where outside it."""
    inb = (xi >= 0) & (xi < size) & (yi >= 0) & (yi < size)
    v = grid[xi.clamp(0, size - 1), yi.clamp(0, size - 1)]
    return torch.where(inb, v, torch.as_tensor(oob, dtype=grid.dtype, device=grid.device))


def move_probes(pos: torch.Tensor, n_agents: int, move_dirs: torch.Tensor, pathing: torch.Tensor, ddt) -> torch.Tensor:
    """SMAC's move availability: ``[B, N, 4]`` bool, the cell ``move_amount / 2`` ahead (N, S, E, W, at
    ``(int(x), int(y + 1))`` etc., Python's truncation toward zero) inside the map and pathable."""
    pa = pos[:, :n_agents].to(ddt)
    cell = torch.trunc(pa[:, :, None, :] + move_dirs).to(torch.int64)
    return grid_lookup(pathing, cell[..., 0], cell[..., 1], False, pathing.shape[0])


def avail_from_parts(alive_a: torch.Tensor, can_move: torch.Tensor, look: torch.Tensor | None, target: torch.Tensor):
    """``[B, N, A]`` bool: a live agent's no-op off, stop, moves, look actions (SMACv2 ``conic_fov``) and
    targets; a dead agent's no-op only."""
    B, N = alive_a.shape
    stop = torch.ones(B, N, 1, dtype=torch.bool, device=alive_a.device)
    alive_avail = torch.cat([~stop, stop, can_move] + ([] if look is None else [look]) + [target], dim=-1)
    dead_avail = torch.zeros_like(alive_avail)
    dead_avail[..., 0] = True
    return torch.where(alive_a[..., None], alive_avail, dead_avail)


def move_block(f, st: WorldState, avail: torch.Tensor) -> torch.Tensor:
    """The observation's move block of feature builder ``f``: ``[B, N, move_feats]`` float32 (the move
    actions' availability, then the pathing grid and terrain height around each agent when enabled)."""
    N, cfg = f.n_agents, f.cfg
    move = [avail[:, :, 2:6].to(torch.float32)]
    if cfg.obs_pathing_grid or cfg.obs_terrain_height:
        size = f._pathing.shape[0]
        cx = torch.trunc(st.pos[:, :N, 0].to(f._ddt)).to(torch.int64)
        cy = torch.trunc(st.pos[:, :N, 1].to(f._ddt)).to(torch.int64)
        px = cx[..., None] + f._obs_pts[:, 0]  # [B, N, 9]
        py = cy[..., None] + f._obs_pts[:, 1]
        if cfg.obs_pathing_grid:
            move.append(grid_lookup(f._pathing, px[..., :8], py[..., :8], True, size).to(torch.float32))
        if cfg.obs_terrain_height:
            move.append(grid_lookup(f._height, px, py, 1.0, size))
    return torch.cat(move, dim=-1)


def unit_columns(first, dist, dx, dy, h, s, sl: slice, n: int, shield: bool, cfg: FeatureConfig) -> list[torch.Tensor]:
    """The leading columns of the observation's enemy or ally rows for the units ``sl`` (``n`` of them),
    each ``[B, N, n, 1]``: ``first`` (attackable / visible), distance, rel x, rel y, then health and shield
    with ``obs_all_health``."""
    B, N = dist.shape[:2]
    cols = [first, dist[:, :, sl], dx[:, :, sl], dy[:, :, sl]]
    if cfg.obs_all_health:
        cols.append(h[:, None, sl].expand(B, N, n))
        if shield:
            cols.append(s[:, None, sl].expand(B, N, n))
    return [c[..., None] for c in cols]


def ally_block(f, st, dist, dx, dy, h, s, onehot_al, visible_al, shield: bool) -> torch.Tensor:
    """The observation's ally rows of feature builder ``f``: ``[B, N, N - 1, ally_feats]`` (agent ``i`` sees
    the other agents in id order; ``onehot_al [B, N, N, utb]``, ``visible_al [B, N, N]`` bool)."""
    N, cfg = f.n_agents, f.cfg
    B = dist.shape[0]
    ones = torch.ones(B, N, N, device=f.device)
    parts = unit_columns(ones, dist, dx, dy, h, s, slice(0, N), N, shield, cfg) + [onehot_al]
    if cfg.obs_last_action:
        last = (st.last_action[..., None] == f._arangeA).to(torch.float32)  # [B, N, A]
        parts.append(last[:, None, :, :].expand(B, N, N, f.n_actions))
    ally = torch.cat(parts, dim=-1) * visible_al[..., None]
    return ally[:, f._arangeN[:, None], f._others]


def finish_obs(f, st, move, enemy, ally, own) -> torch.Tensor:
    """``[move | enemy | ally | own]`` zeroed for dead agents, then the timestep (``obs_timestep_number``)."""
    B, N = move.shape[:2]
    out = torch.cat([move, enemy.reshape(B, N, -1), ally.reshape(B, N, -1), own], dim=-1)
    out = out * st.alive[:, :N, None]
    if f.cfg.obs_timestep_number:
        t = (st.episode_steps.to(f._ddt) / f.spec.episode_limit).to(torch.float32)
        out = torch.cat([out, t[:, None, None].expand(B, N, 1)], dim=-1)
    return out


def state_vector(f, st, h, s, cd, rel, onehot_a, onehot_e, ally_extra: list, shield_a: bool, shield_e: bool):
    """SMAC's ``get_state`` from its parts: ally rows (health, cooldown, rel x, rel y, shield, ``ally_extra``,
    type one-hot ``onehot_a [B, N, utb]``), enemy rows (health, rel x, rel y, shield, ``onehot_e``), dead
    units zeroed, then the last-action one-hots and the timestep when enabled: ``[B, state_size]``."""
    N = f.n_agents
    B = h.shape[0]
    a_cols = [h[:, :N], cd, rel[:, :N, 0], rel[:, :N, 1]] + ([s[:, :N]] if shield_a else [])
    ally = torch.cat([torch.stack(a_cols, -1)] + ally_extra + [onehot_a], -1) * st.alive[:, :N, None]
    e_cols = [h[:, N:], rel[:, N:, 0], rel[:, N:, 1]] + ([s[:, N:]] if shield_e else [])
    enemy = torch.cat([torch.stack(e_cols, -1), onehot_e], -1) * st.alive[:, N:, None]
    parts = [ally.reshape(B, -1), enemy.reshape(B, -1)]
    if f.cfg.state_last_action:
        parts.append((st.last_action[..., None] == f._arangeA).to(torch.float32).reshape(B, -1))
    if f.cfg.state_timestep_number:
        parts.append((st.episode_steps.to(f._ddt) / f.spec.episode_limit).to(torch.float32)[:, None])
    return torch.cat(parts, dim=-1)


def battle_result(alive: torch.Tensor, n_agents: int, lost_extra=None, won_extra=None):
    """``update_units``' end code: ``(won, lost, draw)``, each ``[B]`` bool, mutually exclusive.

    Lost: no ally alive while an enemy is, or ``lost_extra``; won (if not lost): an ally alive and no
    enemy, or ``won_extra``; draw: both sides empty, neither won nor lost. The medivac rules of SMAC's
    MMM maps and SMACv2's terran scenarios come in as ``lost_extra`` / ``won_extra`` ([B] bool).
    """
    N = n_agents
    n_a, n_e = alive[:, :N].sum(1), alive[:, N:].sum(1)
    lost = (n_a == 0) & (n_e > 0)
    won = (n_a > 0) & (n_e == 0)
    if lost_extra is not None:
        lost = lost | lost_extra
        won = won | won_extra
    won = won & ~lost
    draw = (n_a == 0) & (n_e == 0) & ~lost & ~won
    return won, lost, draw


def battle_reward(f, st, won, lost, clip_regen: bool, bonus: tuple, max_reward) -> torch.Tensor:
    """``reward_battle`` plus the end-of-battle bonus, then scaling: ``[B]`` float32.

    Uses ``st.prev_health/prev_shield/prev_alive`` (end of the previous env step) against the current
    values; a unit with ``prev_alive`` False is already counted dead and ignored. Dense: ``delta_enemy`` =
    HP+shield the enemies lost (a death counts the previous HP+shield), ``delta_deaths`` =
    ``reward_death_value`` per enemy death; only-positive mode gives ``max(., 0)`` with ``clip_regen``
    (SMACv2; SMAC v1's ``reward_clip_regen``) else ``abs(.)`` (SMAC v1), signed mode subtracts
    ``reward_negative_scale`` x (ally HP+shield lost + ``reward_death_value`` per ally death). ``bonus``:
    ``(win, defeat, neither)`` added at the end (sparse mode: 0 per step, +1 win, -1 loss); with
    ``reward_scale`` the result is divided by ``max_reward / reward_scale_rate`` (a float, or ``[B]``).
    """
    r, N, dt = f.rcfg, f.n_agents, f._ddt
    B = st.pos.shape[0]
    if r.reward_sparse:
        rew = torch.zeros(B, dtype=dt, device=f.device)
    else:
        tracked = st.prev_alive
        died = tracked & ~st.alive
        prev_hs = st.prev_health.to(dt) + st.prev_shield.to(dt)
        cur_hs = st.health.to(dt) + st.shield.to(dt)
        lost_hs = torch.where(died, prev_hs, prev_hs - cur_hs) * tracked
        # cumsum: a defined left-to-right order (sum() reorders with the vector width), which the
        # Numba kernels repeat bit for bit
        delta_enemy = lost_hs[:, N:].cumsum(1)[:, -1]
        delta_ally = r.reward_negative_scale * lost_hs[:, :N].cumsum(1)[:, -1]
        delta_deaths = r.reward_death_value * died[:, N:].sum(1).to(dt)
        if r.reward_only_positive:
            d = delta_enemy + delta_deaths
            rew = d.clamp(min=0) if clip_regen else d.abs()
        else:
            delta_deaths = delta_deaths - r.reward_death_value * r.reward_negative_scale * died[:, :N].sum(1).to(dt)
            rew = delta_enemy + delta_deaths - delta_ally
    if r.reward_sparse:
        rew = torch.where(won, 1.0, torch.where(lost, -1.0, rew))
    else:
        win, defeat, neither = bonus
        rew = rew + torch.where(won, win, torch.where(lost, defeat, neither))
    if r.reward_scale:
        rew = rew / (max_reward / r.reward_scale_rate)
    return rew.to(torch.float32)


class SMACFeatures:
    """SMAC v1 feature functions for one map, batched over envs.

    Args:
        spec: the map.
        table: the map's per-unit constants (``UnitTable.build(spec, device)``).
        cfg: observation / state options.
        rcfg: reward options.
        device: torch device of the state tensors.

    Attributes:
        n_agents (N), n_enemies (E), n_actions (A = 6 + E).
        obs_size: length of one agent's observation (the real vector; see the module docstring
            for the ``obs_timestep_number`` size bug).
        state_size: length of the global state.
        max_reward: SMAC's reward normaliser ``E * reward_death_value + reward_win +
            sum over enemies of (max health + max shield)``.

    Raises:
        ValueError: if the table does not match the map, or a map with a healer has more agents
            than enemies (SMAC's heal-target columns ``6 + ally id`` would not fit).
    """

    def __init__(self, spec: MapSpec, table: UnitTable, cfg: FeatureConfig, rcfg: RewardConfig, device):
        self.spec, self.table, self.cfg, self.rcfg = spec, table, cfg, rcfg
        self.device = torch.device(device)
        N, E = spec.n_agents, spec.n_enemies
        U = N + E
        if len(table.names) != U or table.names != spec.ally_units() + spec.enemy_units():
            raise ValueError(
                f"unit table {table.names} does not match map {spec.name!r} roster {spec.ally_units() + spec.enemy_units()}"
            )
        self.n_agents, self.n_enemies, self.n_units = N, E, U
        self.n_actions = spec.n_actions
        A = self.n_actions
        self.utb = spec.unit_type_bits
        self.shield_a = 1 if spec.a_race == "P" else 0
        self.shield_e = 1 if spec.b_race == "P" else 0
        self.own_health = cfg.obs_own_health or cfg.obs_all_health
        self.is_mmm = spec.map_type == "MMM"
        dev = self.device
        # Distances and thresholds in float64 like SMAC's math.hypot on float32 positions; MPS has no float64.
        self._ddt = torch.float32 if dev.type == "mps" else torch.float64

        names = table.names
        is_medivac = torch.tensor([n == "medivac" for n in names], device=dev)
        self._ally_healer = table.is_healer[:N].to(dev)
        self._has_healer = bool(self._ally_healer.any())
        if self._has_healer and N > E:
            raise ValueError(
                f"map {spec.name!r} has a healer and n_agents={N} > n_enemies={E}; SMAC's heal "
                f"actions 6 + ally id need n_agents <= n_enemies"
            )
        # SMAC: medivacs cannot heal themselves or other medivacs (target filter by unit type).
        self._healable = ~is_medivac[:N]
        self._ally_medivac = is_medivac[:N]
        self._enemy_medivac = is_medivac[N:]

        self._max_health = table.max_health.to(dev)
        ms = table.max_shield.to(dev)
        self._max_shield_safe = torch.where(ms > 0, ms, torch.ones_like(ms))
        self._has_shield = ms > 0
        cd_norm = table.smac_max_cooldown.to(dev)
        self._cd_norm = cd_norm[:N]
        # SMAC's state shows energy / 200 for the MMM medivac instead of its (absent) weapon cooldown.
        self._uses_energy = self._ally_healer
        if self.utb > 0:
            tb = table.type_bit.to(dev)
            if bool((tb < 0).any()) or bool((tb >= self.utb).any()):
                raise ValueError(f"type_bit {tb.tolist()} out of range for unit_type_bits={self.utb}")
            self._onehot = torch.nn.functional.one_hot(tb, self.utb).to(torch.float32)  # [U, utb]
        else:
            self._onehot = torch.zeros(U, 0, device=dev)

        terrain = terrain_grids(spec.terrain)
        grid = torch.as_tensor(terrain.pathing.copy(), device=dev)
        if grid.shape != (MAP_SIZE, MAP_SIZE):
            raise ValueError(
                f"pathing grid of {spec.terrain!r} has shape {tuple(grid.shape)}, expected ({MAP_SIZE}, {MAP_SIZE})"
            )
        self._pathing = grid.to(torch.bool)
        # SMAC's terrain_height: the API bytes flipped in y, / 255 (see the module docstring)
        self._height = torch.as_tensor((terrain.height[:, ::-1] / 255.0).astype("float32"), device=dev)
        self._map_size = MAP_SIZE
        # obs point offsets (SMAC get_surrounding_points): N, S, E, W at 2*ma, then the diagonals at ma.
        ma = MOVE_AMOUNT
        pts = [(0, 2 * ma), (0, -2 * ma), (2 * ma, 0), (-2 * ma, 0), (ma, ma), (-ma, -ma), (ma, -ma), (-ma, ma)]
        self._obs_pts = torch.tensor(pts + [(0, 0)], dtype=torch.int64, device=dev)  # [9, 2]
        m = MOVE_AMOUNT / 2
        self._move_dirs = torch.tensor([(0.0, m), (0.0, -m), (m, 0.0), (-m, 0.0)], dtype=self._ddt, device=dev)

        # For agent i, the other agents in increasing id (SMAC's al_ids).
        others = [[j for j in range(N) if j != i] for i in range(N)]
        self._others = torch.tensor(others, dtype=torch.int64, device=dev).reshape(N, N - 1)
        self._arangeN = torch.arange(N, device=dev)
        self._arangeA = torch.arange(A, device=dev)

        # Sizes (SMAC get_obs_*_size / get_state_size, with the real own-block length).
        set_sizes(self, self.shield_a, self.shield_e, int(cfg.obs_timestep_number), 0)

        enemy_hp = sum(spec.unit_stat(n, "health") + spec.unit_stat(n, "shield") for n in spec.enemy_units())
        self.max_reward = float(E * rcfg.reward_death_value + rcfg.reward_win + enemy_hp)
        if rcfg.reward_scale and (self.max_reward == 0 or rcfg.reward_scale_rate == 0):
            raise ValueError(
                f"reward_scale needs max_reward != 0 and reward_scale_rate != 0, got "
                f"{self.max_reward} and {rcfg.reward_scale_rate}"
            )
        # end-of-battle bonuses as float64 tensors: torch.where on two Python floats would round them
        # to float32 (reward_win=123.4 would add 123.40000152587890625); SMAC adds Python floats
        self._bonus = torch.tensor([0.0, float(rcfg.reward_win), float(rcfg.reward_defeat)], dtype=self._ddt, device=dev)

    # ------------------------------------------------------------------ helpers
    def _check_state(self, st: WorldState) -> int:
        B = st.health.shape[0]
        if st.health.shape != (B, self.n_units) or st.pos.shape != (B, self.n_units, 2):
            raise ValueError(
                f"WorldState has health {tuple(st.health.shape)} and pos {tuple(st.pos.shape)}; "
                f"expected [B, {self.n_units}] and [B, {self.n_units}, 2] for map {self.spec.name!r}"
            )
        if st.last_action.shape != (B, self.n_agents):
            raise ValueError(
                f"WorldState.last_action has shape {tuple(st.last_action.shape)}, expected [{B}, {self.n_agents}]"
            )
        return B

    def _last_action_onehot(self, st: WorldState) -> torch.Tensor:
        """``[B, N, A]`` float32 one-hot of ``st.last_action`` (zeros where -1, i.e. after reset).

        No range check here (it would cost a host sync per step): the env validates every action
        before it becomes ``last_action``.
        """
        return (st.last_action[..., None] == self._arangeA).to(torch.float32)

    def _health_frac(self, st: WorldState):
        """``health / max_health`` and ``shield / max_shield`` (0 for shieldless units), ``[B, U]`` float32."""
        h = st.health / self._max_health
        s = torch.where(self._has_shield, st.shield / self._max_shield_safe, torch.zeros_like(st.shield))
        return h, s

    # ------------------------------------------------------------------ avail
    def avail_actions(self, st: WorldState) -> torch.Tensor:
        """SMAC's ``get_avail_agent_actions`` for every agent.

        Returns:
            ``[B, N, n_actions]`` bool. Dead agent: only no-op (0). Alive agent: stop (1); move
            N/S/E/W (2-5) iff the cell one unit ahead, at ``(int(x), int(y + 1))`` etc. with
            Python's truncation, is inside the 32x32 map and pathable; attack ``6 + j`` iff enemy
            ``j`` is alive and its centre is within 6. A medivac's ``6 + j`` is "heal ally j"
            instead (ally ``j`` alive, not a medivac, within 6).
        """
        B = self._check_state(st)
        _, _, dist = geometry(st.pos, self.n_agents, self._ddt)
        return self._avail_from(st, B, dist)

    def _avail_from(self, st: WorldState, B: int, dist: torch.Tensor) -> torch.Tensor:
        N, E = self.n_agents, self.n_enemies
        can_move = move_probes(st.pos, N, self._move_dirs, self._pathing, self._ddt)  # [B, N, 4]
        in_range = dist <= SHOOT_RANGE
        target = in_range[:, :, N:] & st.alive[:, None, N:]  # [B, N, E]
        if self._has_healer:
            heal = in_range[:, :, :N] & st.alive[:, None, :N] & self._healable  # [B, N, N]
            heal = torch.nn.functional.pad(heal, (0, E - N))
            target = torch.where(self._ally_healer[None, :, None], heal, target)
        return avail_from_parts(st.alive[:, :N], can_move, None, target)

    # ------------------------------------------------------------------ obs
    def obs(self, st: WorldState, avail: torch.Tensor) -> torch.Tensor:
        """SMAC's ``get_obs_agent`` for every agent.

        Args:
            st: the world state.
            avail: ``[B, N, n_actions]`` bool, :meth:`avail_actions` of the same state (the move
                features and the enemy "attackable" column are read from it, as in SMAC).

        Returns:
            ``[B, N, obs_size]`` float32: ``[move | enemy (E x enemy_feats) | ally ((N-1) x
            ally_feats) | own | timestep]``, layout in :meth:`env_info` ``["obs_layout"]``.
            Distances and offsets are divided by the sight range 9, health by the unit's maximum,
            shield by SMAC's max shield. Units beyond sight (centre distance >= 9) or dead are all
            zeros; a dead agent's whole vector is zeros except the appended timestep.
        """
        B = self._check_state(st)
        N, E, A = self.n_agents, self.n_enemies, self.n_actions
        if avail.shape != (B, N, A) or avail.dtype != torch.bool:
            raise ValueError(f"avail must be a bool tensor of shape [{B}, {N}, {A}], got {avail.dtype} {tuple(avail.shape)}")
        cfg = self.cfg
        dx64, dy64, dist64 = geometry(st.pos, N, self._ddt)
        visible = (dist64 < SIGHT_RANGE) & st.alive[:, None, :]  # [B, N, U]
        dist = (dist64 / SIGHT_RANGE).to(torch.float32)
        dx = (dx64 / SIGHT_RANGE).to(torch.float32)
        dy = (dy64 / SIGHT_RANGE).to(torch.float32)
        h, s = self._health_frac(st)
        onehot = self._onehot.expand(B, N, -1, -1)  # [B, N, U, utb]
        move = move_block(self, st, avail)
        en = slice(N, N + E)
        attackable = avail[:, :, N_ACTIONS_NO_ATTACK:].to(torch.float32)
        cols = unit_columns(attackable, dist, dx, dy, h, s, en, E, self.shield_e, cfg)
        enemy = torch.cat(cols + [onehot[:, :, en]], dim=-1) * visible[:, :, en, None]  # [B, N, E, enemy_feats]
        ally = ally_block(self, st, dist, dx, dy, h, s, onehot[:, :, :N], visible[:, :, :N], self.shield_a)
        own = []
        if self.own_health:
            own.append(h[:, :N, None])
            if self.shield_a:
                own.append(s[:, :N, None])
        own.append(self._onehot[None, :N].expand(B, N, -1))
        if cfg.obs_timestep_number:
            own.append(torch.zeros(B, N, 1, device=self.device))  # SMAC's reserved slot, never written
        return finish_obs(self, st, move, enemy, ally, torch.cat(own, dim=-1))

    # ------------------------------------------------------------------ state
    def state(self, st: WorldState) -> torch.Tensor:
        """SMAC's ``get_state``.

        Returns:
            ``[B, state_size]`` float32: ``[ally (N x ally_state_feats) | enemy (E x
            enemy_state_feats) | last action one-hot (N x n_actions) | timestep]``. Ally: health,
            weapon cooldown / SMAC's normaliser (energy / 200 for a medivac), (x - 16) / 32,
            (y - 16) / 32, shield (Protoss side only), type one-hot; enemy the same without the
            cooldown. Dead units are zeros. With ``obs_instead_of_state`` it is the N observations
            concatenated.
        """
        B = self._check_state(st)
        N, E = self.n_agents, self.n_enemies
        if self.cfg.obs_instead_of_state:
            return self.obs(st, self.avail_actions(st)).reshape(B, -1)
        h, s = self._health_frac(st)
        c = self._map_size / 2
        rel = (st.pos - c) / self._map_size  # playable width = map size on SMAC maps
        cd = torch.where(self._uses_energy, st.energy[:, :N], st.cooldown[:, :N]) / self._cd_norm
        onehot_a, onehot_e = self._onehot[None, :N].expand(B, N, -1), self._onehot[None, N:].expand(B, E, -1)
        return state_vector(self, st, h, s, cd, rel, onehot_a, onehot_e, [], self.shield_a, self.shield_e)

    # ------------------------------------------------------------------ end of battle
    def game_result(self, st: WorldState) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """SMAC's ``update_units`` end code, per env.

        Returns:
            ``(won, lost, draw)``, each ``[B]`` bool, mutually exclusive. Lost: no ally alive while
            an enemy is, or (MMM maps) no non-medivac ally alive, which also covers both sides
            dying together. Won (if not lost): an ally alive and no enemy, or (MMM) exactly one
            enemy alive and it is a medivac (SMAC's ``only_medivac_left(ally=False)``). Draw: both
            sides empty (non-MMM maps). The time limit is the env's business.
        """
        self._check_state(st)
        N = self.n_agents
        if not self.is_mmm:
            return battle_result(st.alive, N)
        alive_a, alive_e = st.alive[:, :N], st.alive[:, N:]
        lost_extra = ~(alive_a & ~self._ally_medivac).any(1)
        won_extra = (alive_e.sum(1) == 1) & (alive_e & self._enemy_medivac).any(1)
        return battle_result(st.alive, N, lost_extra, won_extra)

    # ------------------------------------------------------------------ reward
    def reward(self, st: WorldState, won: torch.Tensor, lost: torch.Tensor) -> torch.Tensor:
        """SMAC's per-step reward: ``reward_battle`` plus the end-of-battle bonus, then scaling.

        Uses ``st.prev_health/prev_shield/prev_alive`` (end of the previous env step) against the
        current values; a unit with ``prev_alive`` False is already counted dead and ignored.

        Args:
            st: the world state after the step.
            won, lost: ``[B]`` bool, from :meth:`game_result`.

        Returns:
            ``[B]`` float32. Dense: ``delta_enemy`` = HP+shield the enemies lost (a death counts
            the previous HP+shield), ``delta_deaths`` = ``reward_death_value`` per enemy death;
            only-positive mode gives ``abs(delta_enemy + delta_deaths)`` (``max(., 0)`` with
            ``reward_clip_regen``), signed mode subtracts ``reward_negative_scale`` x (ally HP+shield
            lost + ``reward_death_value`` per ally death). Win adds ``reward_win``, loss
            ``reward_defeat`` (sparse mode: 0 per step, +1 win, -1 loss). With ``reward_scale``
            the result is divided by ``max_reward / reward_scale_rate``.
        """
        B = self._check_state(st)
        if won.shape != (B,) or lost.shape != (B,):
            raise ValueError(f"won/lost must have shape [{B}], got {tuple(won.shape)} and {tuple(lost.shape)}")
        r = self.rcfg
        bonus = (self._bonus[1], self._bonus[2], self._bonus[0])
        return battle_reward(self, st, won, lost, r.reward_clip_regen, bonus, self.max_reward)

    # ------------------------------------------------------------------ info
    def env_info(self) -> dict:
        """SMAC's ``get_env_info`` plus layout descriptions.

        Keys: ``state_shape``, ``obs_shape`` (true vector lengths), ``n_actions``, ``n_agents``,
        ``n_enemies``, ``episode_limit``, ``agent_features`` / ``enemy_features`` (SMAC's state
        attribute names), ``map_name``, ``unit_type_bits``, ``agent_unit_types``,
        ``ally_type_order``, ``enemy_type_order``, ``max_reward``, and

        * ``obs_layout``: ``move_feats``, ``n_enemies``, ``enemy_feats`` (per enemy),
          ``n_allies`` (N - 1), ``ally_feats`` (per ally), ``own_feats``, ``timestep_feats``
          (0|1) and the per-block ``*_feature_names``. ``obs_size = move_feats + n_enemies *
          enemy_feats + n_allies * ally_feats + own_feats + timestep_feats``.
        * ``state_layout``: ``n_agents``, ``ally_state_feats`` (per agent), ``n_enemies``,
          ``enemy_state_feats`` (per enemy), ``last_action_feats`` (the whole block, N x
          n_actions or 0), ``timestep_feats`` (0|1), the two name lists, and
          ``obs_instead_of_state``; when that is True the state is the N observations and the
          per-unit sizes are 0.
        """
        names = feature_names(self, self.shield_a, self.shield_e, [], [])
        names["own"] += ["timestep_pad"] if self.cfg.obs_timestep_number else []
        info = common_env_info(self, names)
        info.update(
            agent_unit_types=list(self.spec.ally_units()),
            ally_type_order=list(self.spec.ally_type_order),
            enemy_type_order=list(self.spec.enemy_type_order),
            max_reward=self.max_reward,
        )
        return info


def set_sizes(f, shield_a: int, shield_e: int, own_extra: int, ally_state_extra: int) -> None:
    """Set the block and vector sizes of feature builder ``f`` (SMAC's ``get_obs_*_size``,
    ``get_state_size``): ``move_feats``, ``enemy_feats``, ``ally_feats``, ``own_feats``, ``timestep_feats``,
    ``obs_size``, ``ally_state_feats``, ``enemy_state_feats``, ``state_size``. ``own_extra``: own-block
    features beyond health, shield and the one-hot (SMAC v1's reserved timestep slot; SMACv2's own
    position and look direction); ``ally_state_extra``: the ally state's look direction (SMACv2)."""
    cfg, N, E, A = f.cfg, f.n_agents, f.n_enemies, f.n_actions
    f.move_feats = N_ACTIONS_MOVE + N_OBS_PATHING * cfg.obs_pathing_grid + N_OBS_HEIGHT * cfg.obs_terrain_height
    f.enemy_feats = 4 + f.utb + ((1 + shield_e) if cfg.obs_all_health else 0)
    f.ally_feats = 4 + f.utb + ((1 + shield_a) if cfg.obs_all_health else 0) + (A if cfg.obs_last_action else 0)
    f.own_feats = f.utb + ((1 + shield_a) if f.own_health else 0) + own_extra
    f.timestep_feats = int(cfg.obs_timestep_number)
    f.obs_size = f.move_feats + E * f.enemy_feats + (N - 1) * f.ally_feats + f.own_feats + f.timestep_feats
    f.ally_state_feats = 4 + shield_a + ally_state_extra + f.utb
    f.enemy_state_feats = 3 + shield_e + f.utb
    if cfg.obs_instead_of_state:
        f.state_size = N * f.obs_size
    else:
        f.state_size = (
            N * f.ally_state_feats
            + E * f.enemy_state_feats
            + (N * A if cfg.state_last_action else 0)
            + int(cfg.state_timestep_number)
        )


def feature_names(f, shield_a: bool, shield_e: bool, own_extra: list, ally_state_extra: list) -> dict[str, list[str]]:
    """The feature names of each obs and state block of feature builder ``f`` (``SMACFeatures`` or
    ``SMACv2Features``), in SMAC's order: ``{"enemy", "ally", "own", "ally_state", "enemy_state"}``.
    ``own_extra`` follows own health and shield, ``ally_state_extra`` the ally state's shield (SMACv2's
    own position and look direction); each block ends with the type one-hot (and the ally rows' last
    actions with ``obs_last_action``)."""
    cfg = f.cfg
    types = [f"type_{k}" for k in range(f.utb)]

    def health(shield: bool) -> list[str]:
        return ["health"] + (["shield"] if shield else [])

    enemy = ["attackable", "distance", "rel_x", "rel_y"] + (health(shield_e) if cfg.obs_all_health else []) + types
    ally = ["visible", "distance", "rel_x", "rel_y"] + (health(shield_a) if cfg.obs_all_health else []) + types
    ally += [f"last_action_{k}" for k in range(f.n_actions)] if cfg.obs_last_action else []
    own = (health(shield_a) if f.own_health else []) + own_extra + types
    ally_state = ["health", "energy/cooldown", "rel_x", "rel_y"] + (["shield"] if shield_a else []) + ally_state_extra
    enemy_state = ["health", "rel_x", "rel_y"] + (["shield"] if shield_e else []) + types
    return dict(enemy=enemy, ally=ally, own=own, ally_state=ally_state + types, enemy_state=enemy_state)


def common_env_info(f, names: dict[str, list[str]]) -> dict:
    """The ``get_env_info()`` keys ``SMACFeatures`` and ``SMACv2Features`` share, for feature builder ``f``
    and its ``feature_names``: SMAC's sizes, counts and names plus the layouts (``layouts``)."""
    return {
        "state_shape": f.state_size,
        "obs_shape": f.obs_size,
        "n_actions": f.n_actions,
        "n_agents": f.n_agents,
        "n_enemies": f.n_enemies,
        "episode_limit": f.spec.episode_limit,
        "agent_features": names["ally_state"],
        "enemy_features": names["enemy_state"],
        "map_name": f.spec.name,
        "unit_type_bits": f.utb,
        **layouts(f, names["enemy"], names["ally"], names["own"], names["ally_state"], names["enemy_state"]),
    }


def layouts(f, enemy_names, ally_names, own_names, ally_state, enemy_state) -> dict:
    """The ``obs_layout`` and ``state_layout`` entries of ``get_env_info()`` for a feature builder ``f``
    (``SMACFeatures`` or ``SMACv2Features``: sizes per block and the feature names of each block, in
    SMAC's order; with ``obs_instead_of_state`` the state's per-unit blocks are empty)."""
    cfg, ois = f.cfg, f.cfg.obs_instead_of_state
    return {
        "obs_layout": {
            "move_feats": f.move_feats,
            "n_enemies": f.n_enemies,
            "enemy_feats": f.enemy_feats,
            "n_allies": f.n_agents - 1,
            "ally_feats": f.ally_feats,
            "own_feats": f.own_feats,
            "timestep_feats": f.timestep_feats,
            "enemy_feature_names": enemy_names,
            "ally_feature_names": ally_names,
            "own_feature_names": own_names,
        },
        "state_layout": {
            "n_agents": f.n_agents,
            "ally_state_feats": 0 if ois else f.ally_state_feats,
            "n_enemies": f.n_enemies,
            "enemy_state_feats": 0 if ois else f.enemy_state_feats,
            "last_action_feats": 0 if ois or not cfg.state_last_action else f.n_agents * f.n_actions,
            "timestep_feats": 0 if ois else int(cfg.state_timestep_number),
            "ally_state_feature_names": [] if ois else ally_state,
            "enemy_state_feature_names": [] if ois else enemy_state,
            "obs_instead_of_state": ois,
        },
    }
