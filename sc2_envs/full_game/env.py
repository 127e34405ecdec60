"""``sc2_envs/FullGame-v0``: full-game StarCraft II vs the built-in bot, raw interface.

| item | value |
| --- | --- |
| observation | ``Dict``: entities (N, 38) float32, entity_mask (N,) int8, selectable_mask (N,) int8, |
| | scalars (16,) float32, minimap (8, R, R) uint8, upgrades (89,) int8, unit_counts (375,) float32, |
| | build_order (20,) int64, action_type_mask (564,) int8 |
| action | ``Dict``: action_type Discrete(564), delay Discrete(128), queued Discrete(2), |
| | selected_units MultiDiscrete([N+1]*K) (N = EOF), target_unit Discrete(N+1) (N = none), |
| | target_location MultiDiscrete([R, R]) |
| reward | 0 until the end, then +1 win / -1 loss / 0 tie (``PlayerResult``) |
| time | one step advances ``step_mul`` game loops, or ``max(delay, 1)`` when ``step_mul=None`` |
| end | game over -> terminated; ``game_steps_per_episode`` loops reached -> truncated |
| info | numbers only (``spec.step_info``): ``game_loop``, ``action_errors`` (2,) int32 ActionResult |
| | codes, ``invalid_action`` (``spec.InvalidAction``), ``entities_left_out`` (units in view past the |
| | ``max_entities`` rows); at the end ``outcome`` / ``episode_limit`` |

Two backends share these spaces (``make_full_game_env``, the registered entry point):
``backend="lite"`` (the default) runs the embedded lite engine (``sc2_envs.lite``: Simple64,
Protoss vs the very_easy Terran bot, no StarCraft II needed); ``backend="sc2"`` runs the real
game through ``FullGameEnv`` below.

Backend choice: pysc2 4.0.0 as released does not import on Python 3.11 (protobuf
descriptors generated for old protoc; ``random.shuffle`` signature in ``colors.py``). We use
``pysc2-evolved`` (a maintained fork that imports cleanly on 3.11 with protobuf 7) only for
its process launcher (``run_configs``/``sc_process``: SC2PATH lookup, ports, temp dirs),
its websocket ``RemoteController`` and its raw-function table; the game is driven directly
with ``s2clientprotocol`` requests, and conversion is ours (``convert.py``), so no
compatibility shim is needed.

The game starts lazily on the first ``reset()`` (constructing or pickling never launches
it); its stdout/stderr go to its own log file; ``close()`` always ends it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sc2_envs.full_game import convert, spec
from sc2_envs.full_game._deps import require
from sc2_envs.full_game.heads import check_action
from sc2_envs.full_game.spaces import (
    BOT_BUILDS,
    DIFFICULTIES,
    MAX_LOOPS,
    MAX_SIZES,
    make_action_space,
    make_observation_space,
)

SC2_INSTALL_STEPS = (
    "StarCraft II was not found. Set SC2PATH to the folder that holds 'Versions/Base<build>/SC2_x64' "
    "(default ~/StarCraftII). To install on Linux: download the Blizzard Linux package "
    "(https://github.com/Blizzard/s2client-proto#downloads, e.g. SC2.4.10.zip; the archive password "
    "'iagreetotheeula' accepts the AI and Machine Learning License), unzip it to ~/StarCraftII, and "
    "unzip the map packs (Ladder/Melee maps) into ~/StarCraftII/Maps."
)


class SC2NotFoundError(FileNotFoundError):
    """StarCraft II (or the requested map) is not installed where SC2PATH points."""


def sc2_path() -> Path:
    """The StarCraft II install folder: ``$SC2PATH`` or ``~/StarCraftII``."""
    return Path(os.path.expanduser(os.environ.get("SC2PATH", "~/StarCraftII")))


def find_sc2_binary() -> Path:
    """Path of the newest ``Versions/Base*/SC2_x64`` under ``sc2_path()``.

    Raises:
        SC2NotFoundError: no binary there; the message names SC2PATH and the install steps.
    """
    root = sc2_path()
    found = sorted(root.glob("Versions/Base*/SC2_x64"), key=lambda p: int(p.parent.name[4:] or 0))
    if not found:
        raise SC2NotFoundError(f"No SC2_x64 under SC2PATH={str(root)!r}. {SC2_INSTALL_STEPS}")
    return found[-1]


def sc2_available() -> bool:
    """True when a StarCraft II binary is installed under ``sc2_path()``."""
    try:
        find_sc2_binary()
    except SC2NotFoundError:
        return False
    return True


BACKENDS = ("lite", "sc2")
LITE_ONLY_OPTIONS = ("omniscient", "capacity", "data_profile")
"""``LiteFullGameEnv`` options the real game's ``FullGameEnv`` does not take."""


def make_full_game_env(backend: str = "lite", **kwargs) -> gym.Env:
    """The ``sc2_envs/FullGame-v0`` entry point: the lite engine or the real game.

    Args:
        backend: ``"lite"`` (default: the embedded lite engine, Simple64, Protoss vs the very_easy
            Terran bot, no StarCraft II needed) or ``"sc2"`` (real StarCraft II through pysc2's
            launcher: any map, race and difficulty; ``FullGameEnv``).
        **kwargs: the chosen env's constructor arguments.

    Raises:
        ValueError: an unknown backend, a lite-only option (``LITE_ONLY_OPTIONS``) with ``backend="sc2"``, or what
            the chosen env raises.
    """
    if backend == "sc2":
        lite_only = [k for k in LITE_ONLY_OPTIONS if k in kwargs]
        if lite_only:  # Python's "unexpected keyword argument" would not say why
            raise ValueError(
                f"{', '.join(lite_only)} {'is an option' if len(lite_only) == 1 else 'are options'} of the lite engine "
                "(backend='lite'); backend='sc2' plays the real game"
            )
        return FullGameEnv(**kwargs)
    if backend == "lite":
        from sc2_envs.lite.env import LiteFullGameEnv

        return LiteFullGameEnv(**kwargs)
    raise ValueError(f"backend={backend!r}; expected one of {list(BACKENDS)}")


MAX_GAME_SEED = 0x7FFFFFFF
"""The largest ``reset(seed=...)``: the game's ``random_seed`` as sent (31 bits)."""


class FullGameEnv(gym.Env):
    """Full-game SC2 (one agent vs the built-in AI) with AlphaStar-style obs and actions.

    Args:
        map_name: pysc2 map name, e.g. ``"Simple64"``, ``"AbyssalReef"``.
        race: agent race (``terran``, ``zerg``, ``protoss``, ``random``).
        bot_race: built-in AI race.
        bot_difficulty: one of ``DIFFICULTIES`` (``very_easy`` .. ``cheat_insane``).
        bot_build: one of ``BOT_BUILDS`` (``random``, ``rush``, ``timing``, ``power``, ``macro``, ``air``).
        step_mul: game loops per step (8 = 0.5 game seconds); None to step ``max(delay, 1)``.
        game_steps_per_episode: truncate after this many game loops (0 = no limit).
        max_entities: entity rows N.
        max_selected: selected_units slots K.
        raw_resolution: raw grid R for positions and target_location.
        minimap_resolution: minimap plane size.
        query_available_actions: ask the game each step which abilities own units have
            (``RequestQueryAvailableAbilities``) to build ``action_type_mask``; otherwise
            the mask is all ones.
        log_dir: folder for the game's log file (default: a new temp folder).
        version: SC2 version string for ``run_configs`` (None = newest installed).
        realtime: play in real time instead of stepping.

    Raises:
        ValueError: an unknown map, race, difficulty or build, a non-positive size, or a size or loop count above
            ``spaces.MAX_SIZES`` / ``spaces.MAX_LOOPS`` (the lite engine's limits too).
        TypeError: a size, ``step_mul`` or ``game_steps_per_episode`` that is not an int (a float
            would be truncated, a bool read as 0 / 1), ``query_available_actions`` / ``realtime``
            that is not a bool, a ``log_dir`` that is not a path or a ``version`` that is not a string.
        MissingDependencyError: the ``full-game`` extra is not installed.
    """

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(
        self,
        map_name: str = "Simple64",
        race: str = "protoss",
        bot_race: str = "terran",
        bot_difficulty: str = "very_easy",
        bot_build: str = "random",
        step_mul: int | None = 8,
        game_steps_per_episode: int = 0,
        max_entities: int = 512,
        max_selected: int = 64,
        raw_resolution: int = 64,
        minimap_resolution: int = 64,
        query_available_actions: bool = True,
        log_dir: str | None = None,
        version: str | None = None,
        realtime: bool = False,
    ):
        self._kwargs = {
            "map_name": map_name,
            "race": race,
            "bot_race": bot_race,
            "bot_difficulty": bot_difficulty,
            "bot_build": bot_build,
            "step_mul": step_mul,
            "game_steps_per_episode": game_steps_per_episode,
            "max_entities": max_entities,
            "max_selected": max_selected,
            "raw_resolution": raw_resolution,
            "minimap_resolution": minimap_resolution,
            "query_available_actions": query_available_actions,
            "log_dir": log_dir,
            "version": version,
            "realtime": realtime,
        }
        self._race = spec.race_id(race)
        self._bot_race = spec.race_id(bot_race)
        if not isinstance(bot_difficulty, str) or bot_difficulty not in DIFFICULTIES:  # a list is unhashable
            raise ValueError(f"bot_difficulty={bot_difficulty!r}; expected one of {list(DIFFICULTIES)}")
        if not isinstance(bot_build, str) or bot_build not in BOT_BUILDS:
            raise ValueError(f"bot_build={bot_build!r}; expected one of {list(BOT_BUILDS)}")
        if log_dir is not None and not isinstance(log_dir, (str, os.PathLike)):  # else a TypeError at the first reset
            raise TypeError(f"log_dir={log_dir!r}; expected a folder path or None")
        if version is not None and not isinstance(version, str):
            raise TypeError(f"version={version!r}; expected a StarCraft II version string such as '4.10.0', or None")
        for name in (
            "max_entities",
            "max_selected",
            "raw_resolution",
            "minimap_resolution",
            "step_mul",
            "game_steps_per_episode",
        ):
            value = self._kwargs[name]
            if name == "step_mul" and value is None:
                continue
            # int() would silently truncate 2.5 to 2 game loops, or read True as 1
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name}={value!r}; expected an int")
        for name in ("query_available_actions", "realtime"):  # "no" would be read as true
            if not isinstance(self._kwargs[name], (bool, np.bool_)):
                raise TypeError(f"{name}={self._kwargs[name]!r}; expected a bool")
        for name in ("max_entities", "max_selected", "raw_resolution", "minimap_resolution"):
            if self._kwargs[name] <= 0:
                raise ValueError(f"{name}={self._kwargs[name]!r}; expected a positive integer")
        if step_mul is not None and step_mul <= 0:
            raise ValueError(f"step_mul={step_mul!r}; expected a positive number of game loops or None")
        if game_steps_per_episode < 0:
            raise ValueError(f"game_steps_per_episode={game_steps_per_episode!r}; expected >= 0 (0 = no limit)")
        for name, top in (*MAX_SIZES.items(), *MAX_LOOPS.items()):  # the lite engine's limits: one rule for both backends
            if self._kwargs[name] is not None and self._kwargs[name] > top:
                raise ValueError(f"{name}={self._kwargs[name]!r}; expected an int <= {top}")
        maps = require("pysc2_evolved.maps", "the map registry")
        try:
            maps.get(map_name)
        except maps.lib.NoMapError as e:
            raise ValueError(f"map_name={map_name!r} is not a known pysc2 map (e.g. 'Simple64', 'AbyssalReef'): {e}") from e
        self.map_name = map_name
        self.step_mul = step_mul
        self.game_steps_per_episode = int(game_steps_per_episode)
        self.max_entities = int(max_entities)
        self.max_selected = int(max_selected)
        self.raw_resolution = int(raw_resolution)
        self.minimap_resolution = int(minimap_resolution)
        self.query_available_actions = query_available_actions
        self.observation_space = self._make_observation_space()
        self.action_space = self._make_action_space()
        self._proc = None
        self._controller = None
        self._log_file = None
        self.log_path: Path | None = None
        self._ctx: convert.ObsContext | None = None
        self._tags = np.zeros(self.max_entities, dtype=np.uint64)
        self._last_action = (0, 0, 0)
        self._last_action_loop: int | None = None
        self._loop = 0
        self._episodes = 0

    # ---------------------------------------------------------------- spaces
    def _make_observation_space(self) -> spaces.Dict:
        return make_observation_space(self.max_entities, self.minimap_resolution)

    def _make_action_space(self) -> spaces.Dict:
        return make_action_space(self.max_entities, self.max_selected, self.raw_resolution)

    # ---------------------------------------------------------------- pickling
    def __getstate__(self):
        """Only the constructor arguments travel; a live game never does."""
        return {"kwargs": dict(self._kwargs)}

    def __setstate__(self, state):
        self.__init__(**state["kwargs"])

    # ---------------------------------------------------------------- game process
    def _launch(self) -> None:
        find_sc2_binary()  # clear SC2PATH error before touching pysc2_evolved
        run_configs = require("pysc2_evolved.run_configs", "launching StarCraft II")
        maps = require("pysc2_evolved.maps", "finding the map file")

        run_config = run_configs.get(version=self._kwargs["version"])
        map_inst = maps.get(self.map_name)
        map_path = Path(run_config.data_dir) / "Maps" / map_inst.path
        if not map_path.exists():
            raise SC2NotFoundError(
                f"Map {self.map_name!r} not found at {str(map_path)!r} (SC2PATH={str(sc2_path())!r}). {SC2_INSTALL_STEPS}"
            )
        log_dir = Path(self._kwargs["log_dir"] or tempfile.mkdtemp(prefix="sc2_envs_full_game_"))
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"sc2_{os.getpid()}_{int(time.time() * 1000)}.log"
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - lives until close(), the game writes to it
        self._proc = run_config.start(want_rgb=False, stdout=self._log_file, stderr=subprocess.STDOUT)
        self._controller = self._proc.controller

        self._controller.create_game(self.create_game_request(map_inst.path, map_inst.data(run_config)))
        self._player_id = self._controller.join_game(self.join_game_request()).player_id

    def create_game_request(self, map_path: str, map_data: bytes | None = None):
        """The ``RequestCreateGame`` sent on the first reset: agent vs the built-in AI.

        Args:
            map_path: map path relative to ``$SC2PATH/Maps`` (pysc2 ``maps.get(name).path``).
            map_data: the ``.SC2Map`` bytes (optional; the game reads ``map_path`` without it).
        """
        sc_pb = require("s2clientprotocol.sc2api_pb2", "talking to StarCraft II")
        create = sc_pb.RequestCreateGame(realtime=bool(self._kwargs["realtime"]))
        create.local_map.map_path = map_path
        if map_data:
            create.local_map.map_data = map_data
        create.player_setup.add(type=sc_pb.Participant)
        create.player_setup.add(
            type=sc_pb.Computer,
            race=self._bot_race,
            difficulty=DIFFICULTIES[self._kwargs["bot_difficulty"]],
            ai_build=BOT_BUILDS[self._kwargs["bot_build"]],
        )
        if self._seed is not None:
            create.random_seed = int(self._seed)  # reset() checked 0 <= seed <= MAX_GAME_SEED
        return create

    def join_game_request(self):
        """The ``RequestJoinGame``: raw interface (uncropped), score, and a feature-layer minimap.

        Matches mini-AlphaStar's interface (show cloaked, burrowed shadows and placeholders;
        camera width 24) with ``raw_affects_selection=False`` so raw commands do not change
        the UI selection.
        """
        sc_pb = require("s2clientprotocol.sc2api_pb2", "talking to StarCraft II")
        interface = sc_pb.InterfaceOptions(
            raw=True,
            score=True,
            show_cloaked=True,
            show_burrowed_shadows=True,
            show_placeholders=True,
            raw_affects_selection=False,
            raw_crop_to_playable_area=False,
        )
        interface.feature_layer.width = 24
        interface.feature_layer.resolution.x = self.minimap_resolution
        interface.feature_layer.resolution.y = self.minimap_resolution
        interface.feature_layer.minimap_resolution.x = self.minimap_resolution
        interface.feature_layer.minimap_resolution.y = self.minimap_resolution
        return sc_pb.RequestJoinGame(race=self._race, options=interface)

    def _new_context(self) -> None:
        self.set_game_info(self._controller.game_info(), self._player_id)

    def set_game_info(self, game_info, player_id: int) -> None:
        """Start a new conversion context from a ``ResponseGameInfo`` (done by ``reset``).

        Args:
            game_info: ``sc2api_pb2.ResponseGameInfo`` of the running game.
            player_id: the agent's player id.

        Raises:
            ValueError: no raw map size, or ``player_id`` not in the game.
        """
        self._ctx = convert.context_from_game_info(
            game_info,
            player_id,
            raw_resolution=self.raw_resolution,
            max_entities=self.max_entities,
            max_selected=self.max_selected,
            minimap_resolution=self.minimap_resolution,
        )

    def _query(self, response_observation):
        if not self.query_available_actions or self._controller.status_ended:
            return None  # the game answers queries in game only: at the end the mask is all ones
        query_pb = require("s2clientprotocol.query_pb2", "querying available abilities")
        req = query_pb.RequestQuery(ignore_resource_requirements=False)
        for u in response_observation.observation.raw_data.units:
            if u.alliance == convert.ALLIANCE_SELF:
                req.abilities.add(unit_tag=u.tag)
        return self._controller.query(req)

    def _observe(self):
        response = self._controller.observe()
        return response, self.convert_observation(response, self._query(response))

    def _left_out(self, response) -> int:
        """The units of ``response`` (a ``ResponseObservation``) that the ``max_entities`` rows had no room for."""
        return max(len(response.observation.raw_data.units) - self._ctx.max_entities, 0)

    def convert_observation(self, response_observation, query_response=None) -> dict:
        """Observation dict from a ``ResponseObservation`` (done by ``reset``/``step``).

        Also remembers the entity rows' unit tags, which ``action_request`` uses to turn
        entity indices back into tags.

        Args:
            response_observation: ``sc2api_pb2.ResponseObservation``.
            query_response: optional ``ResponseQuery`` with available abilities.

        Raises:
            RuntimeError: no game info yet (``set_game_info`` / ``reset`` first).
        """
        if self._ctx is None:
            raise RuntimeError("no game info yet; call reset() (or set_game_info) first")
        obs, self._tags = convert.observation_to_arrays(response_observation, self._ctx, self._last_action, query_response)
        return obs

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start (first call) or restart the game and return the first observation.

        ``reset(seed=s)`` with a seed other than the running game's relaunches StarCraft II
        so that ``s`` becomes the game's ``random_seed``; ``reset()`` or the same seed
        restarts the running game (``RequestRestartGame``), which keeps its seed.

        Raises:
            ValueError: a seed that is not an int in ``[0, MAX_GAME_SEED]`` (a bool is not), or ``options`` other
                than None / ``{}`` (none are read).
            SC2NotFoundError: StarCraft II or the map is not installed (names SC2PATH).
            MissingDependencyError: the ``full-game`` extra is not installed.
        """
        if seed is not None and (
            isinstance(seed, (bool, np.bool_)) or not (isinstance(seed, (int, np.integer)) and 0 <= seed <= MAX_GAME_SEED)
        ):
            # the game's random_seed keeps 31 bits: a larger seed would silently replay seed & 0x7FFFFFFF's game
            raise ValueError(f"seed={seed!r}; expected an int in [0, {MAX_GAME_SEED}] (StarCraft II's random_seed)")
        if not (options is None or (isinstance(options, dict) and not options)):  # none are read: one would be ignored
            raise ValueError(f"options={options!r}; expected None or {{}} (FullGame-v0's reset takes no options)")
        super().reset(seed=seed)
        if self._controller is not None and seed is not None and seed != self._seed:
            self.close()  # a new seed needs a new game: RequestRestartGame keeps the old random_seed
        if seed is not None or self._controller is None:
            self._seed = seed
        if self._controller is None:
            try:
                self._launch()
            except BaseException:
                self.close()
                raise
        else:
            self._controller.restart()
        self._new_context()
        self._last_action = (0, 0, 0)
        self._last_action_loop = None
        self._ended = None
        self._episodes += 1
        response, obs = self._observe()
        self._start_loop = self._loop = int(response.observation.game_loop)
        return obs, spec.step_info(self._start_loop, entities_left_out=self._left_out(response))

    def step(self, action: dict):
        """Send one action, advance the game and observe.

        Args:
            action: a sample of ``action_space`` (see the module table).

        Returns:
            ``(obs, reward, terminated, truncated, info)``; ``info`` holds numbers and fixed-shape
            arrays only (``spec.step_info``): ``game_loop``, ``action_errors``
            ``(spec.MAX_ACTION_ERRORS,)`` int32 (the ``ActionResult`` code of a command the game
            refused, 0-padded; names: ``spec.action_result_name``), ``invalid_action`` (a
            ``spec.InvalidAction``: why a non-executable action became a no-op, 0 when it was played),
            ``entities_left_out`` (int32: units in view beyond the ``max_entities`` rows) and, at the end,
            ``outcome`` (+1/-1/0) or ``episode_limit`` (True).

        Raises:
            RuntimeError: ``step`` before ``reset``, or after the episode ended (terminated or truncated) without a
                ``reset``: the ended game does not step, and a truncated one would play on past the limit.
            ValueError: a malformed action (see ``action_request``).
        """
        if self._controller is None or self._ctx is None:
            raise RuntimeError("step() called before reset(); call reset() first")
        if self._ended is not None:
            # after the end the game either refuses to step (ended) or plays on past the limit (truncated)
            raise RuntimeError(
                f"step() called after the episode ended ({self._ended} at game loop {self._loop}); call reset()"
            )
        heads = self._check_action(action)
        request, invalid = self.action_request(heads)
        if invalid is not None:
            heads["action_type"] = 0
        errors = []
        if request.actions:
            result = self._controller.actions(request)
            errors = [int(r) for r in result.result if r != 1]  # ActionResult Success = 1
        delay = int(heads["delay"])
        loops = int(self.step_mul) if self.step_mul is not None else max(delay, 1)
        fid = int(heads["action_type"])
        if fid != 0:
            # Same definition as the replay converter: general function, and the game loops
            # between this action and the previous one (0 for the first), capped at 127.
            gap = 0 if self._last_action_loop is None else self._loop - self._last_action_loop
            self._last_action = (int(spec.general_function_ids()[fid]), min(gap, spec.MAX_DELAY), int(heads["queued"]))
            self._last_action_loop = self._loop
        self._controller.step(loops)
        response, obs = self._observe()
        loop = self._loop = int(response.observation.game_loop)
        terminated = len(response.player_result) > 0
        reward = 0.0
        if terminated:
            result = {r.player_id: r.result for r in response.player_result}.get(self._player_id)
            reward = {1: 1.0, 2: -1.0}.get(int(result), 0.0) if result is not None else 0.0
        truncated = bool(
            self.game_steps_per_episode and loop - self._start_loop >= self.game_steps_per_episode and not terminated
        )
        invalid_code = invalid.code if invalid is not None else spec.InvalidAction.NONE
        info = spec.step_info(loop, errors, invalid_code, self._left_out(response))
        if terminated:
            info["outcome"] = reward
            self._ended = "terminated"
        if truncated:
            info["episode_limit"] = True
            self._ended = "truncated"
        return obs, reward, terminated, truncated, info

    def _check_action(self, action) -> dict:
        return check_action(action, self.max_entities, self.max_selected, self.raw_resolution)

    def action_request(self, action: dict):
        """Convert an action against the latest observation.

        Returns:
            ``(RequestAction, None)``, or ``(empty RequestAction, error)`` when the action is
            well formed but not executable here (the ``convert.InvalidActionError``, its message
            the reason); ``step`` then plays a no-op and puts ``error.code`` in ``info["invalid_action"]``.

        Raises:
            RuntimeError: no observation yet (call ``reset`` first).
            ValueError: a malformed action, refused as the lite engine refuses it (``sc2_envs.full_game.heads``):
                not a dict, an unknown key, a head that is not integer, has the wrong shape or is outside its
                range (``selected_units`` in [-1, N], ``target_unit`` in [0, N], ``target_location`` on the grid);
                the message names the head and the value.
        """
        if self._ctx is None:
            raise RuntimeError("no observation yet; call reset() first")
        heads = self._check_action(action)
        try:
            return convert.action_to_request(heads, self._tags, self._ctx), None
        except convert.InvalidActionError as e:
            return convert.action_to_request({"action_type": 0}, self._tags, self._ctx), e

    def close(self):
        """End the game process (idempotent; never leaves SC2 running)."""
        proc = getattr(self, "_proc", None)
        self._proc, self._controller = None, None
        try:
            if proc is not None:
                try:
                    proc.close()
                finally:
                    popen = getattr(proc, "_proc", None)
                    if popen is not None and popen.poll() is None:
                        popen.kill()
                        popen.wait(timeout=10)
        finally:
            log_file = getattr(self, "_log_file", None)
            if log_file is not None:
                log_file.close()
            self._log_file = None

    def __del__(self):
        self.close()

    _seed: int | None = None
    _player_id: int = 1
    _ended: str | None = None  # "terminated" / "truncated" once the episode ended, until reset
