"""SMACv2 scenarios: procedurally generated teams and start positions on the 32x32 flat map.

Source of every fact here: oxwhirl/smacv2 (commit 577ab5a)

* ``smacv2/examples/configs/sc2_gen_{protoss,terran,zerg}.yaml``: the scenario defaults
  (``weighted_teams`` with per-race unit types, weights and ``exception_unit_types``,
  ``surrounded_and_reflect`` start positions with ``p=0.5`` on a 32x32 map, ``use_unit_ranges``,
  ``min_attack_range=2``, ``obs_own_pos``, ``conic_fov`` off with ``num_fov_actions=12``, SMAC's
  reward options);
* ``smacv2/env/starcraft2/maps/smac_maps.py``: ``10gen_{race}`` maps, all on the map file
  ``32x32_flat``, episode limit 200, ``unit_type_bits=3``, same-race mirror;
* ``smacv2/env/starcraft2/distributions.py``: ``WeightedTeamsDistribution`` (the enemy team is a
  copy of the ally team, extra enemies are a separately sampled team, a team made only of
  exception types is redrawn), ``ReflectPositionDistribution``, ``SurroundedPositionDistribution``
  and ``SurroundedAndReflectPositionDistribution`` (a uniform draw ``u > p`` gives *surrounded*);
* ``smacv2/env/starcraft2/starcraft2.py``: ``unit_shoot_range`` / ``unit_sight_range`` (with
  ``use_unit_ranges``), ``get_unit_type_id`` (type-bit order per race) and ``init_units`` (agents
  are sorted by ally unit type id, then x, then y; the ally ``_RL`` type ids follow the
  alphabetical order baneling, colossus, hydralisk, marauder, marine, medivac, stalker, zealot,
  zergling);
* the map ``smacv2/env/starcraft2/maps/SMAC_Maps/32x32_flat.SC2Map`` (``MapScript.galaxy``): every
  0.5 game seconds each enemy without an order is ordered to attack the ally unit closest to it.

Scenario names are SMACv2's README names ``{race}_{N}_vs_{E}``. The random draws are made by the
simulator from each env's own counter-based stream (``sim.rng``), so a seed reproduces the teams
and positions of every episode (SMACv2 draws them from an unseeded NumPy generator).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from sc2_envs.sim import rng
from sc2_envs.units import UNITS
from sc2_envs.validation import contains_bool, did_you_mean, off_map

MAP_X = MAP_Y = 32
"""The 32x32_flat map (MapInfo: 32 x 32, every cell pathable, one level)."""
EPISODE_LIMIT = 200
"""SMACv2 ``10gen_*`` ``limit`` (env steps)."""
N_FOV_ACTIONS = 12
"""SMACv2 ``num_fov_actions`` in the example configs (used when ``conic_fov=True``)."""
ENEMY_TARGET_PERIOD_LOOPS = 8
"""The map's ``gt_Attack`` trigger period: 0.5 game seconds = 8 game loops = 1 env step."""

RACES = ("protoss", "terran", "zerg")
TEAM_SIZES = ((5, 5), (10, 10), (10, 11), (20, 20), (20, 23))
"""(n_units, n_enemies) of the SMACv2 README scenarios."""

SHOOT_RANGE = {
    "stalker": 6.0,
    "zealot": 0.1,
    "colossus": 7.0,
    "zergling": 0.1,
    "baneling": 0.25,
    "hydralisk": 5.0,
    "marine": 5.0,
    "marauder": 6.0,
    "medivac": 4.0,
}
"""SMACv2 ``unit_shoot_range`` map (centre distance, ``<=``), before the ``min_attack_range`` floor."""
SIGHT_RANGE = {
    "stalker": 10.0,
    "zealot": 9.0,
    "colossus": 10.0,
    "zergling": 8.0,
    "baneling": 8.0,
    "hydralisk": 9.0,
    "marine": 9.0,
    "marauder": 10.0,
    "medivac": 11.0,
}
"""SMACv2 ``unit_sight_range`` map (centre distance, strict ``<``)."""
MAX_COOLDOWN = {
    "marine": 15.0,
    "marauder": 25.0,
    "medivac": 200.0,
    "stalker": 35.0,
    "zealot": 22.0,
    "colossus": 24.0,
    "hydralisk": 10.0,
    "zergling": 11.0,
    "baneling": 1.0,
}
"""SMACv2 ``unit_max_cooldown`` (state normaliser; the medivac's is its max energy)."""
_ALLY_ID_ORDER = ("baneling", "colossus", "hydralisk", "marauder", "marine", "medivac", "stalker", "zealot", "zergling")
"""SMACv2 ``_init_ally_unit_types`` for ``10gen_*`` maps: ally unit type id = min id + index here."""


@dataclass(frozen=True)
class RaceSpec:
    """One race's SMACv2 team generator (``sc2_gen_{race}.yaml`` ``team_gen``).

    Attributes:
        race: ``"protoss"``, ``"terran"`` or ``"zerg"``.
        sc2_race: ``"P"``, ``"T"`` or ``"Z"``.
        unit_types: the config's ``unit_types``, in config order (the order of ``weights``).
        weights: sampling probability of each unit type (sums to 1).
        exception_unit_types: types that may not make up a whole (sub)team.
        type_bit_order: the unit-type one-hot order (SMACv2 ``get_unit_type_id``).
    """

    race: str
    sc2_race: str
    unit_types: tuple[str, ...]
    weights: tuple[float, ...]
    exception_unit_types: tuple[str, ...]
    type_bit_order: tuple[str, ...]

    @property
    def map_type(self) -> str:
        """SMACv2's ``map_type`` of the race's ``10gen`` map (``"protoss_gen"``, ...)."""
        return f"{self.race}_gen"


RACE_SPECS = {
    "protoss": RaceSpec(
        "protoss", "P", ("stalker", "zealot", "colossus"), (0.45, 0.45, 0.1), (), ("stalker", "zealot", "colossus")
    ),
    "terran": RaceSpec(
        "terran", "T", ("marine", "marauder", "medivac"), (0.45, 0.45, 0.1), ("medivac",), ("marine", "marauder", "medivac")
    ),
    "zerg": RaceSpec(
        "zerg",
        "Z",
        ("zergling", "baneling", "hydralisk"),
        (0.45, 0.1, 0.45),
        ("baneling",),
        ("zergling", "hydralisk", "baneling"),
    ),
}


@dataclass(frozen=True)
class ScenarioSpec:
    """A SMACv2 scenario: one race, team sizes, and the example-config distributions.

    Attributes:
        name: ``"{race}_{n_units}_vs_{n_enemies}"``.
        race: a key of ``RACE_SPECS``.
        n_units, n_enemies: team sizes (``capability_config`` ``n_units`` / ``n_enemies``).
        episode_limit: env steps (200).
        p_reflect: ``surrounded_and_reflect`` ``p``: reflect when a uniform draw ``u <= p``,
            surrounded when ``u > p`` (0.5).
        min_attack_range: floor of the per-unit shoot ranges (2).
    """

    name: str
    race: str
    n_units: int
    n_enemies: int
    episode_limit: int = EPISODE_LIMIT
    p_reflect: float = 0.5
    min_attack_range: float = 2.0
    extras: dict = field(default_factory=dict)

    @property
    def race_spec(self) -> RaceSpec:
        return RACE_SPECS[self.race]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The race's unit types in type-bit order; a unit's *kind index* is its position here."""
        return self.race_spec.type_bit_order

    @property
    def n_agents(self) -> int:
        return self.n_units

    @property
    def map_type(self) -> str:
        return self.race_spec.map_type

    @property
    def a_race(self) -> str:
        return self.race_spec.sc2_race

    @property
    def b_race(self) -> str:
        return self.race_spec.sc2_race


SCENARIOS: dict[str, ScenarioSpec] = {
    f"{race}_{n}_vs_{e}": ScenarioSpec(f"{race}_{n}_vs_{e}", race, n, e) for race in RACES for n, e in TEAM_SIZES
}
"""The 15 SMACv2 scenarios of the README, keyed by name."""


def list_scenarios() -> list[str]:
    """Names of the SMACv2 scenarios, sorted (``protoss_10_vs_10`` ... ``zerg_5_vs_5``)."""
    return sorted(SCENARIOS)


def is_scenario(name) -> bool:
    """Whether ``name`` is a SMACv2 scenario name or a ``ScenarioSpec``."""
    return isinstance(name, ScenarioSpec) or (isinstance(name, str) and name in SCENARIOS)


def get_scenario(name: str | ScenarioSpec) -> ScenarioSpec:
    """The spec of scenario ``name``.

    Raises:
        ValueError: not a SMACv2 scenario; the message suggests the closest name and lists the valid ones.
    """
    if isinstance(name, ScenarioSpec):
        return name
    if not isinstance(name, str) or name not in SCENARIOS:
        raise ValueError(
            f"unknown SMACv2 scenario {name!r}{did_you_mean(name, SCENARIOS)}; expected one of: {', '.join(list_scenarios())}"
        )
    return SCENARIOS[name]


def shoot_range(unit: str, min_attack_range: float = 2.0) -> float:
    """SMACv2's per-unit shoot range with ``use_unit_ranges``: ``max(range, min_attack_range)``."""
    return max(SHOOT_RANGE[unit], float(min_attack_range))


# ------------------------------------------------------------------------------------------------
# sampling (batched, from each env's counter-based stream)

_TEAM_ATTEMPTS = 8
"""Team redraws made at once per env; further rounds follow only while some env still holds a team
made only of exception types (probability 0.1**8 for a one-unit extra team)."""


def _hex_offsets(n: int) -> torch.Tensor:
    """The ``n`` points of a unit-spacing hexagonal lattice nearest the origin (origin first), ``[n, 2]``."""
    r = int(np.ceil(np.sqrt(n))) + 2
    pts = []
    for j in range(-r, r + 1):
        for i in range(-r, r + 1):
            x, y = i + 0.5 * (j % 2), j * np.sqrt(3) / 2
            pts.append((np.hypot(x, y), y, x))
    pts.sort()
    return torch.tensor([(x, y) for _, y, x in pts[:n]], dtype=torch.float32)


class ScenarioSampler:
    """Draws SMACv2 teams and start positions for a batch of envs.

    Every draw is ``rng.uniform(episode_count, ..., purpose, env_seed)``, so env ``b`` gets the
    same scenario whether it is reset alone or in a batch.

    Args:
        spec: the scenario.
        device: torch device of the tensors returned.
    """

    def __init__(self, spec: ScenarioSpec, device: torch.device):
        self.spec, self.device = spec, torch.device(device)
        rs = spec.race_spec
        kinds = spec.kinds
        # config order -> kind index, and the cumulative weights in config order
        self._config_kind = torch.tensor([kinds.index(u) for u in rs.unit_types], dtype=torch.int64, device=self.device)
        w = torch.tensor(rs.weights, dtype=torch.float64)
        self._cum = (torch.cumsum(w, 0) / w.sum()).to(torch.float32).to(self.device)
        self._exception = torch.tensor([k in rs.exception_unit_types for k in kinds], device=self.device)
        self._sort_rank = torch.tensor([_ALLY_ID_ORDER.index(k) for k in kinds], dtype=torch.int64, device=self.device)
        self._radius = torch.tensor([UNITS[k].radius for k in kinds], dtype=torch.float32, device=self.device)
        self._hex = _hex_offsets(max(spec.n_units, spec.n_enemies)).to(self.device)

    # -------------------------------------------------------------------------------- teams
    def _team(self, episode: torch.Tensor, key: torch.Tensor, n: int, which: int) -> torch.Tensor:
        """``[B, n]`` kind indices of a weighted team (redrawn while made only of exception types)."""
        B = key.shape[0]
        if n == 0:
            return torch.zeros(B, 0, dtype=torch.int64, device=self.device)
        out = torch.zeros(B, n, dtype=torch.int64, device=self.device)
        todo = torch.ones(B, dtype=torch.bool, device=self.device)
        attempt0 = 0
        while bool(todo.any()):
            att = torch.arange(attempt0, attempt0 + _TEAM_ATTEMPTS, device=self.device)
            u = rng.uniform(
                episode[:, None, None],
                which,
                att[None, :, None],
                torch.arange(n, device=self.device)[None, None, :],
                rng.STREAM_SCENARIO_TEAM,
                key[:, None, None],
            )  # [B, K, n]
            cfg = torch.searchsorted(self._cum, u.contiguous(), right=True).clamp(max=len(self._cum) - 1)
            kind = self._config_kind[cfg]
            ok = ~self._exception[kind].all(-1)  # [B, K]
            first = torch.where(
                ok.any(-1), ok.to(torch.int64).argmax(-1), torch.zeros(B, dtype=torch.int64, device=self.device)
            )
            pick = kind[torch.arange(B, device=self.device), first]
            found = ok.any(-1) & todo
            out = torch.where(found[:, None], pick, out)
            todo = todo & ~found
            attempt0 += _TEAM_ATTEMPTS
        return out

    # -------------------------------------------------------------------------------- positions
    def _positions(self, episode, key, ally_kind, enemy_kind):
        """SMACv2 ``surrounded_and_reflect`` start points: ``([B, N, 2], [B, E, 2], group ids)``.

        Group ids ``[B, N + E]`` int64 name the units created at one shared point (surrounded:
        all allies are group 0, enemy group ``k`` is ``1 + k``); reflect gives every unit its own
        group (``-1``), since its points are distinct.
        """
        s, dev = self.spec, self.device
        B, N, E = key.shape[0], s.n_units, s.n_enemies
        P = rng.STREAM_SCENARIO_POS

        ar_n = torch.arange(N, device=dev)
        ar_e = torch.arange(E, device=dev)
        # the mixture draw (SurroundedAndReflect: u > p -> surrounded)
        surrounded = rng.uniform(episode, 0, P, key) > s.p_reflect  # [B]
        # reflect: allies uniform in [0, map_x/2 - 1) x [0, map_y); enemies mirrored in x = map_x/2
        ax = rng.uniform(episode[:, None], 1, ar_n[None, :], P, key[:, None]) * (MAP_X / 2 - 1)
        ay = rng.uniform(episode[:, None], 2, ar_n[None, :], P, key[:, None]) * MAP_Y
        r_ally = torch.stack([ax, ay], -1)
        m = min(N, E)
        r_enemy = torch.zeros(B, E, 2, device=dev)
        r_enemy[:, :m, 0] = MAP_X - ax[:, :m]
        r_enemy[:, :m, 1] = ay[:, :m]
        if E > N:  # extra enemies: uniform in the right half
            ex = rng.uniform(episode[:, None], 3, ar_e[None, N:], P, key[:, None]) * (MAP_X / 2) + MAP_X / 2
            ey = rng.uniform(episode[:, None], 4, ar_e[None, N:], P, key[:, None]) * MAP_Y
            r_enemy[:, N:] = torch.stack([ex, ey], -1)
        # surrounded: allies at the centre; enemies in 1-4 groups on distinct diagonals
        centre = torch.tensor([MAP_X / 2, MAP_Y / 2], device=dev)
        s_ally = centre.expand(B, N, 2)
        n_groups = 1 + (rng.uniform(episode, 5, P, key) * 4).to(torch.int64).clamp(max=3)  # [B] in 1..4
        label = (rng.uniform(episode[:, None], 6, ar_e[None, :], P, key[:, None]) * n_groups[:, None]).to(torch.int64)
        label = torch.minimum(label, n_groups[:, None] - 1)
        group = torch.sort(label, dim=1).values  # multinomial counts, assigned in group order
        # stable: a defined order for tied draws, which the compiled reset (sim.numba.reset) repeats
        perm = torch.argsort(
            rng.uniform(episode[:, None], 7, torch.arange(4, device=dev)[None, :], P, key[:, None]), dim=1, stable=True
        )
        diag = torch.gather(perm, 1, group)  # [B, E] diagonal of each enemy's group
        t = torch.gather(rng.uniform(episode[:, None], 8, torch.arange(4, device=dev)[None, :], P, key[:, None]), 1, group)
        off = 2.0
        inner = torch.tensor(
            [
                [MAP_X / 2 - off, MAP_Y / 2 - off],
                [MAP_X / 2 - off, MAP_Y / 2 + off],
                [MAP_X / 2 + off, MAP_Y / 2 + off],
                [MAP_X / 2 + off, MAP_Y / 2 - off],
            ],
            device=dev,
        )
        corner = torch.tensor([[0.0, 0.0], [0.0, MAP_Y], [MAP_X, MAP_Y], [MAP_X, 0.0]], device=dev)
        s_enemy = inner[diag] * t[..., None] + corner[diag] * (1 - t[..., None])
        ally = torch.where(surrounded[:, None, None], s_ally, r_ally)
        enemy = torch.where(surrounded[:, None, None], s_enemy, r_enemy)
        gid = torch.cat([torch.zeros(B, N, dtype=torch.int64, device=dev), 1 + group], 1)
        gid = torch.where(surrounded[:, None], gid, torch.full_like(gid, -1))
        return ally, enemy, gid, surrounded

    def spread(self, pos: torch.Tensor, kind: torch.Tensor, gid: torch.Tensor) -> torch.Tensor:
        """Spread units created at one shared point onto a hexagonal clump (``[B, U, 2]``).

        SC2 places units created on top of each other itself (not documented); we put the ``k``-th
        member of a group at the ``k``-th nearest point of a hexagonal lattice around the point,
        spaced by the largest diameter in the group plus 0.05. Units with ``gid < 0`` stay put.
        Positions are clamped into the map.
        """
        B, U = gid.shape
        if U == 0:
            return pos
        r = self._radius[kind]  # [B, U]
        g = gid.clamp(min=0)
        G = int(g.max()) + 1 if g.numel() else 1
        big = torch.zeros(B, G, device=pos.device).scatter_reduce(1, g, torch.where(gid >= 0, r, 0.0), "amax")
        spacing = 2 * torch.gather(big, 1, g) + 0.05
        onehot = torch.nn.functional.one_hot(g, G) * (gid >= 0).unsqueeze(-1)  # [B, U, G]
        rank = (torch.cumsum(onehot, 1) - onehot).mul(onehot).sum(-1)  # members of the group before u
        off = self._hex[rank.clamp(max=self._hex.shape[0] - 1)] * spacing.unsqueeze(-1)
        out = torch.where((gid >= 0).unsqueeze(-1), pos + off, pos)
        return out.clamp(0.0, MAP_X - 1e-3)

    def sort_allies(self, pos: torch.Tensor, kind: torch.Tensor) -> torch.Tensor:
        """``[B, N]`` permutation putting allies in SMACv2's agent order (ally type id, x, y)."""
        order = torch.argsort(pos[..., 1], dim=1, stable=True)
        order = torch.gather(order, 1, torch.argsort(torch.gather(pos[..., 0], 1, order), dim=1, stable=True))
        rank = self._sort_rank[torch.gather(kind, 1, order)]
        return torch.gather(order, 1, torch.argsort(rank, dim=1, stable=True))

    def sample(self, episode: torch.Tensor, key: torch.Tensor) -> dict[str, torch.Tensor]:
        """One scenario per env.

        Args:
            episode: ``[B]`` int64 episode counts; key: ``[B]`` int64 env keys.

        Returns:
            ``kind [B, N + E]`` int64 (kind index per unit, agents in SMACv2's agent order, then
            enemies in team order), ``pos [B, N + E, 2]`` float32 start positions,
            ``surrounded [B]`` bool (which start-position distribution was drawn).
        """
        s = self.spec
        N, E = s.n_units, s.n_enemies
        team = self._team(episode, key, N, 0)
        enemy = team[:, :E]
        if E > N:
            enemy = torch.cat([team, self._team(episode, key, E - N, 1)], 1)
        ally_p, enemy_p, gid, surrounded = self._positions(episode, key, team, enemy)
        kind = torch.cat([team, enemy], 1)
        pos = self.spread(torch.cat([ally_p, enemy_p], 1), kind, gid)
        perm = self.sort_allies(pos[:, :N], kind[:, :N])
        kind = torch.cat([torch.gather(kind[:, :N], 1, perm), kind[:, N:]], 1)
        pos = torch.cat([torch.gather(pos[:, :N], 1, perm.unsqueeze(-1).expand(-1, -1, 2)), pos[:, N:]], 1)
        return {"kind": kind, "pos": pos, "surrounded": surrounded}


def validate_composition(spec: ScenarioSpec, allies, enemies) -> tuple[list[int], list[int]]:
    """Kind indices of an explicit composition, or a ``ValueError`` naming what is wrong.

    Args:
        allies: ``n_units`` unit type names; enemies: ``n_enemies`` names.

    Raises:
        TypeError: not sequences of strings.
        ValueError: a length that is not the team size, or a unit type that is not of the
            scenario's race (the message lists the race's types).
    """
    out = []
    for side, names, n in (("allies", allies, spec.n_units), ("enemies", enemies, spec.n_enemies)):
        if isinstance(names, str) or not hasattr(names, "__len__"):
            raise TypeError(f"{side} must be a sequence of {n} unit type names, got {names!r}")
        if len(names) != n:
            raise ValueError(f"{spec.name}: {side} must have {n} unit types (the team size), got {len(names)}: {list(names)}")
        for i, u in enumerate(names):
            if u not in spec.kinds:
                raise ValueError(
                    f"{spec.name}: {side}[{i}] = {u!r} is not a {spec.race} unit; expected one of {list(spec.kinds)}"
                )
        out.append([spec.kinds.index(u) for u in names])
    return out[0], out[1]


def validate_positions(spec: ScenarioSpec, side: str, positions, n: int) -> torch.Tensor:
    """``[n, 2]`` float32 of explicit start positions, or a ``ValueError`` naming the bad one.

    Raises:
        ValueError: not real numbers (strings, bools, complex numbers, a ragged list), wrong shape, a non-finite value, or a
            point off the 32x32 map (``0 <= x, y < 32`` after rounding to float32, the state's precision); the message
            names the side and the shape.
    """
    try:
        a = np.asarray(positions.detach().cpu() if torch.is_tensor(positions) else positions)
    except ValueError as e:  # a ragged list
        raise ValueError(f"{spec.name}: {side}_positions: expected [{n}, 2] numbers (map units); {e}") from None
    if a.dtype == np.bool_ or contains_bool(positions):  # True would silently be the point 1.0
        raise ValueError(f"{spec.name}: {side}_positions hold bools; expected [{n}, 2] numbers (map units)")
    if a.dtype.kind in "USO" and any(isinstance(v, (str, bytes)) for v in a.ravel()):
        # astype(float64) would parse "4" as 4.0
        raise ValueError(
            f"{spec.name}: {side}_positions = {positions!r} hold strings or bools; expected [{n}, 2] numbers (map units)"
        )
    if np.iscomplexobj(a) or a.dtype == object and any(isinstance(v, complex) for v in a.ravel()):
        # astype(float64) would drop the imaginary part with only a ComplexWarning
        raise ValueError(
            f"{spec.name}: {side}_positions = {positions!r} hold complex numbers; expected [{n}, 2] real numbers (map units)"
        )
    try:
        p = torch.as_tensor(a.astype(np.float64), dtype=torch.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"{spec.name}: {side}_positions = {positions!r}: expected [{n}, 2] numbers (map units); {e}"
        ) from None
    if p.shape != (n, 2):
        raise ValueError(f"{spec.name}: {side} positions must have shape [{n}, 2], got {list(p.shape)}")
    for i in range(n):
        x, y = float(p[i, 0]), float(p[i, 1])
        why = off_map(x, y, MAP_X)  # checked as stored: 31.99999999 is 32.0 in float32, off the map
        if why:
            raise ValueError(f"{spec.name}: {side} position {i} = {why}")
    return p.to(torch.float32)
