"""Stable-Baselines3 through SuperSuit: parameter-shared PPO / MaskablePPO on a SMAC battle.

The standard path (PettingZoo's SB3 tutorials, CleanRL's multi-agent scripts) turns a parallel env
into a vector env whose sub-envs are the agents, so one SB3 policy is shared by all agents::

    SC2ParallelEnv(dead_agents="absorbing")      # dead agents stay: zero obs, mask [1, 0, ..., 0]
      -> FlatObservation                          # Box obs; the mask stays in infos[agent]["action_mask"]
      -> KeepFinalInfo                            # final infos also under info["final_info"]
      -> SplitCopySeed(i)                         # copy i draws SeedSequence(seed, spawn_key=(i,))
      -> supersuit.pettingzoo_env_to_vec_env_v1   # one vector slot per agent, autoreset at episode end
      -> supersuit.vector.ConcatVecEnv            # k copies of the battle (concat_vec_envs_v1's result)
      -> SB3MaskedVecEnv                          # SB3's VecEnv API, masks, time-limit truncation

Pitfalls handled (with the upstream reports):

* **Agent death.** ``pettingzoo_env_to_vec_env_v1`` refuses envs whose agents leave; SuperSuit's
  ``black_death_v3`` would fix that but never reports a time-limit end and turns truncation into
  termination (Farama-Foundation/SuperSuit#254, unfixed in 3.11.0). The env's own absorbing mode keeps
  every agent to the end instead, so no ``black_death_v3`` is needed.
* **Truncation.** SuperSuit's ``SB3VecEnvWrapper`` (``base_class="stable_baselines3"``) merges
  ``terminations | truncations`` into SB3's ``dones`` and drops the difference, so SB3 never
  bootstraps at SMAC's time limit. ``SB3MaskedVecEnv`` sets ``info["TimeLimit.truncated"] = True``
  there; with ``info["terminal_observation"]`` (added by SuperSuit at the episode end) SB3's on-policy
  collection adds ``gamma * V(final obs)`` to the last reward.
* **Masks.** ``action_masks()`` / ``env_method("action_masks")`` return the masks of the current
  observations (``(num_envs, n_actions)`` bool), which ``sb3_contrib.MaskablePPO`` reads every step;
  after an auto-reset the mask is the new episode's (SuperSuit merges the reset infos).
* **End-of-episode infos.** At an episode end SuperSuit resets at once and merges the reset infos
  *over* the final step's infos, so ``battle_won`` / ``dead_allies`` / ... would read as the new
  episode's (a win rate logged from them is always 0). The parallel env is wrapped so the final infos
  also travel under ``info["final_info"]``, and ``SB3MaskedVecEnv`` puts them back at the top level of
  a done slot's info, except ``action_mask``, which stays the mask of the returned (new) observation.
* **Seeding.** ``concat_vec_envs_v1`` copies one env, so the copies would replay identical episodes,
  and SuperSuit's ``ConcatVecEnv.reset(seed=s)`` hands copy ``i`` the int ``s + i`` (SB3's convention
  too), so runs seeded ``s`` and ``s + 1`` would share all copies but one. Each copy is therefore built
  with its index ``i`` (``SplitCopySeed``), which turns the ``s + i`` it receives back into the run seed
  ``s`` and plays the stream ``SeedSequence(s, spawn_key=(i,))``: copy ``i`` plays exactly the battles
  of env ``i`` of ``sc2_envs.make_batched(map_name, num_envs=num_battles, seed=s)``, and distinct run
  seeds never share a copy. SB3's API is unchanged (``PPO(..., seed=s)`` / ``venv.seed(s)``).

Vector slot ``j`` is agent ``j % n_agents`` of battle copy ``j // n_agents``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo.utils import BaseParallelWrapper
from stable_baselines3.common.vec_env import VecEnv

from sc2_envs.adapters.pettingzoo_views import FlatObservation
from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

__all__ = ["KeepFinalInfo", "SB3MaskedVecEnv", "SplitCopySeed", "make_sb3_vec_env"]


class KeepFinalInfo(BaseParallelWrapper):
    """Copies each agent's info into ``info["final_info"]`` on the step that ends the episode.

    SuperSuit's ``MarkovVectorEnv`` merges the auto-reset infos over the final ones; keys only the final
    step has survive, so the final ``battle_won``, ``dead_allies``, ... stay readable.
    """

    def __init__(self, env):
        super().__init__(env)
        self.metadata = env.metadata
        self.render_mode = getattr(env, "render_mode", None)
        self.observation_spaces = {a: env.observation_space(a) for a in env.possible_agents}

    def step(self, actions):
        obs, rew, term, trunc, infos = self.env.step(actions)
        if not self.env.agents:
            infos = {a: {**info, "final_info": dict(info)} for a, info in infos.items()}
        return obs, rew, term, trunc, infos


class SplitCopySeed(BaseParallelWrapper):
    """Battle copy ``copy_index`` of a SuperSuit ``ConcatVecEnv``: int seeds become split streams.

    ``ConcatVecEnv.reset(seed=s)`` calls copy ``i``'s ``reset(seed=s + i)``. This wrapper recovers
    ``s = seed - copy_index`` and resets the battle with ``SeedSequence(s, spawn_key=(copy_index,))``
    (NumPy seed splitting, numpy/random/bit_generator.pyx), the stream of env ``copy_index`` of
    ``make_batched(map, num_envs, seed=s)``. So ``(s, i)`` pairs never share a battle stream, whereas
    with plain ``s + i`` seed 1's copy 0 would be seed 0's copy 1. ``None`` continues the stream.

    Args:
        env: a parallel env whose ``reset(seed=...)`` accepts a one-element list of ``SeedSequence``
            (``SC2ParallelEnv`` and wrappers of it).
        copy_index: the copy's position ``i >= 0`` in the ``ConcatVecEnv``.

    Raises:
        ValueError: ``copy_index`` is negative, or ``reset`` gets an int seed below ``copy_index``
            (no non-negative run seed ``s`` gives it), or a negative int.
        TypeError: ``reset`` gets a seed that is neither an int nor None.
    """

    def __init__(self, env, copy_index: int):
        if not isinstance(copy_index, (int, np.integer)) or isinstance(copy_index, bool) or copy_index < 0:
            raise ValueError(f"copy_index must be a non-negative int, got {copy_index!r}")
        super().__init__(env)
        self.copy_index = int(copy_index)
        self.metadata = env.metadata
        self.render_mode = getattr(env, "render_mode", None)
        self.observation_spaces = {a: env.observation_space(a) for a in env.possible_agents}

    def reset(self, seed=None, options=None):
        if seed is None:
            return self.env.reset(seed=None, options=options)
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int (ConcatVecEnv passes run seed + copy index) or None, got {seed!r}")
        base = int(seed) - self.copy_index
        if base < 0:
            raise ValueError(
                f"copy {self.copy_index} got seed {seed!r}; expected run seed + {self.copy_index} with a non-negative run seed"
            )
        child = np.random.SeedSequence(base, spawn_key=(self.copy_index,))
        return self.env.reset(seed=[child], options=options)


class SB3MaskedVecEnv(VecEnv):
    """SB3 ``VecEnv`` over a gymnasium-style SuperSuit vector env whose infos carry ``action_mask``.

    Args:
        venv: the output of ``supersuit.concat_vec_envs_v1(..., base_class="gymnasium")`` (or of
            ``pettingzoo_env_to_vec_env_v1``): ``reset(seed) -> (obs, infos)``, ``step(actions) -> (obs,
            rewards, terminations, truncations, infos)`` with a list of per-slot info dicts.
        n_agents: agents per battle (for the documentation of slots; checked against ``num_envs``).

    Raises:
        ValueError: ``venv.num_envs`` is not a multiple of ``n_agents``.
    """

    def __init__(self, venv, n_agents: int):
        if venv.num_envs % n_agents:
            raise ValueError(f"venv.num_envs={venv.num_envs} is not a multiple of n_agents={n_agents}")
        self.venv = venv
        self.n_agents = n_agents
        self.render_mode = None
        super().__init__(venv.num_envs, venv.observation_space, venv.action_space)
        self._masks = np.ones((self.num_envs, self.action_space.n), bool)
        self._actions: np.ndarray | None = None

    def _read_masks(self, infos: list[dict]) -> None:
        try:
            self._masks = np.stack([np.asarray(info["action_mask"], bool) for info in infos])
        except KeyError:
            raise KeyError(
                "an info dict has no 'action_mask'; wrap the parallel env in "
                "sc2_envs.adapters.pettingzoo_views.FlatObservation (it moves the mask into "
                "infos[agent]['action_mask']) or build it with info_action_mask=True"
            ) from None

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        obs, infos = self.venv.reset(seed=seed)
        self._reset_seeds()
        self.reset_infos = infos
        self._read_masks(infos)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, rewards, terminations, truncations, infos = self.venv.step(self._actions)
        terminations = np.asarray(terminations, bool)
        truncations = np.asarray(truncations, bool)
        self._read_masks(infos)  # merged infos: the masks of the returned (possibly reset) observations
        for i, info in enumerate(infos):
            if truncations[i] and not terminations[i]:
                info["TimeLimit.truncated"] = True
            final = info.get("final_info")
            if final is not None:
                info.update({k: v for k, v in final.items() if k != "action_mask"})
        return obs, np.asarray(rewards, np.float32), terminations | truncations, infos

    def action_masks(self) -> np.ndarray:
        """Masks of the current observations: ``(num_envs, n_actions)`` bool (SMAC's ``avail_actions``)."""
        return self._masks.copy()

    def close(self) -> None:
        self.venv.close()

    def has_attr(self, attr_name: str) -> bool:
        return attr_name in ("action_masks", "render_mode")

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name == "render_mode":
            return [None] * len(self._get_indices(indices))
        raise AttributeError(f"SB3MaskedVecEnv has no per-env attribute {attr_name!r} (only 'render_mode')")

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"SB3MaskedVecEnv cannot set {attr_name!r} on the SuperSuit sub-envs")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        if method_name == "action_masks":
            return list(self._masks[self._get_indices(indices)])
        raise AttributeError(f"SB3MaskedVecEnv supports env_method('action_masks') only, got {method_name!r}")

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    def _get_indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)


def make_sb3_vec_env(map_name: str = "3m", num_battles: int = 1, seed: int | None = None, **env_kwargs) -> SB3MaskedVecEnv:
    """The SuperSuit pipeline of the module docstring, ready for ``PPO`` / ``MaskablePPO``.

    Args:
        map_name: SMAC map; all its agents must share one observation and action space (true for every
            SMAC map: the observation has a fixed layout and ``n_actions`` is per map).
        num_battles: battle copies (``concat_vec_envs_v1``'s ``num_vec_envs``), stepped in this process.
        seed: seed of the first reset: copy ``i`` plays ``SeedSequence(seed, spawn_key=(i,))``, the stream
            of env ``i`` of ``make_batched(map_name, num_envs=num_battles, seed=seed)`` (``SplitCopySeed``),
            so distinct seeds share no copy. SB3's ``seed=`` argument (``venv.seed(s)``) overrides it.
        **env_kwargs: ``SC2ParallelEnv`` keywords (``loops_per_tick``, ``lenient_actions``, SMAC options).
            ``dead_agents`` is fixed to ``"absorbing"``.

    Returns:
        ``SB3MaskedVecEnv`` with ``num_battles * n_agents`` slots.

    Raises:
        ValueError: ``dead_agents`` other than ``"absorbing"`` was passed, ``num_battles`` is not a
            positive int, or ``seed`` is negative.
        TypeError: ``seed`` is neither an int nor None.
    """
    import supersuit as ss
    from supersuit.vector import ConcatVecEnv

    if env_kwargs.pop("dead_agents", "absorbing") != "absorbing":
        raise ValueError(
            "the SuperSuit path needs dead_agents='absorbing' (pettingzoo_env_to_vec_env_v1 "
            "rejects agents that leave the episode)"
        )
    if not isinstance(num_battles, (int, np.integer)) or isinstance(num_battles, bool) or num_battles < 1:
        raise ValueError(f"num_battles must be a positive int, got {num_battles!r}")
    if seed is not None:  # checked here: venv.seed only stores it, and the first reset would fail far from the call
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        if seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed}")

    def copy_fn(i: int):
        def make():
            par = SC2ParallelEnv(map_name, dead_agents="absorbing", **env_kwargs)
            return ss.pettingzoo_env_to_vec_env_v1(SplitCopySeed(KeepFinalInfo(FlatObservation(par)), i))

        return make

    # concat_vec_envs_v1(..., num_cpus=0, base_class="gymnasium") is ConcatVecEnv over pickled copies of
    # one env; building each copy here lets it know its index for the seed split.
    venv = ConcatVecEnv([copy_fn(i) for i in range(int(num_battles))])
    n_agents = len(venv.vec_envs[0].par_env.possible_agents)
    env = SB3MaskedVecEnv(venv, n_agents)
    if seed is not None:
        env.seed(seed)
    return env
