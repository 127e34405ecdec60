"""SMAC's ``StarCraft2Env`` interface on the embedded simulator, for pymarl / EPyMARL-style code.

``StarCraft2Env`` here has the methods, return types and keyword arguments of
``smac.env.StarCraft2Env`` (oxwhirl/smac ``smac/env/starcraft2/starcraft2.py`` and
``smac/env/multiagentenv.py``), so a codebase written against SMAC runs unchanged after swapping
the import::

    from sc2_envs.adapters import StarCraft2Env      # instead of: from smac.env import StarCraft2Env
    env = StarCraft2Env(map_name="3m", seed=0)
    env.reset()
    while True:
        reward, terminated, info = env.step(actions)   # actions: N ints, each available
        if terminated:
            break

Semantics (SMAC's, checked against ``StarCraft2Env.step``):

* ``step(actions) -> (reward, terminated, info)``; ``reward`` is SMAC's shaped (or sparse) team
  reward as a Python float; ``terminated`` is True when the battle is won, lost or drawn **or** the
  time limit (``episode_limit`` env steps) is reached; the first death of an agent never ends the
  episode: dead agents stay, with an all-zero observation and the avail mask ``[1, 0, ..., 0]``
  (only no-op).
* ``info`` has ``battle_won``, ``dead_allies`` and ``dead_enemies`` on every step and
  ``episode_limit: True`` on a time-limit step **only if** ``continuing_episode=True`` (SMAC sets the
  key only then; pymarl's runners read ``info.get("episode_limit", False)`` to bootstrap at the limit).
  A battle decided on the limit step counts as decided (``terminated`` without ``episode_limit``),
  as in SMAC, where the game-end check comes before the limit check.
* ``reset() -> (obs, state)``: ``obs`` is a list of ``N`` float32 arrays ``(obs_size,)``, ``state`` a
  float32 array ``(state_size,)``; ``get_avail_actions()`` is a list of ``N`` lists of ``n_actions``
  0/1 ints, as SMAC returns.
* After the terminal ``step``, ``get_obs`` / ``get_state`` / ``get_avail_actions`` return the final
  observation of that episode (pymarl stores it as the last transition) until ``reset``.
* ``get_stats()``: SMAC's ``battles_won``, ``battles_game``, ``battles_draw`` (= timeouts),
  ``win_rate``, ``timeouts``, ``restarts`` (always 0: the simulator never needs a game restart).
* An unavailable action raises ``ValueError`` naming the agent and action (SMAC asserts), unless
  ``lenient_actions=True``.

Time base: one ``step`` = 8 game loops (SMAC's ``step_mul``) = 0.5 normal-speed game seconds.

Keyword arguments: every ``StarCraft2Env`` keyword is accepted. The observation / state / reward
options (``obs_*``, ``state_*``, ``reward_*``) and ``continuing_episode`` act as in SMAC. The
simulator models SMAC's defaults for ``step_mul=8``, ``move_amount=2``, ``difficulty="7"``,
``heuristic_ai=False`` and ``heuristic_rest=False``; any other value of those raises ``ValueError``
(it would change the game and cannot be honoured). ``game_version``, ``replay_dir``,
``replay_prefix``, ``window_size_x``, ``window_size_y`` and ``debug`` only concern the StarCraft II
process, so the simulator keeps them as attributes without effect. ``backend="sc2"`` runs the same
interface on real StarCraft II through ``sc2_envs.backends.smac_sc2`` (all keywords passed on).

pymarl / EPyMARL registration (their ``src/envs/__init__.py``)::

    from functools import partial
    from sc2_envs.adapters.smac_compat import StarCraft2Env
    REGISTRY["sc2"] = partial(env_fn, env=StarCraft2Env)      # pymarl: env_fn(env, **kw) = env(**kw)

EPyMARL wraps SMAC's class in ``SMACWrapper`` (``src/envs/smac_wrapper.py``); replacing its
``from smac.env import StarCraft2Env`` with the import above is the only change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from sc2_envs.maps import MapSpec
from sc2_envs.wrappers._common import as_numpy, make_backend

__all__ = ["SMAC_GAME_OPTIONS", "SMAC_PROCESS_OPTIONS", "StarCraft2Env"]

SMAC_GAME_OPTIONS: dict[str, Any] = {
    "step_mul": 8, "move_amount": 2, "difficulty": "7", "heuristic_ai": False, "heuristic_rest": False,
}
"""SMAC keywords that change the game; the simulator implements only these values (SMAC's defaults)."""

SMAC_PROCESS_OPTIONS: dict[str, Any] = {
    "game_version": None, "replay_dir": "", "replay_prefix": "", "window_size_x": 1920, "window_size_y": 1200,
    "debug": False,
}
"""SMAC keywords about the StarCraft II process (binary version, replay files, window, logging), with
SMAC's defaults; they have no effect on the simulator."""


class StarCraft2Env:
    """SMAC's ``StarCraft2Env`` API on the embedded simulator (see the module docstring for semantics).

    Args:
        map_name: SMAC map name (``sc2_envs.list_maps()``), or a ``MapSpec`` (simulator only; e.g. a
            map with a shorter ``episode_limit`` for tests). SMAC's default is ``"8m"``.
        seed: seed of the first episode; later episodes continue the env's random stream, as SMAC's
            game seed does (``seed()`` returns it).
        continuing_episode: SMAC's flag: report ``info["episode_limit"] = True`` at the time limit.
        backend: ``"sim"`` (embedded batched simulator at one env) or ``"sc2"`` (real StarCraft II).
        device: torch device of the simulator's tensors (outputs are NumPy / Python either way).
        lenient_actions: replace an unavailable action by stop (living unit) / no-op (dead unit) and
            set ``info["invalid_actions"]`` instead of raising ``ValueError``.
        **kwargs: SMAC's ``StarCraft2Env`` keywords (``obs_last_action``, ``reward_sparse``, ...) and the
            simulator's own (``spawn_jitter``, ``loops_per_tick``; see ``sc2_envs.sim.env.SMACSim``).

    Raises:
        ValueError: unknown map or keyword, or a game keyword (``step_mul``, ``difficulty``, ...) with a
            value the simulator does not implement.
    """

    def __init__(self, map_name: str | MapSpec = "8m", seed: int | None = None, continuing_episode: bool = False,
                 *, backend: str = "sim", device: str | torch.device = "cpu", lenient_actions: bool = False,
                 **kwargs):
        self.continuing_episode = bool(continuing_episode)
        self._seed = seed
        self.backend = backend
        self.lenient_actions = lenient_actions
        options = dict(kwargs)
        if backend == "sim":
            for key, supported in SMAC_GAME_OPTIONS.items():
                value = options.pop(key, supported)
                if value != supported and not (key == "difficulty" and str(value) == supported):
                    raise ValueError(f"{key}={value!r} is not implemented by the simulator (it models SMAC's "
                                     f"{key}={supported!r}); use backend='sc2' for other values")
            for key, default in SMAC_PROCESS_OPTIONS.items():
                setattr(self, key, options.pop(key, default))
        # The sc2 backend always reports the time limit as truncation; continuing_episode only shapes ``info``.
        self.sim = make_backend(map_name, backend, device, seed, lenient_actions, options)
        self.map_name = self.sim.map_name
        self.n_agents: int = self.sim.n_agents
        self.n_enemies: int = self.sim.n_enemies
        self.n_actions: int = self.sim.n_actions
        self.episode_limit: int = self.sim.episode_limit
        self._episode_steps = 0
        self._total_steps = 0
        self._episode_count = 0
        self._obs: np.ndarray | None = None    # [N, obs_size] float32
        self._state: np.ndarray | None = None  # [state_size] float32
        self._avail: np.ndarray | None = None  # [N, n_actions] int64 (0/1)
        self._terminated = False

    # ------------------------------------------------------------------ episode
    def reset(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Start a new episode.

        The first reset uses the constructor's ``seed`` (or the one given to ``seed(s)``); later resets
        continue the random stream, so a seeded run is reproducible as a whole.

        Returns:
            ``(get_obs(), get_state())``: ``N`` float32 arrays ``(obs_size,)`` and ``(state_size,)`` float32.
        """
        out = self.sim.reset(seed=self._seed if self._episode_count == 0 else None)
        self._store(out["obs"], out["state"], out["avail_actions"])
        self._episode_steps = 0
        self._terminated = False
        return self.get_obs(), self.get_state()

    def step(self, actions: Sequence[int] | np.ndarray | torch.Tensor) -> tuple[float, bool, dict]:
        """Advance the battle by one env step (8 game loops) with one action per agent.

        Args:
            actions: ``N`` action ids (list, NumPy array or torch tensor of any integer dtype), agent
                ``i``'s at index ``i``; each must be available (``get_avail_agent_actions(i)``).

        Returns:
            ``(reward, terminated, info)`` with SMAC's meaning (module docstring).

        Raises:
            RuntimeError: ``step`` before ``reset`` or after the episode terminated.
            ValueError: wrong number of actions, a non-integer, or an unavailable action.
        """
        if self._obs is None or self._terminated:
            raise RuntimeError("step() called before reset() or after the episode terminated; call reset()")
        if isinstance(actions, torch.Tensor):
            actions = actions.detach().cpu().numpy()
        acts = np.asarray(actions)
        if acts.shape != (self.n_agents,):
            raise ValueError(f"expected {self.n_agents} actions (one per agent), got shape {acts.shape}")
        if not np.issubdtype(acts.dtype, np.integer) and (
                not np.issubdtype(acts.dtype, np.floating) or not np.all(acts == np.round(acts))):
            raise ValueError(f"actions must be integers, got {actions!r}")
        acts = acts.astype(np.int64)
        out = self.sim.step(torch.as_tensor(acts, device=self.sim.device).unsqueeze(0))
        self._store(out["final_obs"], out["final_state"], out["final_avail_actions"])
        self._episode_steps += 1
        self._total_steps += 1
        truncated = bool(out["truncated"][0])
        self._terminated = bool(out["terminated"][0]) or truncated
        info: dict[str, Any] = {"battle_won": bool(out["battle_won"][0]), "dead_allies": int(out["dead_allies"][0]),
                                "dead_enemies": int(out["dead_enemies"][0])}
        if truncated and self.continuing_episode:
            info["episode_limit"] = True
        if self.lenient_actions:
            info["invalid_actions"] = as_numpy(out["invalid_actions"][0], bool)
        if self._terminated:
            self._episode_count += 1
        return float(out["reward"][0]), self._terminated, info

    def _store(self, obs: torch.Tensor, state: torch.Tensor, avail: torch.Tensor) -> None:
        self._obs = as_numpy(obs[0], np.float32)
        self._state = as_numpy(state[0], np.float32)
        self._avail = as_numpy(avail[0], np.int64)

    def _require_reset(self) -> None:
        if self._obs is None:
            raise RuntimeError("call reset() before reading observations")

    # ------------------------------------------------------------------ observations
    def get_obs(self) -> list[np.ndarray]:
        """Every agent's observation: ``N`` float32 arrays ``(obs_size,)`` (zeros for dead agents)."""
        self._require_reset()
        return [o.copy() for o in self._obs]

    def get_obs_agent(self, agent_id: int) -> np.ndarray:
        """Agent ``agent_id``'s observation, ``(obs_size,)`` float32."""
        self._require_reset()
        return self._obs[self._agent_index(agent_id)].copy()

    def get_obs_size(self) -> int:
        """Length of one agent's observation vector."""
        return int(self.sim.obs_size)

    def get_state(self) -> np.ndarray:
        """SMAC's global state, ``(state_size,)`` float32."""
        self._require_reset()
        return self._state.copy()

    def get_state_size(self) -> int:
        """Length of the global state vector."""
        return int(self.sim.state_size)

    def get_avail_actions(self) -> list[list[int]]:
        """Available actions of every agent: ``N`` lists of ``n_actions`` 0/1 ints (SMAC's return type)."""
        self._require_reset()
        return self._avail.tolist()

    def get_avail_agent_actions(self, agent_id: int) -> list[int]:
        """Available actions of agent ``agent_id``: ``n_actions`` 0/1 ints (dead agent: ``[1, 0, ..., 0]``)."""
        self._require_reset()
        return self._avail[self._agent_index(agent_id)].tolist()

    def get_total_actions(self) -> int:
        """Number of actions per agent: no-op, stop, 4 moves, one attack per enemy (or heal per ally)."""
        return int(self.n_actions)

    def get_env_info(self) -> dict:
        """SMAC's ``state_shape``, ``obs_shape``, ``n_actions``, ``n_agents``, ``episode_limit``, plus the
        simulator's layout keys (``n_enemies``, ``obs_layout``, ``state_layout``, ``agent_unit_types``, ...)."""
        info = dict(self.sim.get_env_info())
        info.update(state_shape=self.get_state_size(), obs_shape=self.get_obs_size(),
                    n_actions=self.get_total_actions(), n_agents=self.n_agents, episode_limit=self.episode_limit)
        return info

    def get_stats(self) -> dict:
        """SMAC's statistics: ``battles_won``, ``battles_game``, ``battles_draw``, ``win_rate``, ``timeouts``,
        ``restarts``, counted since construction."""
        stats = dict(self.sim.get_stats())
        stats.setdefault("restarts", 0)
        return stats

    def _agent_index(self, agent_id: int) -> int:
        if not isinstance(agent_id, (int, np.integer)) or not 0 <= agent_id < self.n_agents:
            raise ValueError(f"agent_id={agent_id!r}; expected an int in [0, {self.n_agents})")
        return int(agent_id)

    # ------------------------------------------------------------------ misc
    def seed(self, seed: int | None = None) -> int | None:
        """SMAC's ``seed()`` returns the env's seed; with an argument (EPyMARL's ``SMACWrapper`` passes one)
        it also sets the seed of the next ``reset``, which restarts the random stream from it."""
        if seed is not None:
            self._seed = seed
            self._episode_count = 0
        return self._seed

    def render(self, mode: str = "rgb_array") -> np.ndarray:
        """The current top-down frame, ``(H, W, 3)`` uint8 (``sc2_envs.render.render_frame``).

        Raises:
            ValueError: ``mode`` other than ``"rgb_array"`` (use ``sc2_envs.render.HumanViewer`` for a window).
        """
        if mode != "rgb_array":
            raise ValueError(f"render(mode={mode!r}); only 'rgb_array' is supported here")
        if not hasattr(self.sim, "render_data"):
            raise ValueError(f"backend {self.backend!r} has no render_data(); render with backend='sim'")
        from sc2_envs.render import render_frame

        return render_frame(self.sim.render_data(0), title=f"{self.map_name}  step {self._episode_steps}/{self.episode_limit}")

    def save_replay(self) -> None:
        """SMAC writes an SC2 replay here; the simulator has none.

        Raises:
            NotImplementedError: always on the simulator (record frames with ``render()`` /
                ``sc2_envs.render.save_episode_video`` instead).
        """
        save = getattr(self.sim, "save_replay", None)
        if save is None:
            raise NotImplementedError(
                f"save_replay(): backend {self.backend!r} produces no StarCraft II replay here; record frames with "
                "env.render() (sc2_envs.render.save_episode_video), or use oxwhirl SMAC's StarCraft2Env for SC2 replays")
        save()

    def close(self) -> None:
        """Release the backend (closes StarCraft II for ``backend="sc2"``); safe to call twice."""
        close = getattr(self.sim, "close", None)
        if close is not None:
            close()

    def full_restart(self) -> None:
        """SMAC restarts the game after a connection error; the simulator only needs a new episode."""
        self.reset()
