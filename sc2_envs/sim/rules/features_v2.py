"""SMACv2 observations, state, available actions, reward and game result, batched over envs.

A vectorised re-statement of oxwhirl/smacv2 (commit 577ab5a) ``smacv2/env/starcraft2/starcraft2.py``
(``get_obs_agent``, ``get_state_dict``, ``get_avail_agent_actions``,
``get_true_avail_agent_actions``, ``is_position_in_cone``, ``reward_battle``, ``update_units``,
``only_medivac_left``, ``get_obs_*_size``, ``get_state_size``) for the ``10gen_*`` maps with the
example-config options (``sc2_envs.smacv2``). What differs from SMAC v1 (``features.py``):

* per-unit sight and shoot ranges (``use_unit_ranges``): agent ``i`` sees units at centre distance
  ``< sight_i`` and may attack (heal) at ``<= max(shoot_i, min_attack_range)``; the enemy and ally
  distances and offsets are divided by the agent's own sight range;
* the unit-type one-hot (3 bits per race, SMACv2 ``get_unit_type_id`` order) is in every enemy,
  ally and own block and in the state, and changes per env and per episode;
* ``obs_own_pos``: own ``x / 32`` and ``y / 32`` after own health and shield;
* ``conic_fov`` (option): 12 look-direction actions ``6..17`` (no game command: the unit keeps its
  order), the look direction in the own block and the ally state, and visibility / attack range
  inside a cone of 30 degrees (SMACv2's arctan test, quirks included);
* enemy observation tags (``prob_obs_enemy = 1``): an enemy counts as observed once some live
  agent has had it in sight, until that agent or the enemy dies. For an agent, an enemy that is not
  observed zeroes the enemy features of itself *and every lower enemy id* (SMACv2 resets its whole
  ``enemy_feats`` array there). A dead enemy stays where it died and can be tagged again by sight.
  SMACv2 processes agents in a random order each call; we use agent id order (one of its orders:
  the first agent, by id, who sees an untagged enemy tags it; lower ids observed it untagged);
* the reward's only-positive mode is ``max(., 0)``; ``max_reward`` is fixed from the enemy team of
  the env's first episode after seeding (SMACv2 adds the enemies' max health + shields on its
  first episode only);
* terran: an ally medivac's target columns are "heal ally j"; win when no non-medivac enemy is
  alive, loss when no non-medivac ally is alive (``only_medivac_left`` fixed for enemies);
* there is no reserved own-block timestep slot (SMACv2 fixed SMAC's size bug).
"""

from __future__ import annotations

import math

import torch

from sc2_envs.sim.rules.features import (
    MOVE_AMOUNT,
    N_ACTIONS_MOVE,
    FeatureConfig,
    RewardConfig,
    ally_block,
    avail_from_parts,
    battle_result,
    battle_reward,
    common_env_info,
    feature_names,
    finish_obs,
    geometry,
    move_block,
    move_probes,
    set_sizes,
    state_vector,
    unit_columns,
)
from sc2_envs.sim.state import UnitTable, WorldState
from sc2_envs.smacv2 import MAP_X, MAP_Y, MAX_COOLDOWN, N_FOV_ACTIONS, SIGHT_RANGE, ScenarioSpec, shoot_range

CONE_EPS = 1e-7
"""SMACv2 ``EPS`` of ``is_position_in_cone``."""


class SMACv2Features:
    """SMACv2 feature functions for one scenario, batched over envs with per-env rosters.

    Args:
        spec: the scenario.
        table: its per-env unit table (``UnitTable.build_scenario``).
        cfg, rcfg: SMAC's observation / reward options (``FeatureConfig`` / ``RewardConfig``).
        device: torch device.
        conic_fov: SMACv2 ``conic_fov`` (default False, as the example configs).
        use_unit_ranges: SMACv2 ``use_unit_ranges`` (True); False gives SMAC's 9 / 6 for every unit.
        obs_own_pos: SMACv2 ``obs_own_pos`` (True).

    Attributes:
        n_agents (N), n_enemies (E), n_actions_no_attack (6, or 18 with ``conic_fov``),
        n_actions (``n_actions_no_attack + E``; ``+ N`` for terran when ``N > E``), obs_size,
        state_size, utb (3).
    """

    def __init__(
        self,
        spec: ScenarioSpec,
        table: UnitTable,
        cfg: FeatureConfig,
        rcfg: RewardConfig,
        device,
        conic_fov: bool = False,
        use_unit_ranges: bool = True,
        obs_own_pos: bool = True,
    ):
        self.spec, self.table, self.cfg, self.rcfg = spec, table, cfg, rcfg
        self.device = dev = torch.device(device)
        self.conic_fov, self.use_unit_ranges, self.obs_own_pos = conic_fov, use_unit_ranges, obs_own_pos
        N, E = spec.n_units, spec.n_enemies
        self.n_agents, self.n_enemies, self.n_units = N, E, N + E
        self.is_terran = spec.race == "terran"
        self.n_fov = N_FOV_ACTIONS if conic_fov else 0
        self.n_actions_no_attack = 2 + N_ACTIONS_MOVE + self.n_fov
        self.n_targets = N if (self.is_terran and N > E) else E
        self.n_actions = self.n_actions_no_attack + self.n_targets
        kinds = spec.kinds
        self.utb = len(kinds)
        self.shield = 1 if spec.race == "protoss" else 0
        self._ddt = torch.float32 if dev.type == "mps" else torch.float64
        f = dict(dtype=torch.float32, device=dev)
        self._sight_k = torch.tensor([SIGHT_RANGE[k] if use_unit_ranges else 9.0 for k in kinds], **f)
        self._shoot_k = torch.tensor([shoot_range(k, spec.min_attack_range) if use_unit_ranges else 6.0 for k in kinds], **f)
        self._max_cd_k = torch.tensor([MAX_COOLDOWN[k] for k in kinds], **f)
        self._medivac_k = torch.tensor([k == "medivac" for k in kinds], device=dev)
        self._eye = torch.eye(self.utb, **f)
        cone = 2 * math.pi / N_FOV_ACTIONS
        self._half_cone = cone / 2
        self._tan_half_cone = math.tan(self._half_cone)  # float64 (15 degrees: 0.2679...)
        self._fov_dirs = torch.tensor(
            [(math.cos(cone * i), math.sin(cone * i)) for i in range(N_FOV_ACTIONS)], dtype=torch.float32, device=dev
        )
        self.own_health = cfg.obs_own_health or cfg.obs_all_health
        # sizes (SMACv2 get_obs_*_size, get_state_size)
        set_sizes(self, self.shield, self.shield, 2 * conic_fov + 2 * obs_own_pos, 2 * conic_fov)
        self._arangeA = torch.arange(self.n_actions, device=dev)
        self._arangeN = torch.arange(N, device=dev)
        self._arangeE = torch.arange(E, device=dev)
        others = [[j for j in range(N) if j != i] for i in range(N)]
        self._others = torch.tensor(others, dtype=torch.int64, device=dev).reshape(N, N - 1)
        m = MOVE_AMOUNT / 2
        self._move_dirs = torch.tensor([(0.0, m), (0.0, -m), (m, 0.0), (-m, 0.0)], dtype=self._ddt, device=dev)
        ma = MOVE_AMOUNT
        pts = [(0, 2 * ma), (0, -2 * ma), (2 * ma, 0), (-2 * ma, 0), (ma, ma), (-ma, -ma), (ma, -ma), (-ma, ma)]
        self._obs_pts = torch.tensor(pts + [(0, 0)], dtype=torch.int64, device=dev)
        # the 32x32_flat map: every cell pathable; its height bytes are uniform (one level)
        self._pathing = torch.ones(MAP_X, MAP_Y, dtype=torch.bool, device=dev)
        self._height = torch.full((MAP_X, MAP_Y), 191.0 / 255.0, **f)

    # ------------------------------------------------------------------ helpers
    def max_reward_of(self, kind: torch.Tensor) -> torch.Tensor:
        """SMACv2's reward normaliser for rosters ``kind [B, U]``: ``E * death + win + sum(max HP + shield)``."""
        kt = self.table.kinds
        T = len(kt.names) // 2
        e = kind[:, self.n_agents :] + T
        hp = (kt.max_health[e] + kt.max_shield[e]).to(torch.float64).sum(1)
        r = self.rcfg
        return (self.n_enemies * r.reward_death_value + r.reward_win + hp).to(torch.float32)

    def _kind(self, st: WorldState) -> torch.Tensor:
        return st.unit_kind

    def _cone_angle(self, st: WorldState, dx, dy) -> torch.Tensor:
        """The angle half of SMACv2 ``is_position_in_cone`` for every (agent, unit): ``[B, N, U]`` bool.

        SMACv2 tests ``|atan(dy / xd) - atan(fy / fx)| < half_cone``, where ``xd`` is ``dx`` kept
        ``>= EPS`` away from 0 on its own side and ``fx`` the look direction's x put on ``dx``'s side
        (its quirks, kept). For ``a = dy / xd`` and ``b = fy / fx`` that is exactly
        ``|a - b| < tan(half_cone) * (1 + a * b)``: with ``alpha, beta`` in ``(-pi/2, pi/2)``,
        ``cos(alpha - beta)`` has the sign of ``1 + a b`` and ``tan(alpha - beta) = (a - b) / (1 + a b)``.
        We evaluate this form: ``torch.atan`` (SLEEF) and the C library's ``atan`` differ in the last
        bit for about 0.2 % of arguments, while these IEEE operations round alike on every path
        (``sim.numba.features`` restates them); the two forms can disagree only within rounding
        of the cone's edge.
        """
        fov = st.fov_dir.to(self._ddt)  # [B, N, 2]
        pos = dx > 0
        xd = torch.where(pos, dx.clamp(min=CONE_EPS), dx.clamp(max=-CONE_EPS))
        a = dy / xd
        fx = fov[..., 0:1].expand_as(dx)
        fx = torch.where(pos, fx.clamp(min=CONE_EPS), fx.clamp(max=-CONE_EPS))
        b = fov[..., 1:2] / fx
        return (a - b).abs() < self._tan_half_cone * (a * b + 1.0)

    def _in_cone(self, st: WorldState, dx, dy, dist, rng_: torch.Tensor) -> torch.Tensor:
        """SMACv2 ``is_position_in_cone`` of every (agent, unit): ``[B, N, U]`` bool (``rng_ [B, N]``)."""
        return ~(dist > rng_.unsqueeze(-1)) & self._cone_angle(st, dx, dy)

    def _ranges(self, st: WorldState):
        k = st.unit_kind[:, : self.n_agents]
        return self._sight_k[k].to(self._ddt), self._shoot_k[k].to(self._ddt)

    def _health_frac(self, st: WorldState):
        """``health / max`` and ``shield / max`` from ``st.unit_kind`` (works on any sub-batch of envs)."""
        kt = self.table.kinds
        T = len(kt.names) // 2
        row = torch.where(self.table.is_ally, st.unit_kind, st.unit_kind + T)
        h = st.health / kt.max_health[row]
        ms = kt.max_shield[row]
        s = torch.where(ms > 0, st.shield / torch.where(ms > 0, ms, torch.ones_like(ms)), torch.zeros_like(st.shield))
        return h, s

    def _onehot(self, st: WorldState) -> torch.Tensor:
        return self._eye[st.unit_kind]  # [B, U, utb]

    # ------------------------------------------------------------------ avail
    def avail_actions(self, st: WorldState) -> torch.Tensor:
        """SMACv2 ``get_avail_agent_actions`` (``action_mask=True``): ``[B, N, n_actions]`` bool.

        Dead agent: no-op only. Alive: stop; moves where the cell ``move_amount / 2`` ahead is on
        the map; with ``conic_fov`` the 12 look actions; target ``n_actions_no_attack + j`` when
        enemy ``j`` is alive within the agent's shoot range (centre distance ``<=``; in the cone
        with ``conic_fov``). A medivac's targets are the live non-medivac allies instead.
        """
        dx, dy, dist = geometry(st.pos, self.n_agents, self._ddt)
        return self._avail_from(st, dx, dy, dist)

    def _avail_from(self, st, dx, dy, dist):
        B = st.pos.shape[0]
        N, E = self.n_agents, self.n_enemies
        can_move = move_probes(st.pos, N, self._move_dirs, self._pathing, self._ddt)
        _, shoot = self._ranges(st)
        if self.conic_fov:
            in_range = self._in_cone(st, dx, dy, dist, shoot)
        else:
            in_range = dist <= shoot.unsqueeze(-1)
        target = in_range[:, :, N:] & st.alive[:, None, N:]
        if self.n_targets > E:
            target = torch.nn.functional.pad(target, (0, self.n_targets - E))
        if self.is_terran:
            medivac = self._medivac_k[st.unit_kind]  # [B, U]
            heal = in_range[:, :, :N] & st.alive[:, None, :N] & ~medivac[:, None, :N]
            heal = torch.nn.functional.pad(heal, (0, self.n_targets - N))
            target = torch.where(medivac[:, :N, None], heal, target)
        look = torch.ones(B, N, self.n_fov, dtype=torch.bool, device=self.device)
        return avail_from_parts(st.alive[:, :N], can_move, look, target)

    # ------------------------------------------------------------------ obs
    def update_tags(self, st: WorldState, visible_any: torch.Tensor, visit_rank: torch.Tensor | None = None) -> torch.Tensor:
        """Update ``st.enemy_tag`` (SMACv2 ``enemy_tags``) and return ``observed [B, N, E]`` bool.

        Args:
            visible_any: ``[B, N, E]`` bool, enemy ``j`` in agent ``i``'s sight (alive or not),
                ``False`` for dead agents.
            visit_rank: ``[B, N]`` int64, the position of each agent in the order SMACv2's
                ``get_obs`` visits them (a permutation of ``0..N-1``); None: agent id order.

        Tags of dead taggers and dead enemies are cleared first (SMACv2 ``step``); then each
        untagged enemy is tagged by the first agent in visiting order that sees it. Agent ``i``
        observes enemy ``j`` if it was tagged before, or is tagged now by an agent visited no later.
        """
        N = self.n_agents
        tag = st.enemy_tag
        tagger_alive = torch.gather(st.alive[:, :N], 1, tag.clamp(min=0))
        tag = torch.where((tag >= 0) & tagger_alive & st.alive[:, N:], tag, torch.full_like(tag, -1))
        rank = self._arangeN.expand(tag.shape[0], N) if visit_rank is None else visit_rank.to(tag.device)
        r = rank.unsqueeze(-1)  # [B, N, 1]
        score = torch.where(visible_any, r, torch.full_like(r, N))  # [B, N, E]
        first_rank, first_agent = score.min(1)  # [B, E]
        was = tag >= 0
        observed = was[:, None, :] | (first_rank[:, None, :] <= r)
        st.enemy_tag = torch.where(was, tag, torch.where(first_rank < N, first_agent, torch.full_like(first_agent, -1)))
        return observed

    def obs(self, st: WorldState, avail: torch.Tensor, visit_rank: torch.Tensor | None = None) -> torch.Tensor:
        """SMACv2 ``get_obs`` for every agent (updates ``st.enemy_tag``; ``visit_rank`` as in
        :meth:`update_tags`, default agent id order).

        Returns:
            ``[B, N, obs_size]`` float32: ``[move | enemy (E x enemy_feats) | ally ((N-1) x
            ally_feats) | own | timestep]``. Enemy: attackable, distance, rel x, rel y (all /
            the agent's sight range), health, shield (protoss), type one-hot. Ally: visible,
            distance, rel x, rel y, health, shield, type one-hot, last action (option). Own: health,
            shield, x / 32, y / 32, look direction (``conic_fov``), type one-hot.
        """
        B = st.pos.shape[0]
        N, E, cfg = self.n_agents, self.n_enemies, self.cfg
        dx64, dy64, dist64 = geometry(st.pos, N, self._ddt)
        sight, _ = self._ranges(st)
        if self.conic_fov:
            in_sight = self._in_cone(st, dx64, dy64, dist64, sight)
        else:
            in_sight = dist64 < sight.unsqueeze(-1)
        alive_a = st.alive[:, :N]
        in_sight = in_sight & alive_a[:, :, None]
        observed = self.update_tags(st, in_sight[:, :, N:], visit_rank)
        # SMACv2 zeroes the whole enemy block at each enemy the agent does not observe
        last_unobs = torch.where(~observed, self._arangeE, torch.full_like(self._arangeE, -1)).amax(-1, keepdim=True)
        keep_e = self._arangeE > last_unobs  # [B, N, E]
        visible = in_sight & st.alive[:, None, :]
        sr = sight.unsqueeze(-1)
        dist = (dist64 / sr).to(torch.float32)
        dx = (dx64 / sr).to(torch.float32)
        dy = (dy64 / sr).to(torch.float32)
        h, s = self._health_frac(st)
        onehot = self._onehot(st)  # [B, U, utb]

        move = move_block(self, st, avail)
        en = slice(N, N + E)
        # get_true_avail_agent_actions column n_actions_no_attack + j (a medivac's: "heal ally j")
        true_avail = avail[:, :, self.n_actions_no_attack : self.n_actions_no_attack + E].to(torch.float32)
        cols = unit_columns(true_avail, dist, dx, dy, h, s, en, E, self.shield, cfg)
        enemy = torch.cat(cols + [onehot[:, None, en].expand(B, N, E, self.utb)], dim=-1)
        enemy = enemy * (visible[:, :, en] & observed & keep_e)[..., None]
        onehot_al = onehot[:, None, :N].expand(B, N, N, self.utb)
        ally = ally_block(self, st, dist, dx, dy, h, s, onehot_al, visible[:, :, :N], self.shield)
        own = []
        if self.own_health:
            own.append(h[:, :N, None])
            if self.shield:
                own.append(s[:, :N, None])
        if self.obs_own_pos:
            own.append(st.pos[:, :N, 0:1] / MAP_X)
            own.append(st.pos[:, :N, 1:2] / MAP_Y)
        if self.conic_fov:
            own.append(st.fov_dir)
        own.append(onehot[:, :N])
        return finish_obs(self, st, move, enemy, ally, torch.cat(own, dim=-1))

    # ------------------------------------------------------------------ state
    def state(self, st: WorldState, avail: torch.Tensor | None = None) -> torch.Tensor:
        """SMACv2 ``get_state``: ``[B, state_size]`` float32.

        Ally rows: health, weapon cooldown / ``unit_max_cooldown`` (a medivac's energy / 200),
        (x - 16) / 32, (y - 16) / 32, shield (protoss), look direction (``conic_fov``), type
        one-hot; enemy rows: health, rel x, rel y, shield, type one-hot; dead units are zeros;
        then the last-action one-hots and the timestep (options). With ``obs_instead_of_state``
        it is the N observations (which, as in SMACv2, also advances the enemy tags).
        """
        B = st.pos.shape[0]
        N = self.n_agents
        if self.cfg.obs_instead_of_state:
            return self.obs(st, self.avail_actions(st) if avail is None else avail).reshape(B, -1)
        h, s = self._health_frac(st)
        onehot = self._onehot(st)
        rel = (st.pos - torch.tensor([MAP_X / 2, MAP_Y / 2], device=self.device)) / torch.tensor(
            [float(MAP_X), float(MAP_Y)], device=self.device
        )
        k = st.unit_kind[:, :N]
        cd = torch.where(self._medivac_k[k], st.energy[:, :N], st.cooldown[:, :N]) / self._max_cd_k[k]
        extra = [st.fov_dir] if self.conic_fov else []
        return state_vector(self, st, h, s, cd, rel, onehot[:, :N], onehot[:, N:], extra, self.shield, self.shield)

    # ------------------------------------------------------------------ result and reward
    def game_result(self, st: WorldState):
        """SMACv2 ``update_units`` end code: ``(won, lost, draw)``, each ``[B]`` bool.

        Lost: no ally alive while an enemy is, or (terran) no non-medivac ally alive. Won (if not
        lost): an ally alive and no enemy, or (terran) no non-medivac enemy alive. Draw: both
        sides empty (not terran, where that is a loss).
        """
        N = self.n_agents
        if not self.is_terran:
            return battle_result(st.alive, N)
        med = self._medivac_k[st.unit_kind]
        alive_a, alive_e = st.alive[:, :N], st.alive[:, N:]
        return battle_result(st.alive, N, ~(alive_a & ~med[:, :N]).any(1), ~(alive_e & ~med[:, N:]).any(1))

    def reward(self, st: WorldState, won: torch.Tensor, lost: torch.Tensor) -> torch.Tensor:
        """SMACv2 ``reward_battle`` plus the end bonus, scaled by the env's ``st.max_reward``: ``[B]`` float32.

        Only-positive mode: ``max(delta_enemy + delta_deaths, 0)``; signed mode as SMAC v1.
        """
        r = self.rcfg
        # Python floats, which torch.where rounds to float32 (SMACFeatures passes float64 tensors and
        # numba.features adds float64: for a bonus float32 cannot hold exactly, the paths differ)
        bonus = (float(r.reward_win), float(r.reward_defeat), 0.0)
        return battle_reward(self, st, won, lost, True, bonus, st.max_reward.to(self._ddt))

    # ------------------------------------------------------------------ info
    def env_info(self) -> dict:
        """SMACv2 ``get_env_info`` keys plus the layouts (same keys as ``SMACFeatures.env_info``)."""
        own = (["own_x", "own_y"] if self.obs_own_pos else []) + (["fov_x", "fov_y"] if self.conic_fov else [])
        fov = ["fov_x", "fov_y"] if self.conic_fov else []
        info = common_env_info(self, feature_names(self, self.shield, self.shield, own, fov))
        info["n_actions_no_attack"] = self.n_actions_no_attack
        return info
