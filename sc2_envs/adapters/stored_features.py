"""The per-agent reads of SMAC's ``MultiAgentEnv`` API, served from the arrays of the last env step.

SMAC's ``StarCraft2Env`` (oxwhirl/smac ``smac/env/starcraft2/starcraft2.py``) and SMACv2's
``StarCraftCapabilityEnvWrapper`` answer ``get_obs``, ``get_state`` and ``get_avail_actions`` from the
game's current state. Both of our adapters step a one-env batched simulator instead and keep its
output as NumPy arrays; :class:`StoredFeatures` is what they share: one place for the copies, the
agent-id check and the "call reset() first" error.
"""

from __future__ import annotations

import numpy as np
import torch

from sc2_envs.wrappers._common import as_numpy


class StoredFeatures:
    """Mixin: SMAC's per-agent getters over the arrays kept by :meth:`_keep_features`.

    The class that mixes it in provides ``sim`` (with ``obs_size`` and ``state_size``), ``n_agents``
    and ``n_actions``, sets ``_obs = _state = _avail = None`` in its constructor and calls
    :meth:`_keep_features` after every reset and step. Every getter returns a copy, so a caller that
    writes into an observation does not change what the next call returns.
    """

    _obs: np.ndarray | None  # [N, obs_size] float32
    _state: np.ndarray | None  # [state_size] float32
    _avail: np.ndarray | None  # [N, n_actions] int64 (0/1)

    def _keep_features(self, obs: torch.Tensor, state: torch.Tensor, avail: torch.Tensor) -> None:
        """Keep env 0 of a one-env batch: ``obs [1, N, obs_size]``, ``state [1, state_size]``,
        ``avail [1, N, n_actions]`` (any dtype; stored as float32, float32, int64)."""
        self._obs = as_numpy(obs[0], np.float32)
        self._state = as_numpy(state[0], np.float32)
        self._avail = as_numpy(avail[0], np.int64)

    def _require_reset(self) -> None:
        """Raises RuntimeError before the first ``reset()``, when there is nothing to read."""
        if self._obs is None:
            raise RuntimeError("call reset() before reading observations")

    def _agent_index(self, agent_id: int) -> int:
        """``agent_id`` as an int; raises ValueError naming it unless it is an int in ``[0, n_agents)``
        (a bool is refused: ``True`` would silently mean agent 1)."""
        if isinstance(agent_id, bool) or not isinstance(agent_id, (int, np.integer)) or not 0 <= agent_id < self.n_agents:
            raise ValueError(f"agent_id={agent_id!r}; expected an int in [0, {self.n_agents})")
        return int(agent_id)

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
        """The global state, ``(state_size,)`` float32."""
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
        """Number of actions per agent: no-op, stop, 4 moves, one attack per enemy (or heal per ally),
        plus SMACv2's field-of-view turns when they are on."""
        return int(self.n_actions)
