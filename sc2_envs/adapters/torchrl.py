"""TorchRL (and BenchMARL-style) access to a SMAC battle through ``torchrl.envs.PettingZooWrapper``.

``make_torchrl_env`` sets the wrapper's options for SMAC's semantics; TorchRL's defaults would not:

* ``done_on_any=False``. For parallel envs TorchRL's default is ``any()`` over the agents' done flags,
  which ends a SMAC episode at the first unit death. With ``False`` the root
  ``done`` / ``terminated`` / ``truncated`` are the ``all()`` of the agents' flags.
* ``dead_agents="absorbing"`` (default): dead agents stay in the group, with a zero observation, the
  action mask ``[True, False, ..., False]`` (only no-op) and ``done=False`` until the battle ends, as in
  SMAC / pymarl; the agent set never changes, which BenchMARL requires (BenchMARL #177).
  ``dead_agents="remove"`` (PettingZoo's contract) needs ``use_mask=True``: TorchRL then writes
  ``(group, "mask") = False`` for agents that have left (torchrl >= 0.14, see ``REMOVE_MIN_TORCHRL``).
* Masks: the env is seen through ``FlatObservation`` (Box observation, mask only in
  ``infos[agent]["action_mask"]``); TorchRL moves the info mask to ``(group, "action_mask")`` (bool,
  ``[n_agents, n_actions]``) and restricts the action spec; use it with ``MaskedCategorical``. With the
  mask in both the observation and the infos (``sc2_smac_v0``'s default), torchrl 0.14.1's ``_reset``
  raises ``TypeError: 'NoneType' object does not support item assignment``: it removes the mask from
  the info spec but then writes the info's copy.
* Time limit: every agent's ``truncated`` is True at SMAC's ``episode_limit``, so the root
  ``truncated`` is True and ``terminated`` False; ``("next", ...)`` holds the final observation
  (TorchRL resets in a separate ``"_reset"`` step), so GAE bootstraps it.
* ``return_state=True``: SMAC's global state under ``"state"`` (``[state_size]`` float32).

Agent names ``agent_0 .. agent_{N-1}`` put all agents in one group ``"agent"`` (TorchRL groups by the
``<prefix>_<int>`` pattern); ``agent_names="unit_type"`` gives one group per unit type.
"""

from __future__ import annotations

import numpy as np

from sc2_envs.adapters.pettingzoo_views import FlatObservation
from sc2_envs.sim.options import as_device
from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

__all__ = ["REMOVE_MIN_TORCHRL", "make_torchrl_env"]

REMOVE_MIN_TORCHRL = "0.14"
"""``dead_agents="remove"`` fails with ``KeyError: 'agent_2'`` on torchrl 0.11.1 (pytorch/rl #3702) and
works on 0.14.1 (both checked with tests/integrations/test_torchrl.py); absorbing mode works on both."""


def make_torchrl_env(
    map_name: str = "3m", *, dead_agents: str = "absorbing", return_state: bool = True, device: str = "cpu", **env_kwargs
):
    """``PettingZooWrapper`` over ``SC2ParallelEnv`` with SMAC's episode semantics (module docstring).

    Args:
        map_name: SMAC map name.
        dead_agents: ``"absorbing"`` (default) or ``"remove"`` (then ``use_mask=True``).
        return_state: add SMAC's global state as ``"state"``; a bool (``numpy.bool_`` too).
        device: device of TorchRL's tensordicts (the simulator runs on CPU).
        **env_kwargs: other ``SC2ParallelEnv`` keywords (``seed``, ``loops_per_tick``, SMAC options ...).

    Returns:
        ``torchrl.envs.PettingZooWrapper`` (batch size ``[]``; one env step per frame).

    Raises:
        TypeError: ``return_state`` is not a bool (checked before anything is built).
        ValueError: ``device`` is not ``'cpu'`` or a visible CUDA device (named; checked before
            anything is built), ``dead_agents`` other than ``"absorbing"`` / ``"remove"`` (``SC2ParallelEnv``), or
            ``"remove"`` with a torchrl older than ``REMOVE_MIN_TORCHRL``.
    """
    if not isinstance(return_state, (bool, np.bool_)):  # TorchRL reads it by truth value: "no" would add the state
        raise TypeError(f"return_state must be a bool (True: SMAC's global state under 'state'), got {return_state!r}")
    device = as_device(device)  # 'gpu', 5.5, 'cuda' without CUDA: a ValueError naming it, not torch's own message
    import torchrl
    from packaging.version import Version
    from torchrl.envs import PettingZooWrapper

    if dead_agents == "remove" and Version(torchrl.__version__) < Version(REMOVE_MIN_TORCHRL):
        raise ValueError(
            f"dead_agents='remove' needs torchrl>={REMOVE_MIN_TORCHRL} (installed {torchrl.__version__}): "
            "older PettingZooWrapper raise KeyError for a removed agent with action masks and "
            "done_on_any=False (pytorch/rl #3702); use dead_agents='absorbing'"
        )
    par = FlatObservation(SC2ParallelEnv(map_name, dead_agents=dead_agents, **env_kwargs))
    return PettingZooWrapper(
        par,
        return_state=bool(return_state),
        use_mask=dead_agents == "remove",
        done_on_any=False,
        categorical_actions=True,
        device=device,
    )
