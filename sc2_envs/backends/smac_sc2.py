"""Real StarCraft II backend: the batched contract over oxwhirl SMAC's ``StarCraft2Env`` (``B = 1``).

``make_sc2_backend(map_name)`` returns an object with the same ``reset`` / ``step`` dict outputs,
attributes, ``get_env_info`` and ``get_stats`` as the embedded simulator's ``make_batched(map_name,
num_envs=1)``, so the wrappers and a trained policy move between the simulator and the game unchanged.

Install (an optional extra, git only):

    pip install "smac @ git+https://github.com/oxwhirl/smac.git"

The PyPI package called ``smac`` is SMAC3, an unrelated AutoML optimiser; it is detected and
reported. The game must be installed where pysc2 looks for it: ``$SC2PATH``, or by default
``~/StarCraftII`` (Linux), ``C:/Program Files (x86)/StarCraft II`` (Windows) or
``/Applications/StarCraft II`` (macOS), with SMAC's maps copied to ``$SC2PATH/Maps/SMAC_Maps``.
``SC2PATH`` may also be a folder laid out by ``python -m sc2_envs.sc2api install --path DIR``: SMAC
then talks to the embedded simulator through the StarCraft II API (docs/smac_codebases.md). When
PyPI ``pysc2`` is absent but ``pysc2-evolved`` (the ``full-game`` extra) is installed, SMAC's
``import pysc2`` is served by it (``sc2_envs.sc2api.pysc2_alias``).

Shared layouts. Both backends produce SMAC's vectors (oxwhirl/smac d6aab33,
``StarCraft2Env.get_obs_agent`` / ``get_state_dict`` / ``get_avail_agent_actions``):

* obs ``[B, N, obs_size]`` = ``[move | enemy (n_enemies x enemy_feats) | ally ((N-1) x ally_feats) |
  own | timestep]``;
* state ``[B, state_size]`` = ``[ally (N x ally_state_feats) | enemy (n_enemies x enemy_state_feats) |
  last_action (N x n_actions) | timestep]``;
* avail_actions ``[B, N, n_actions]``: 0 no-op (dead agents only), 1 stop, 2..5 move N/S/E/W,
  ``6 + j`` attack enemy ``j`` (a medivac heals ally ``j``).

Here the vectors come straight from SMAC's ``get_obs`` / ``get_state`` / ``get_avail_actions``;
``get_env_info()["obs_layout"]`` and ``["state_layout"]`` are read from SMAC's own size methods
(``get_obs_move_feats_size``, ``get_obs_enemy_feats_size``, ...), so they describe exactly what the
game produced. One SMAC quirk is kept: with ``obs_timestep_number=True`` SMAC's
``get_obs_own_feats_size`` counts the timestep and ``get_obs_agent`` appends it again, so the real
vector is one longer than ``StarCraft2Env.get_obs_size()``; ``obs_size`` here is the real length and
the layout shows the extra (always zero) own slot.

Episode semantics mapped onto ours (SMAC's ``step(actions) -> reward, terminated, info``):

* a battle end (win, loss, draw) -> ``terminated=True``; ``battle_won`` from ``info["battle_won"]``;
* the time limit -> ``truncated=True, terminated=False, episode_limit=True``. SMAC reports a timeout
  as terminal and flags ``info["episode_limit"]`` only with ``continuing_episode=True``, so this
  backend passes ``continuing_episode=True`` unless told otherwise and, either way, recognises a
  timeout by SMAC's ``timeouts`` counter going up (SMAC checks the battle end before the limit, so a
  win on the last step stays a win);
* SMAC's answer to a lost game connection, ``(0, True, {})`` after relaunching the game, raises
  :class:`SC2GameError` (``on_game_error="raise"``, default) or ends the episode as truncated and
  uncounted (``"truncate"``), never as a silent loss.

Seeds: SC2 takes its random seed only when a game is created (``RequestCreateGame.random_seed``). A
``reset(seed=s)`` therefore relaunches the game with seed ``s`` (``reseed="relaunch"``, default; tens of
seconds) or warns that the seed cannot reach a running game (``reseed="warn"``). Unseeded resets use
SMAC's fast restart. Even with a seed, SC2 episodes are not guaranteed to repeat (oxwhirl/smac#45).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from sc2_envs.maps import get_map

__all__ = [
    "SMAC_REQUIREMENT",
    "SC2BackendUnavailable",
    "SC2GameError",
    "SC2Backend",
    "make_sc2_backend",
    "default_sc2_path",
]

SMAC_REQUIREMENT = "smac @ git+https://github.com/oxwhirl/smac.git"
"""The pip requirement of oxwhirl SMAC (not on PyPI; the PyPI ``smac`` is SMAC3, an AutoML tool)."""

_STOP, _NOOP = 1, 0  # SMAC action ids: stop (any living unit), no-op (dead units only)


class SC2BackendUnavailable(ImportError):
    """oxwhirl SMAC, pysc2 or the StarCraft II game (or SMAC's maps) is missing."""


class SC2GameError(RuntimeError):
    """SMAC lost the connection to the game mid-episode (it has relaunched the game; call ``reset``)."""


def default_sc2_path(platform: str | None = None) -> Path:
    """Where pysc2 looks for the game when ``SC2PATH`` is unset.

    Source: pysc2 ``run_configs/platforms.py`` (``Linux``: ``~/StarCraftII``; ``Windows``:
    ``C:/Program Files (x86)/StarCraft II``; ``MacOS``: ``/Applications/StarCraft II``).

    Args:
        platform: a ``sys.platform`` value; defaults to the running platform.
    """
    platform = sys.platform if platform is None else platform
    if platform.startswith("win") or platform == "cygwin":
        return Path("C:/Program Files (x86)/StarCraft II")
    if platform == "darwin":
        return Path("/Applications/StarCraft II")
    return Path("~/StarCraftII").expanduser()


def _sc2_path() -> Path:
    env = os.environ.get("SC2PATH")
    return Path(env).expanduser() if env else default_sc2_path()


def _install_help(map_name: str) -> str:
    root = _sc2_path()
    return (
        "The 'sc2' backend runs oxwhirl SMAC on the real StarCraft II game. It needs:\n"
        f'  1. SMAC from git:  pip install "{SMAC_REQUIREMENT}"  (it brings pysc2; the PyPI package '
        "named 'smac' is SMAC3, an unrelated AutoML optimiser, and does not work);\n"
        "  2. the StarCraft II game (Linux: the Blizzard headless build, e.g. SC2.4.10, unzipped) at "
        "$SC2PATH, or by default ~/StarCraftII on Linux, C:/Program Files (x86)/StarCraft II on Windows, "
        "/Applications/StarCraft II on macOS"
        f" (now looking in {root}, SC2PATH={'unset' if 'SC2PATH' not in os.environ else repr(os.environ['SC2PATH'])});\n"
        "  3. SMAC's maps (the SMAC_Maps folder from https://github.com/oxwhirl/smac/releases) in "
        f"$SC2PATH/Maps/SMAC_Maps, i.e. {root / 'Maps' / 'SMAC_Maps' / (map_name + '.SC2Map')}.\n"
        "Without the game, use the embedded simulator: sc2_envs.make_batched(map_name, ...)."
    )


def _smac_dist_summary() -> str | None:
    """Summary line of the installed distribution named ``smac``, or None if there is none."""
    try:
        meta = importlib.metadata.metadata("smac")
    except importlib.metadata.PackageNotFoundError:
        return None
    return f"{meta.get('Summary', '')} (version {meta.get('Version', '?')})"


def _import_starcraft2env(map_name: str) -> Callable[..., Any]:
    """Import ``smac.env.StarCraft2Env`` lazily, with an actionable error when it is missing."""
    summary = _smac_dist_summary()
    if summary is not None and "starcraft" not in summary.lower():
        # Checked before importing: SMAC3's package is also called ``smac`` and its import is slow.
        raise SC2BackendUnavailable(
            f"the installed package 'smac' is not oxwhirl SMAC but {summary!r}, which is SMAC3, the "
            "AutoML optimiser from PyPI. Uninstall it (pip uninstall smac) and install oxwhirl SMAC.\n"
            + _install_help(map_name)
        )
    if importlib.util.find_spec("smac") is None:
        raise SC2BackendUnavailable("oxwhirl SMAC is not installed.\n" + _install_help(map_name))
    if importlib.util.find_spec("pysc2") is None and importlib.util.find_spec("pysc2_evolved") is not None:
        # SMAC imports pysc2; this project's full-game extra installs the maintained fork under its own name.
        from sc2_envs.sc2api import pysc2_alias

        pysc2_alias.install()
    try:
        from smac.env import StarCraft2Env
    except Exception as exc:  # pysc2 / protobuf import failures surface here (pysc2#355)
        raise SC2BackendUnavailable(
            f"importing smac.env.StarCraft2Env failed: {type(exc).__name__}: {exc}. With protobuf>=4, "
            "try PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python or 'protobuf<3.21' (SMAC's pin).\n" + _install_help(map_name)
        ) from exc
    return StarCraft2Env


def _check_game_installed(map_name: str) -> None:
    """Fail before launching when the game folder or SMAC's map file is missing."""
    root = _sc2_path()
    if not (root / "Versions").is_dir():
        raise SC2BackendUnavailable(
            f"StarCraft II was not found: {root / 'Versions'} does not exist.\n" + _install_help(map_name)
        )
    map_file = root / "Maps" / "SMAC_Maps" / f"{map_name}.SC2Map"
    if not map_file.is_file():
        raise SC2BackendUnavailable(f"SMAC map file {map_file} does not exist.\n" + _install_help(map_name))


def _smac_layouts(env: Any) -> tuple[dict, dict, int, int]:
    """Obs / state layouts read from SMAC's own size methods and attributes.

    Returns:
        ``(obs_layout, state_layout, obs_size, state_size)`` in the format of the simulator's
        ``get_env_info`` (feature names follow the order of SMAC's ``get_obs_agent`` and
        ``get_state_dict``).
    """
    utb = int(env.unit_type_bits)
    types = [f"type_{i}" for i in range(utb)]
    health = ["health"] if env.obs_all_health else []
    move = int(env.get_obs_move_feats_size())
    n_en, nf_en = env.get_obs_enemy_feats_size()
    n_al, nf_al = env.get_obs_ally_feats_size()
    own = int(env.get_obs_own_feats_size())
    t_obs = int(bool(env.obs_timestep_number))
    en_names = ["attackable", "distance", "rel_x", "rel_y", *health]
    en_names += ["shield"] if env.obs_all_health and env.shield_bits_enemy else []
    al_names = ["visible", "distance", "rel_x", "rel_y", *health]
    al_names += ["shield"] if env.obs_all_health and env.shield_bits_ally else []
    al_names += types + ([f"last_action_{a}" for a in range(env.n_actions)] if env.obs_last_action else [])
    own_names = (["health"] + (["shield"] if env.shield_bits_ally else [])) if env.obs_own_health else []
    own_names += types + (["timestep_pad"] if t_obs else [])  # SMAC counts the timestep twice; always 0
    obs_layout = {
        "move_feats": move,
        "n_enemies": int(n_en),
        "enemy_feats": int(nf_en),
        "n_allies": int(n_al),
        "ally_feats": int(nf_al),
        "own_feats": own,
        "timestep_feats": t_obs,
        "enemy_feature_names": en_names + types,
        "ally_feature_names": al_names,
        "own_feature_names": own_names,
    }
    for key, names, width in (
        ("enemy_feature_names", obs_layout["enemy_feature_names"], nf_en),
        ("ally_feature_names", al_names, nf_al),
        ("own_feature_names", own_names, own),
    ):
        if len(names) != width:
            raise RuntimeError(f"SMAC layout {key} has {len(names)} names for width {width}: unsupported SMAC version")
    obs_size = move + n_en * nf_en + n_al * nf_al + own + t_obs
    ois = bool(env.obs_instead_of_state)
    ally_state, enemy_state = list(env.ally_state_attr_names), list(env.enemy_state_attr_names)
    # Same conventions as the simulator's SMACFeatures.env_info: last_action_feats is the whole
    # N x n_actions block; with obs_instead_of_state the state is the N observations.
    state_layout = {
        "n_agents": int(env.n_agents),
        "ally_state_feats": 0 if ois else len(ally_state),
        "n_enemies": int(env.n_enemies),
        "enemy_state_feats": 0 if ois else len(enemy_state),
        "last_action_feats": 0 if ois or not env.state_last_action else int(env.n_agents * env.n_actions),
        "timestep_feats": 0 if ois else int(bool(env.state_timestep_number)),
        "ally_state_feature_names": [] if ois else ally_state,
        "enemy_state_feature_names": [] if ois else enemy_state,
        "obs_instead_of_state": ois,
    }
    state_size = env.n_agents * obs_size if ois else int(env.get_state_size())
    return obs_layout, state_layout, obs_size, state_size


class SC2Backend:
    """One SMAC ``StarCraft2Env`` behind the simulator's batched interface (``num_envs == 1``).

    Use :func:`make_sc2_backend`. Tensors in and out live on ``device``; shapes use ``B = 1``,
    ``N = n_agents``, ``A = n_actions``. Time: 1 env step = SMAC's ``step_mul`` = 8 game loops.
    """

    num_envs = 1

    def __init__(
        self,
        map_name: str,
        *,
        seed: int | None = None,
        device: str | torch.device = "cpu",
        autoreset: bool = True,
        lenient_actions: bool = False,
        reseed: Literal["relaunch", "warn"] = "relaunch",
        on_game_error: Literal["raise", "truncate"] = "raise",
        env_factory: Callable[..., Any] | None = None,
        **smac_options: Any,
    ) -> None:
        from sc2_envs.smacv2 import is_scenario

        if is_scenario(map_name):  # get_map would call it an unknown map, hiding that it exists on the simulator
            raise ValueError(
                f"map_name={map_name!r} is a SMACv2 scenario: backend='sc2' runs oxwhirl SMAC's v1 maps "
                "(sc2_envs.list_maps()) and does not serve SMACv2 scenarios. Use backend='sim' (the embedded "
                "simulator), or oxwhirl SMACv2's own StarCraftCapabilityEnvWrapper for StarCraft II"
            )
        spec = get_map(map_name)
        if reseed not in ("relaunch", "warn"):
            raise ValueError(f"reseed={reseed!r}; expected 'relaunch' or 'warn'")
        if on_game_error not in ("raise", "truncate"):
            raise ValueError(f"on_game_error={on_game_error!r}; expected 'raise' or 'truncate'")
        seed = game_seed(seed, "an int, a numpy.random.SeedSequence or None")
        if "map_name" in smac_options or "seed" in smac_options:
            raise TypeError("pass map_name and seed as make_sc2_backend's own arguments")
        if env_factory is None:
            env_factory = _import_starcraft2env(map_name)
            _check_game_installed(map_name)
        self._factory = env_factory
        self._options = {"continuing_episode": True, **smac_options}
        self.map_name = map_name
        self.device = torch.device(device)
        self.autoreset = bool(autoreset)
        self.lenient_actions = bool(lenient_actions)
        self.reseed = reseed
        self.on_game_error = on_game_error
        self._seed = seed
        self._env = self._factory(map_name=map_name, seed=self._seed, **self._options)
        self._launched = False  # SMAC launches SC2 on its first reset()
        env = self._env
        self.n_agents = int(env.n_agents)
        self.n_enemies = int(env.n_enemies)
        self.n_actions = int(env.get_total_actions())
        self.episode_limit = int(env.episode_limit)
        if (self.n_agents, self.n_enemies, self.n_actions) != (spec.n_agents, spec.n_enemies, spec.n_actions):
            raise RuntimeError(
                f"SMAC's {map_name} has n_agents={self.n_agents}, n_enemies={self.n_enemies}, "
                f"n_actions={self.n_actions}, but sc2_envs.maps says {spec.n_agents}, {spec.n_enemies}, "
                f"{spec.n_actions}; the map registries disagree"
            )
        self._obs_layout, self._state_layout, self.obs_size, self.state_size = _smac_layouts(env)
        self.agent_unit_types = spec.ally_units()
        self._spec = spec
        self._stats = {"battles_won": 0, "battles_game": 0, "battles_draw": 0, "timeouts": 0, "restarts": 0}
        self._timeouts_seen = 0
        self._needs_reset = True
        self._last: dict[str, torch.Tensor] | None = None
        self._closed = False

    # -- conversions -------------------------------------------------------------------------------
    def _observe(self, obs: Any = None, state: Any = None) -> dict[str, torch.Tensor]:
        env = self._env
        obs = np.asarray(env.get_obs() if obs is None else obs, dtype=np.float32)
        state = np.asarray(env.get_state() if state is None else state, dtype=np.float32)
        avail = np.asarray(env.get_avail_actions())
        expected = {
            "obs": (self.n_agents, self.obs_size),
            "state": (self.state_size,),
            "avail_actions": (self.n_agents, self.n_actions),
        }
        for key, arr in (("obs", obs), ("state", state), ("avail_actions", avail)):
            if arr.shape != expected[key]:
                raise RuntimeError(f"SMAC returned {key} of shape {arr.shape}; expected {expected[key]} from its layout")
        return {
            "obs": torch.as_tensor(obs, device=self.device).unsqueeze(0),
            "state": torch.as_tensor(state, device=self.device).unsqueeze(0),
            "avail_actions": torch.as_tensor(avail != 0, device=self.device).unsqueeze(0),
        }

    def _flag(self, value: bool) -> torch.Tensor:
        return torch.tensor([bool(value)], device=self.device)

    def _count(self, value: int) -> torch.Tensor:
        return torch.tensor([int(value)], dtype=torch.int64, device=self.device)

    # -- API ---------------------------------------------------------------------------------------
    def reset(self, seed: int | list[int] | None = None) -> dict[str, torch.Tensor]:
        """Start a new episode (launching StarCraft II on the first call).

        Args:
            seed: ``int`` (SC2's own game seed), a ``numpy.random.SeedSequence`` (hashed to a 31-bit
                game seed; what the subprocess vector env sends), a list of one of these, or
                ``None``. A seed is applied by relaunching the game with it (see the module
                docstring, ``reseed``).

        Returns:
            dict: ``obs [1, N, obs_size] float32``, ``state [1, state_size] float32``,
            ``avail_actions [1, N, A] bool``.
        """
        self._check_open()
        if isinstance(seed, (list, tuple)):
            if len(seed) != 1:
                raise ValueError(f"seed list has {len(seed)} entries; the sc2 backend has num_envs=1")
            seed = seed[0]
        seed = game_seed(seed, "an int, a numpy.random.SeedSequence, a list of one of these, or None")
        if seed is not None:
            if not self._launched:
                self._seed = int(seed)
                self._env = self._factory(map_name=self.map_name, seed=self._seed, **self._options)
            elif self.reseed == "relaunch":
                self._relaunch(int(seed))
            else:
                warnings.warn(
                    f"reset(seed={seed}) ignored: StarCraft II takes a seed only at launch (running with "
                    f"seed {self._seed}); use reseed='relaunch' to apply it",
                    stacklevel=2,
                )
        obs, state = self._env.reset()
        self._launched = True
        self._needs_reset = False
        self._last = self._observe(obs, state)
        return dict(self._last)

    def _relaunch(self, seed: int) -> None:
        self._env.close()
        self._seed = seed
        self._env = self._factory(map_name=self.map_name, seed=seed, **self._options)
        self._timeouts_seen = 0

    def step(self, actions: torch.Tensor) -> dict[str, torch.Tensor]:
        """Apply one joint action: 8 game loops.

        Args:
            actions: ``[1, N]`` int64 tensor of action ids in ``[0, A)``.

        Returns:
            dict with ``obs``, ``state``, ``avail_actions`` (after auto-reset if ``autoreset``),
            ``reward [1] float32`` (SMAC's, scaled as configured), ``terminated``, ``truncated``,
            ``battle_won``, ``episode_limit`` ``[1] bool``, ``dead_allies``, ``dead_enemies`` ``[1] int64``,
            ``final_obs``, ``final_state``, ``final_avail_actions`` (before any auto-reset),
            ``agent_alive [1, N] bool`` and ``invalid_actions [1, N] bool``.

        Raises:
            ValueError: bad shape, dtype or range, or an unavailable action (strict mode), naming the
                agent, the action and its available actions.
            RuntimeError: stepping an episode that ended without ``reset()`` (``autoreset=False``).
            SC2GameError: the game connection was lost (``on_game_error="raise"``).
        """
        self._check_open()
        if self._needs_reset or self._last is None:
            raise RuntimeError("call reset() before step(): no episode is running")
        act = self._validate_actions(actions)
        avail = self._last["avail_actions"][0].cpu().numpy()
        chosen = avail[np.arange(self.n_agents), act]
        invalid = ~chosen
        if invalid.any():
            if not self.lenient_actions:
                a = int(np.flatnonzero(invalid)[0])
                raise ValueError(
                    f"agent {a} cannot take action {int(act[a])}: available actions are "
                    f"{np.flatnonzero(avail[a]).tolist()} (pass lenient_actions=True to replace it with stop/no-op)"
                )
            alive = avail[:, _STOP]
            act = np.where(invalid, np.where(alive, _STOP, _NOOP), act)
        reward, smac_terminated, info = self._env.step(act.tolist())
        if smac_terminated and "battle_won" not in info:
            return self._game_error()
        won = bool(info.get("battle_won", False))
        timeout = False
        if smac_terminated:
            timeouts = int(self._env.get_stats()["timeouts"])
            timeout = bool(info.get("episode_limit", False)) or timeouts > self._timeouts_seen
            self._timeouts_seen = timeouts
            timeout = timeout and not won
        cur = self._observe()
        alive = cur["avail_actions"][:, :, _STOP]  # SMAC: stop is always available to a living unit only
        dead_allies = int(info["dead_allies"]) if "dead_allies" in info else int((~alive).sum())
        if "dead_enemies" in info:
            dead_enemies = int(info["dead_enemies"])
        else:  # SMAC before 2021 had no dead_* keys
            dead_enemies = sum(int(u.health == 0) for u in self._env.enemies.values())
        out = {
            "reward": torch.tensor([float(reward)], dtype=torch.float32, device=self.device),
            "terminated": self._flag(smac_terminated and not timeout),
            "truncated": self._flag(timeout),
            "battle_won": self._flag(won),
            "dead_allies": self._count(dead_allies),
            "dead_enemies": self._count(dead_enemies),
            "episode_limit": self._flag(timeout),
            "final_obs": cur["obs"],
            "final_state": cur["state"],
            "final_avail_actions": cur["avail_actions"],
            "agent_alive": alive.clone(),
            "invalid_actions": torch.as_tensor(invalid, device=self.device).unsqueeze(0),
        }
        if smac_terminated:
            self._record(won, timeout)
        return self._finish(out, cur, bool(smac_terminated))

    def _finish(self, out: dict, cur: dict, done: bool) -> dict[str, torch.Tensor]:
        if done and self.autoreset:
            obs, state = self._env.reset()
            cur = self._observe(obs, state)
        elif done:
            self._needs_reset = True
        self._last = cur
        out.update(cur)
        return out

    def _game_error(self) -> dict[str, torch.Tensor]:
        # SMAC has already relaunched the game (full_restart); its unit records are stale.
        self._stats["restarts"] += 1
        self._timeouts_seen = int(getattr(self._env, "timeouts", self._timeouts_seen))
        if self.on_game_error == "raise":
            self._needs_reset = True
            raise SC2GameError(
                "SMAC lost the connection to StarCraft II during step() and relaunched the game; the "
                "episode is lost. Call reset() to continue, or pass on_game_error='truncate'."
            )
        prev = self._last
        out = {
            "reward": torch.zeros(1, dtype=torch.float32, device=self.device),
            "terminated": self._flag(False),
            "truncated": self._flag(True),
            "battle_won": self._flag(False),
            "dead_allies": self._count(0),
            "dead_enemies": self._count(0),
            "episode_limit": self._flag(False),
            "final_obs": prev["obs"],
            "final_state": prev["state"],
            "final_avail_actions": prev["avail_actions"],
            "agent_alive": prev["avail_actions"][:, :, _STOP].clone(),
            "invalid_actions": torch.zeros(1, self.n_agents, dtype=torch.bool, device=self.device),
        }
        return self._finish(out, prev, True)

    def _record(self, won: bool, timeout: bool) -> None:
        s = self._stats
        s["battles_game"] += 1
        s["battles_won"] += int(won)
        s["timeouts"] += int(timeout)
        s["battles_draw"] += int(timeout)  # SMAC's get_stats: battles_draw = timeouts

    def _validate_actions(self, actions: Any) -> np.ndarray:
        if not isinstance(actions, torch.Tensor):
            raise TypeError(f"actions must be a torch.Tensor of shape [1, {self.n_agents}]; got {type(actions).__name__}")
        if tuple(actions.shape) != (1, self.n_agents):
            raise ValueError(f"actions has shape {tuple(actions.shape)}; expected (1, {self.n_agents})")
        if actions.dtype.is_floating_point or actions.dtype == torch.bool or actions.is_complex():
            raise ValueError(f"actions dtype {actions.dtype}; expected an integer dtype (int64)")
        act = actions[0].detach().cpu().numpy().astype(np.int64)
        bad = (act < 0) | (act >= self.n_actions)
        if bad.any():
            a = int(np.flatnonzero(bad)[0])
            raise ValueError(f"agent {a} action {int(act[a])} is outside [0, {self.n_actions})")
        return act

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the sc2 backend is closed")

    def get_env_info(self) -> dict[str, Any]:
        """SMAC's ``get_env_info`` keys plus the simulator's extras; never launches the game.

        Returns:
            dict: ``obs_shape``, ``state_shape`` (true vector lengths), ``n_actions``, ``n_agents``,
            ``n_enemies``, ``episode_limit`` (env steps), ``agent_features`` / ``enemy_features``
            (SMAC's state attribute names), ``map_name``, ``unit_type_bits``, ``agent_unit_types``,
            ``enemy_unit_types``, ``ally_type_order``, ``enemy_type_order``, ``max_reward``,
            ``obs_layout``, ``state_layout`` (formats as in ``SMACFeatures.env_info``) and
            ``backend="sc2"``.
        """
        return {
            "obs_shape": self.obs_size,
            "state_shape": self.state_size,
            "n_actions": self.n_actions,
            "n_agents": self.n_agents,
            "n_enemies": self.n_enemies,
            "episode_limit": self.episode_limit,
            "agent_features": list(self._env.ally_state_attr_names),
            "enemy_features": list(self._env.enemy_state_attr_names),
            "map_name": self.map_name,
            "unit_type_bits": int(self._env.unit_type_bits),
            "agent_unit_types": list(self.agent_unit_types),
            "enemy_unit_types": self._spec.enemy_units(),
            "max_reward": self._max_reward(),
            "ally_type_order": list(self._spec.ally_type_order),
            "enemy_type_order": list(self._spec.enemy_type_order),
            "obs_layout": {k: (list(v) if isinstance(v, list) else v) for k, v in self._obs_layout.items()},
            "state_layout": {k: (list(v) if isinstance(v, list) else v) for k, v in self._state_layout.items()},
            "backend": "sc2",
        }

    def _max_reward(self) -> float:
        """SMAC's reward normaliser: ``n_enemies * reward_death_value + reward_win + sum of enemy
        health_max + shield_max``. SMAC adds the unit totals from the game at its first launch, so
        after launch its own ``max_reward`` is reported; before, the same sum over the map's roster.
        """
        if self._launched:
            return float(self._env.max_reward)
        opts = self._options
        hp = sum(self._spec.unit_stat(u, "health") + self._spec.unit_stat(u, "shield") for u in self._spec.enemy_units())
        return float(self.n_enemies * opts.get("reward_death_value", 10) + opts.get("reward_win", 200) + hp)

    def get_stats(self) -> dict[str, float]:
        """Episode counts since construction, kept here so they survive a seeded relaunch.

        Returns:
            dict: ``battles_won``, ``battles_game``, ``battles_draw`` (= timeouts, as SMAC counts it),
            ``win_rate`` (0.0 before the first episode ends; SMAC divides by zero there),
            ``timeouts``, ``restarts`` (game connections lost).
        """
        s = dict(self._stats)
        s["win_rate"] = s["battles_won"] / s["battles_game"] if s["battles_game"] else 0.0
        return s

    def close(self) -> None:
        """Close StarCraft II; safe to call more than once."""
        if not self._closed:
            self._closed = True
            self._env.close()

    def __enter__(self) -> SC2Backend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def game_seed(seed: Any, expected: str) -> int | None:
    """SC2's game seed for ``seed``: an int as is, a ``SeedSequence`` hashed to 31 bits, None as None.

    Raises:
        TypeError: ``seed`` is none of these; the message names it and ends with ``expected``.
    """
    if seed is None:
        return None
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1, np.uint32)[0]) & 0x7FFFFFFF
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"seed={seed!r}; expected {expected}")
    return int(seed)


def make_sc2_backend(map_name: str, seed: int | None = None, **options: Any) -> SC2Backend:
    """Build the real-StarCraft II backend for a SMAC map (``num_envs == 1``).

    Args:
        map_name: a SMAC v1 map name (see ``sc2_envs.maps.list_maps()``).
        seed: the game's random seed, given to SC2 when it launches (SMAC's ``seed``).
        **options: ``device``, ``autoreset`` (default True), ``lenient_actions`` (default False),
            ``reseed`` (``"relaunch"`` | ``"warn"``), ``on_game_error`` (``"raise"`` | ``"truncate"``),
            ``env_factory`` (a ``StarCraft2Env``-compatible class, for tests), and any
            ``StarCraft2Env`` keyword (``obs_last_action``, ``reward_sparse``, ``difficulty``,
            ``game_version``, ``replay_dir``, ...). ``continuing_episode`` defaults to True here.

    Returns:
        SC2Backend: the game is launched on the first ``reset()``.

    Raises:
        SC2BackendUnavailable: SMAC (the oxwhirl one), pysc2, the game or the SMAC map is missing;
            the message says what to install and where (``SC2PATH``).
        ValueError: unknown map name or option value; a SMACv2 scenario name (``protoss_5_vs_5``, ...),
            which this backend does not serve (the message says what to use instead).
    """
    return SC2Backend(map_name, seed=seed, **options)
