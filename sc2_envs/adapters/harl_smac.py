"""Train HARL (PKU-MARL/HARL: HAPPO, HATRPO, MAPPO, ...) on the embedded simulator, HARL unedited.

HARL is not on the package registries; clone it (github.com/PKU-MARL/HARL) and launch its own
training entry point (``examples/train.py``) through this module::

    pip install setproctitle tensorboardX pyyaml absl-py      # HARL's runtime imports
    python -m sc2_envs.adapters.harl_smac --harl-path /path/to/HARL \\
        --algo happo --env smac --exp_name sim3m --map_name 3m --state_type FP \\
        --n_rollout_threads 4 --episode_length 100 --num_env_steps 200000 --cuda False

With ``--sc2api`` HARL's own SMAC env (``harl/envs/smac/StarCraft2_Env.py``, pysc2-based, with its
MAPPO-style agent-specific states) runs unedited against the simulator's StarCraft II API server
instead (``install_sc2api_shims``; docs/smac_codebases.md, Route 2). Under NumPy 2 its ``step`` is
handed flat ``(N,)`` actions (it calls ``int()`` on ``(1,)`` rows, which NumPy 2 refuses).

Every other argument goes to HARL's ``train.py`` unchanged (HARL's own
``--key value`` overrides of its YAML configs). The launcher, before HARL is imported:

* registers :class:`HARLStarCraft2Env` as ``harl.envs.smac.StarCraft2_Env.StarCraft2Env`` and our
  map table as ``harl.envs.smac.smac_maps`` (HARL's versions import pysc2 and start the game), so
  ``--env smac`` runs on the simulator;
* restores NumPy's removed aliases ``np.int`` / ``np.float`` / ``np.bool`` (as the builtins) when
  absent: HARL's SMAC logger and off-policy runner still use ``np.int``, gone since NumPy 1.24.

``HARLStarCraft2Env`` has the env interface HARL's runners, vector envs and SMAC logger use
(``harl/envs/smac/StarCraft2_Env.py`` at PKU-MARL/HARL d539bad):

* ``observation_space`` / ``share_observation_space``: per agent ``[obs_dim]`` / ``[state_dim]``
  lists; ``action_space``: per agent ``Discrete(n_actions)``;
* ``reset() -> (obs (N, obs_dim), share_obs (N, state_dim), avail (N, n_actions))``;
* ``step(actions (N, 1)) -> (obs, share_obs, rewards [[r]] * N, dones (N,) bool, infos, avail)``
  where ``dones[i]`` is the episode end or agent ``i``'s death, and every ``infos[i]`` has
  ``battles_won``, ``battles_game``, ``battles_draw``, ``restarts``, ``bad_transition`` (True at the
  time limit only: with ``use_proper_time_limits`` HARL turns it into ``bad_masks``, which zero a
  truncated step's GAE advantage, ``harl/common/buffers/on_policy_critic_buffer_ep.py``) and ``won``.

Observation / state layout (differs from HARL's own SMAC env, which is MAPPO's): the observation is
SMAC v1's (``obs_last_action=True``, HARL's default) followed by the agent's one-hot id
(``obs_agent_id=True``); the state per agent ("per-agent states") is SMAC's global state followed
by the agent's one-hot id with ``state_type="FP"`` (HARL's default) and SMAC's global state alone
with ``"EP"``. HARL's feature-pruned agent-specific features (distances and relative positions to
the agent, enemy actions) are not reproduced; the sizes HARL reads from the spaces are ours.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

from sc2_envs.adapters.smac_compat import StarCraft2Env
from sc2_envs.maps import get_map
from sc2_envs.numpy_aliases import restore_numpy_aliases

__all__ = ["HARLStarCraft2Env", "get_map_params", "install_harl_shims", "install_sc2api_shims", "main"]

_SIM_KEYS = ("spawn_jitter", "loops_per_tick", "device", "lenient_actions")
_HARL_ONLY_KEYS = ("state_type", "obs_agent_id", "state_agent_id", "state_pathing_grid", "state_terrain_height", "map_name")


def get_map_params(map_name: str) -> dict:
    """HARL's ``smac_maps.get_map_params``: SMAC's map table entry (``n_agents``, ``n_enemies``,
    ``limit``, ``a_race``, ``b_race``, ``unit_type_bits``, ``map_type``) from our registry.

    Raises:
        ValueError: an unknown map (the message lists the supported ones).
    """
    spec = get_map(map_name)
    return {
        "n_agents": spec.n_agents,
        "n_enemies": spec.n_enemies,
        "limit": spec.episode_limit,
        "a_race": spec.a_race,
        "b_race": spec.b_race,
        "unit_type_bits": spec.unit_type_bits,
        "map_type": spec.map_type,
    }


class HARLStarCraft2Env:
    """HARL's SMAC env interface on the embedded simulator (module docstring).

    Args:
        args: HARL's ``env_args`` dict: ``map_name`` (required), ``state_type`` (``"FP"`` per-agent
            state with the agent id, default; ``"EP"`` SMAC's global state for every agent),
            ``obs_agent_id`` (default True), any SMAC ``StarCraft2Env`` keyword (``obs_last_action``
            defaults to True as in HARL) and the simulator's ``spawn_jitter`` / ``loops_per_tick``.

    Raises:
        ValueError: no ``map_name``, an unknown map or ``state_type``.
    """

    def __init__(self, args: dict | None = None, **kwargs: Any):
        args = dict(args or {}, **kwargs)
        if "map_name" not in args:
            raise ValueError("HARL env_args must have a map_name (e.g. 3m); got keys " + str(sorted(args)))
        self.map_name = args["map_name"]
        self.state_type = args.get("state_type", "FP")
        if self.state_type not in ("FP", "EP"):
            raise ValueError(f"state_type={self.state_type!r}; expected 'FP' (per-agent states) or 'EP'")
        self.obs_agent_id = bool(args.get("obs_agent_id", True))
        smac_kwargs = {k: v for k, v in args.items() if k not in _HARL_ONLY_KEYS}
        smac_kwargs.setdefault("obs_last_action", True)
        self.env = StarCraft2Env(self.map_name, **smac_kwargs)
        self.n_agents = self.env.n_agents
        self.n_enemies = self.env.n_enemies
        self.n_actions = self.env.n_actions
        self.episode_limit = self.env.episode_limit
        from gymnasium.spaces import Discrete

        obs_dim = self.env.get_obs_size() + (self.n_agents if self.obs_agent_id else 0)
        state_dim = self.env.get_state_size() + (self.n_agents if self.state_type == "FP" else 0)
        self.action_space = [Discrete(self.n_actions) for _ in range(self.n_agents)]
        self.observation_space = [[obs_dim] for _ in range(self.n_agents)]
        self.share_observation_space = [[state_dim] for _ in range(self.n_agents)]
        self._eye = np.eye(self.n_agents, dtype=np.float32)

    def seed(self, seed: int) -> None:
        """Seed the next episode (HARL seeds each rollout thread ``seed + rank * 1000``)."""
        self.env.seed(int(seed))

    def _views(self):
        obs = np.stack(self.env.get_obs())
        if self.obs_agent_id:
            obs = np.concatenate([obs, self._eye], axis=1)
        state = np.broadcast_to(self.env.get_state(), (self.n_agents, self.env.get_state_size()))
        if self.state_type == "FP":
            state = np.concatenate([state, self._eye], axis=1)
        return obs, np.array(state, dtype=np.float32), np.array(self.env.get_avail_actions(), dtype=np.float32)

    def reset(self):
        """Start an episode: ``(obs (N, obs_dim), share_obs (N, state_dim), avail (N, n_actions))`` float32."""
        self.env.reset()
        return self._views()

    def step(self, actions):
        """One env step (8 game loops) with ``actions`` shaped ``(N, 1)`` or ``(N,)`` (module docstring)."""
        reward, terminated, _info = self.env.step(np.asarray(actions).reshape(self.n_agents, -1)[:, 0])
        bad_transition = bool(terminated and self.env.timed_out)
        stats = self.env.get_stats()
        infos = [
            {
                "battles_won": stats["battles_won"],
                "battles_game": stats["battles_game"],
                "battles_draw": stats["battles_draw"],
                "restarts": stats["restarts"],
                "bad_transition": bad_transition,
                "won": bool(self.env.win_counted),
            }
            for _ in range(self.n_agents)
        ]
        dones = np.array([terminated or bool(self.env.death_tracker_ally[i]) for i in range(self.n_agents)], dtype=bool)
        obs, state, avail = self._views()
        return obs, state, [[reward]] * self.n_agents, dones, infos, avail

    def get_env_info(self) -> dict:
        """SMAC's ``get_env_info`` with HARL's sizes."""
        info = self.env.get_env_info()
        info.update(obs_shape=self.observation_space[0][0], state_shape=self.share_observation_space[0][0])
        return info

    def get_stats(self) -> dict:
        """SMAC's statistics (``battles_won``, ``battles_game``, ...)."""
        return self.env.get_stats()

    def render(self, mode: str = "rgb_array"):
        """A top-down frame (``StarCraft2Env.render``)."""
        return self.env.render(mode=mode)

    def save_replay(self):
        """Write the simulator replay (``StarCraft2Env.save_replay``); returns its path."""
        return self.env.save_replay()

    def close(self) -> None:
        """Release the simulator; safe to call twice."""
        self.env.close()


def install_harl_shims() -> None:
    """Make ``import harl`` run ``--env smac`` on the simulator (module docstring); idempotent."""
    restore_numpy_aliases()
    env_mod = types.ModuleType("harl.envs.smac.StarCraft2_Env")
    env_mod.StarCraft2Env = HARLStarCraft2Env
    env_mod.__doc__ = "sc2_envs shim: HARL's SMAC env on the embedded simulator (sc2_envs.adapters.harl_smac)."
    maps_mod = types.ModuleType("harl.envs.smac.smac_maps")
    maps_mod.get_map_params = get_map_params
    sys.modules["harl.envs.smac.StarCraft2_Env"] = env_mod
    sys.modules["harl.envs.smac.smac_maps"] = maps_mod


def install_sc2api_shims() -> Path:
    """For ``--sc2api``: HARL's own SMAC env (pysc2, ``gym``) runs unedited against the API server.

    Restores NumPy's removed aliases, serves ``import pysc2`` from pysc2-evolved when PyPI pysc2 is
    absent (``sc2_envs.sc2api.pysc2_alias``), serves ``import gym`` from gymnasium when gym is absent
    (HARL's env only uses ``gym.spaces.Discrete``), and points ``SC2PATH`` at a simulator install
    (a temporary one when ``SC2PATH`` is unset or holds no ``SC2_x64`` of ours).

    Returns:
        The ``SC2PATH`` in use.
    """
    import tempfile

    from sc2_envs.sc2api import pysc2_alias
    from sc2_envs.sc2api.install import install

    restore_numpy_aliases()
    if _missing("pysc2"):
        pysc2_alias.install()
    if _missing("gym"):
        import gymnasium

        sys.modules["gym"] = gymnasium
        sys.modules["gym.spaces"] = gymnasium.spaces
    root = Path(os.environ["SC2PATH"]) if os.environ.get("SC2PATH") else None
    ours = root is not None and any(b"sc2_envs" in p.read_bytes() for p in root.glob("Versions/Base*/SC2_x64"))
    if not ours:
        root = Path(tempfile.mkdtemp(prefix="sc2sim-"))
        install(root)
        os.environ["SC2PATH"] = str(root)
    return root


def _numpy2_action_fix() -> None:
    """HARL's env does ``int(a)`` on each row of the ``(N, 1)`` action array, which NumPy 2 refuses
    ("only 0-dimensional arrays can be converted"); hand its ``step`` a flat ``(N,)`` array instead."""
    from harl.envs.smac import StarCraft2_Env as harl_env

    cls = harl_env.StarCraft2Env
    if getattr(cls.step, "_sc2_envs_flat", False):
        return
    original = cls.step

    def step(self, actions):
        return original(self, np.asarray(actions).reshape(len(actions), -1)[:, 0].copy())

    step._sc2_envs_flat = True
    cls.step = step


def _find_harl(path: str | None) -> Path:
    candidates = [path, os.environ.get("HARL_PATH")]
    for c in candidates:
        if c:
            root = Path(c).expanduser().resolve()
            if not (root / "harl" / "__init__.py").is_file() or not (root / "examples" / "train.py").is_file():
                raise FileNotFoundError(
                    f"{root} is not a HARL checkout (expected harl/__init__.py and examples/train.py); "
                    "git clone https://github.com/PKU-MARL/HARL"
                )
            return root
    raise FileNotFoundError(
        "no HARL checkout given: pass --harl-path DIR or set HARL_PATH (git clone https://github.com/PKU-MARL/HARL)"
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m sc2_envs.adapters.harl_smac --harl-path DIR <HARL train.py arguments>``."""
    parser = argparse.ArgumentParser(
        prog="python -m sc2_envs.adapters.harl_smac",
        add_help=True,
        description="Run HARL's examples/train.py with --env smac on the embedded simulator.",
    )
    parser.add_argument("--harl-path", default=None, help="HARL checkout (default: $HARL_PATH)")
    parser.add_argument(
        "--sc2api",
        action="store_true",
        help="run HARL's own pysc2-based SMAC env against the simulator's StarCraft II API server "
        "($SC2PATH from 'python -m sc2_envs.sc2api install', else a temporary one)",
    )
    args, rest = parser.parse_known_args(argv)
    root = _find_harl(args.harl_path)
    missing = [m for m in ("setproctitle", "tensorboardX", "yaml", "absl") if _missing(m)]
    if missing:
        raise SystemExit(f"HARL needs {', '.join(missing)}: pip install setproctitle tensorboardX pyyaml absl-py")
    sys.path.insert(0, str(root))
    if args.sc2api:
        install_sc2api_shims()
        _numpy2_action_fix()
    else:
        install_harl_shims()
    sys.argv = [str(root / "examples" / "train.py"), *rest]
    runpy.run_path(str(root / "examples" / "train.py"), run_name="__main__")


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


if __name__ == "__main__":
    main()
