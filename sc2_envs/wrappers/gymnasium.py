"""Gymnasium API: one SMAC battle as a single-agent env with a joint action (``sc2_envs/<map>-v0``).

For single-agent learners (SB3 / sb3-contrib ``MaskablePPO``, CleanRL) and centralised controllers.

| Id               | ``sc2_envs/<map>-v0`` for every map in ``sc2_envs.maps.list_maps()`` and    |
|                  | every SMACv2 scenario in ``sc2_envs.list_scenarios()``                      |
|------------------|------------------------------------------------------------------------------|
| Action space     | ``MultiDiscrete([n_actions] * n_agents)``: SMAC action of each agent        |
| Observation      | ``observation="obs"``: ``Box(-1, 1, (n_agents * obs_size,), float32)``,     |
|                  | the agents' SMAC observations concatenated in agent id order;              |
|                  | ``observation="state"``: ``Box(-b, b, (state_size,), float32)`` (SMAC state,  |
|                  | ``b`` >= 1 from SMAC's cooldown normaliser, ``_common.state_bound``)          |
| Reward           | SMAC's shaped team reward (float)                                           |
| Episode end      | ``terminated``: battle won / lost / drawn; ``truncated``: SMAC's time limit |

Action masks: ``info["action_mask"]`` is ``(n_agents, n_actions)`` int8 (SMAC's ``avail_actions``),
and ``env.action_masks()`` returns it flattened to ``(n_agents * n_actions,)`` bool, the layout
sb3-contrib's ``MaskablePPO`` expects for a ``MultiDiscrete`` action space. A joint action with an
unavailable entry raises ``ValueError`` unless the env is built with ``lenient_actions=True`` (then
it becomes stop / no-op and ``info["invalid_actions"]`` flags it). Gymnasium's ``check_env`` and any
learner that samples ``action_space.sample()`` without the mask need ``lenient_actions=True``.

``info`` has the same keys at ``reset`` and at every ``step``: SMAC's ``battle_won`` and
``episode_limit`` (0-d bool arrays, ``numpy.ndarray`` of shape ``()``), ``dead_allies`` and
``dead_enemies`` (``numpy.int64``), with SMAC's meanings (``battle_info``); ``action_mask``; the global
``state`` (``(state_size,)`` float32) for centralised critics; with ``lenient_actions=True``
``invalid_actions`` (``(n_agents,)`` bool, all False at reset); and in SMACv2 scenarios ``unit_kinds``
``(n_agents,)`` and ``enemy_unit_kinds`` ``(n_enemies,)`` int64, the rosters drawn for the current
episode as indices into ``env.get_env_info()["kinds"]`` (the race's types in one-hot order,
``sc2_envs.smacv2.RaceSpec.type_bit_order``: the position of the 1 in each unit's ``type_*`` features);
``env.unit_types()`` gives them as names. Every value has a ``dtype`` and a fixed shape, so TorchRL's
``GymWrapper(...).auto_register_info_dict()`` (it takes its keys from the reset's info and reads each
value's ``.dtype``) and Gymnasium's vector envs (which stack them into ``(num_envs, ...)`` arrays of that
dtype) take them as they are.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import torch

from sc2_envs.sim.rng import unwrap_scalar_seed
from sc2_envs.wrappers._common import OBS_BOUND, SimRenderMixin, as_numpy, make_backend, state_bound

__all__ = ["SC2JointEnv", "battle_info", "env_id", "register_envs"]

OBSERVATIONS = ("obs", "state")


def battle_info(battle_won: bool = False, dead_allies: int = 0, dead_enemies: int = 0, episode_limit: bool = False) -> dict:
    """SMAC's battle keys of ``info`` (SMAC ``StarCraft2Env.step``), as NumPy values with a ``dtype``.

    The flags are 0-d bool arrays rather than ``numpy.bool_`` scalars: Gymnasium's vector envs stack a
    Python number or a ``numpy.number`` into an array of its type and any other scalar into an object
    array, and ``numpy.bool_`` is not a ``numpy.number``; TorchRL's ``GymWrapper`` info reader needs a
    ``.dtype``, which a Python bool lacks. ``bool(...)``, ``if info["battle_won"]:`` and sums work as
    on SMAC's bools.

    Args:
        battle_won: the allies won the battle on this step.
        dead_allies: allied units dead so far this episode.
        dead_enemies: enemy units dead so far this episode.
        episode_limit: the episode reached SMAC's ``episode_limit`` on this step (a truncation).

    Each value may be a Python, NumPy or 0-d array / tensor value (what ``tensor.item()`` gives).

    Returns:
        ``{"battle_won": () bool, "dead_allies": int64, "dead_enemies": int64, "episode_limit": () bool}``.

    Raises:
        ValueError: a flag that is not a bool (or the int 0 / 1), or a count that is not an int >= 0: a
            string or a float would be misread (``bool("False")`` is True, ``np.int64(1.5)`` is 1).
    """
    flags = {"battle_won": _scalar(battle_won), "episode_limit": _scalar(episode_limit)}
    counts = {"dead_allies": _scalar(dead_allies), "dead_enemies": _scalar(dead_enemies)}
    for name, v in flags.items():
        if not (isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1))):
            raise ValueError(f"{name}={v!r}; expected a bool (or 0 / 1)")
    for name, v in counts.items():
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name}={v!r}; expected an int >= 0")
    return {
        "battle_won": np.array(bool(flags["battle_won"])),
        "dead_allies": np.int64(counts["dead_allies"]),
        "dead_enemies": np.int64(counts["dead_enemies"]),
        "episode_limit": np.array(bool(flags["episode_limit"])),
    }


def _scalar(value):
    # a 0-d array or tensor counts as its value (np.array(True), torch.tensor(3))
    if isinstance(value, (np.ndarray, torch.Tensor)) and value.ndim == 0:
        return value.item()
    return value


class SC2JointEnv(SimRenderMixin, gymnasium.Env):
    """A SMAC battle as a Gymnasium env whose action is every agent's action (see the module docstring).

    Args:
        map_name: SMAC map name.
        observation: ``"obs"`` (concatenated per-agent observations) or ``"state"`` (global state).
        backend: ``"sim"`` (embedded simulator) or ``"sc2"`` (real StarCraft II via ``sc2_envs.backends.smac_sc2``).
        render_mode: ``None``, ``"rgb_array"`` or ``"human"``.
        device: torch device of the simulator.
        seed: seed of the first episode when ``reset`` gets none.
        lenient_actions: replace unavailable actions by stop / no-op instead of raising ``ValueError``.
        **smac_options: SMAC's ``StarCraft2Env`` keyword arguments.

    Raises:
        ValueError: unknown map, backend, observation kind, render mode or option.
    """

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        map_name: str = "3m",
        *,
        observation: str = "obs",
        backend: str = "sim",
        render_mode: str | None = None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        lenient_actions: bool = False,
        **smac_options,
    ):
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation={observation!r}; expected one of {OBSERVATIONS}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r}; expected None or one of {self.metadata['render_modes']}")
        self.map_name = map_name
        self.observation = observation
        self.render_mode = render_mode
        self.lenient_actions = lenient_actions
        self.sim = make_backend(map_name, backend, device, seed, lenient_actions, smac_options)
        if render_mode is not None and not hasattr(self.sim, "render_data"):
            raise ValueError(f"backend {backend!r} has no render_data(); use render_mode=None")
        self.n_agents, self.n_actions = self.sim.n_agents, self.sim.n_actions
        self.action_space = gymnasium.spaces.MultiDiscrete(np.full(self.n_agents, self.n_actions, np.int64))
        if observation == "obs":
            size, bound = self.n_agents * self.sim.obs_size, OBS_BOUND
        else:
            types = self.sim.scenario.kinds if getattr(self.sim, "scenario", None) is not None else self.sim.agent_unit_types
            size, bound = self.sim.state_size, state_bound(types)
        self.observation_space = gymnasium.spaces.Box(-bound, bound, (size,), np.float32)
        self._avail = np.zeros((self.n_agents, self.n_actions), np.int8)
        self._varying = getattr(self.sim, "scenario", None) is not None  # SMACv2: rosters drawn per reset
        self._kinds: tuple[np.ndarray, np.ndarray] | None = None  # this episode's (ally, enemy) kind indices
        self._has_reset = False
        self._done = True
        self._steps = 0
        self._viewer = None

    def _observe(self, obs, state, avail, info):
        self._avail = as_numpy(avail, np.int8)
        state = as_numpy(state, np.float32)
        x = as_numpy(obs, np.float32).reshape(-1) if self.observation == "obs" else state.copy()
        info = dict(info, action_mask=self._avail.copy(), state=state)
        if self._varying:  # SMACv2: this episode's roster
            info["unit_kinds"], info["enemy_unit_kinds"] = (k.copy() for k in self._kinds)
        return x, info

    def unit_types(self) -> tuple[list[str], list[str]]:
        """Unit type names of the current episode: ``(agent types, enemy types)``, in SMAC's unit order.

        On SMAC v1 maps they are the map's fixed rosters; on SMACv2 scenarios they are drawn at every
        reset and equal ``[kinds[k] for k in info["unit_kinds"]]`` (and ``enemy_unit_kinds``) with
        ``kinds = env.get_env_info()["kinds"]``.

        Raises:
            RuntimeError: on a SMACv2 scenario before the first ``reset()`` (no roster is drawn yet).
        """
        if self._varying and not self._has_reset:
            raise RuntimeError("unit_types() called before reset(); SMACv2 draws the rosters at reset()")
        return self.sim.unit_types(0)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start a new battle; ``seed`` fixes it (``None`` continues the backend's random stream).

        ``seed`` may be an int, a NumPy integer or a 0-d integer tensor / array (each counts as its int),
        or a ``numpy.random.SeedSequence`` (e.g. ``sc2_envs.eval_seed(s)``), as in ``make_batched`` and
        the PettingZoo env. ``np_random`` is seeded from it as gymnasium does for an int (a ``PCG64`` of
        the seed sequence); for a ``SeedSequence`` ``np_random_seed`` is ``-1``, gymnasium's value for a
        generator not made from an int. ``options``: None or ``{}`` (Gymnasium's checker passes ``{}``); the
        battle reads none, so any other would be ignored.

        Raises:
            TypeError: a bool (also 0-d, as a tensor or array) or a 0-d float seed; other bad seeds as
                gymnasium's ``Env.reset``.
            ValueError: ``options`` other than None or ``{}``.
        """
        if not (options is None or (isinstance(options, dict) and not options)):
            raise ValueError(f"options={options!r}; expected None or {{}} (a SMAC battle's reset takes no options)")
        seed = unwrap_scalar_seed(seed)
        if isinstance(seed, (bool, np.bool_)):  # gymnasium takes True as 1 and would reseed np_random first
            raise TypeError(f"seed must be an int, a SeedSequence or None, got {seed!r}")
        if isinstance(seed, np.integer):  # gymnasium's seeding takes only Python ints
            seed = int(seed)
        if isinstance(seed, np.random.SeedSequence):
            super().reset()
            # gymnasium's np_random(int) is Generator(PCG64(SeedSequence(int))); the same from the sequence given
            self.np_random = np.random.Generator(np.random.PCG64(seed))
        else:
            super().reset(seed=seed)
        out = self.sim.reset(seed=seed)
        if self._varying:
            kinds = self.sim.scenario.kinds
            self._kinds = tuple(np.array([kinds.index(t) for t in team], np.int64) for team in self.sim.unit_types(0))
        self._has_reset = True
        self._done = False
        self._steps = 0
        info = battle_info()
        if self.lenient_actions:  # the step's keys at reset too: TorchRL reads only the reset's keys
            info["invalid_actions"] = np.zeros(self.n_agents, bool)
        return self._observe(out["obs"][0], out["state"][0], out["avail_actions"][0], info)

    def step(self, action):
        """Apply the joint action ``(n_agents,)`` ints for one env step (8 game loops).

        Raises:
            RuntimeError: the episode is over (call ``reset``).
            ValueError: wrong shape, non-integer or out-of-range entries, or (unless ``lenient_actions``)
                an action the mask says is unavailable.
        """
        if self._done:
            raise RuntimeError("step() called after the episode ended (or before reset()); call reset()")
        try:
            a = np.asarray(action)
        except ValueError:  # numpy: "inhomogeneous shape"
            raise ValueError(
                f"action must be {self.n_agents} integers (one per agent), shape ({self.n_agents},); got a ragged "
                f"sequence {action!r}"
            ) from None
        if a.shape != (self.n_agents,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"action must be {self.n_agents} integers (one per agent), got {action!r}")
        if ((a < 0) | (a >= self.n_actions)).any():
            raise ValueError(f"action {a.tolist()} has entries outside [0, {self.n_actions})")
        out = self.sim.step(torch.as_tensor(a.astype(np.int64), device=self.sim.device).unsqueeze(0))
        self._steps += 1
        terminated, truncated = bool(out["terminated"][0]), bool(out["truncated"][0])
        self._done = terminated or truncated
        info = battle_info(*(out[k][0].item() for k in ("battle_won", "dead_allies", "dead_enemies", "episode_limit")))
        if self.lenient_actions:
            info["invalid_actions"] = as_numpy(out["invalid_actions"][0], bool)
        obs, info = self._observe(out["final_obs"][0], out["final_state"][0], out["final_avail_actions"][0], info)
        return obs, float(out["reward"][0]), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Available actions now, ``(n_agents * n_actions,)`` bool (sb3-contrib ``MaskablePPO`` layout).

        Raises:
            RuntimeError: before the first ``reset()`` (there is no battle, so no mask).
        """
        if not self._has_reset:
            raise RuntimeError("action_masks() called before reset(); call reset() first")
        return self._avail.astype(bool).reshape(-1)

    @property
    def spec(self):
        """The Gymnasium ``EnvSpec`` this env was made from (``None`` when built directly)."""
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, value) -> None:
        # gymnasium.make sets the spec after building the env: the only place that sees both the id and
        # the kwargs. An sc2_envs id fixes the map, so a map_name= that differs is refused, not built.
        if value is not None and getattr(value, "namespace", None) == "sc2_envs" and value.name != self.sim.map_name:
            self.close()
            raise ValueError(
                f"gymnasium.make({value.id!r}) got map_name={self.map_name!r}, but the id fixes map_name="
                f"{value.name!r}; use gymnasium.make({env_id(self.sim.map_name)!r}) for {self.sim.map_name}"
            )
        self.__dict__["_spec"] = value

    def get_env_info(self) -> dict:
        """SMAC's ``get_env_info()`` of the backend (shapes, layouts, feature names)."""
        return self.sim.get_env_info()


def env_id(map_name: str) -> str:
    """Gymnasium id of a map: ``sc2_envs/<map>-v0``."""
    return f"sc2_envs/{map_name}-v0"


def register_envs() -> list[str]:
    """Register ``sc2_envs/<map>-v0`` for every map in ``sc2_envs.maps.MAPS`` (safe to call again).

    The ids use the embedded simulator (``nondeterministic=False``: same seed and actions give the same
    episode); pass ``backend="sc2"`` to ``gymnasium.make`` for real StarCraft II. The id fixes the map:
    ``gymnasium.make("sc2_envs/3m-v0", map_name="8m")`` raises ``ValueError``. The env ends its own
    episodes at SMAC's ``episode_limit`` (reported as truncation), so no ``TimeLimit`` is added.

    Returns:
        The ids registered by this call (already registered ids are skipped).
    """
    from sc2_envs.maps import list_maps
    from sc2_envs.smacv2 import list_scenarios

    new = []
    for name in list_maps() + list_scenarios():
        gid = env_id(name)
        if gid in gymnasium.registry:
            continue
        gymnasium.register(
            id=gid, entry_point="sc2_envs.wrappers.gymnasium:SC2JointEnv", kwargs={"map_name": name}, nondeterministic=False
        )
        new.append(gid)
    return new
