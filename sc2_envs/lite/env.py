"""FullGame-v0 on the lite engine: one game (``LiteFullGameEnv``) or B games (``LiteFullGameVectorEnv``).

Both emit exactly the arrays of ``sc2_envs.full_game.spec`` (the same observation and action
spaces as the real-game ``FullGameEnv``), play Protoss on Simple64 against the scripted very_easy
Terran bot (``sc2_envs.lite.bot``), and follow FullGame-v0's rules: one step advances
``step_mul`` game loops (or ``max(delay, 1)`` when ``step_mul=None``); the reward is 0 until the
end, then +1 win / -1 loss / 0 tie; the game ends by the melee rule (a player with no structures
left loses) -> terminated, or after ``game_steps_per_episode`` game loops -> truncated.
Every info value is a number or a fixed-shape numeric array (Gymnasium's vector envs, Stable-Baselines3
and TorchRL stack infos into arrays): ``info["action_errors"]`` holds the ActionResult codes of refused
commands, as the game reports them, 0-padded to ``spec.MAX_ACTION_ERRORS`` (names:
``spec.action_result_name``); ``info["invalid_action"]`` is the ``spec.InvalidAction`` code of a
well-formed action pointing at padding that became a no-op (0: the action was played);
``info["entities_left_out"]`` counts the units in view that the ``max_entities`` rows had no room for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.full_game.spaces import BOT_BUILDS, DIFFICULTIES, MAX_LOOPS, make_action_space, make_observation_space
from sc2_envs.full_game.spaces import MAX_SIZES as SPACE_SIZES
from sc2_envs.lite.bot import VeryEasyTerranBot
from sc2_envs.lite.commands import CMD_UNSUPPORTED, check_action_keys, check_heads, command_tables, decode
from sc2_envs.lite.data import PROFILES
from sc2_envs.lite.engine import DEFAULT_CAPACITY, LiteEngine
from sc2_envs.lite.layout import (
    AR_NOT_SUPPORTED,
    AR_SUCCESS,
    CK_KIND,
    CMD_NONE,
    GI_LOOP,
    RESULT_NONE,
    RESULT_P1_WINS,
    RESULT_P2_WINS,
)
from sc2_envs.lite.maps import SERVED_MAPS
from sc2_envs.lite.observe import Observer
from sc2_envs.lite.state import GameState, read_refusals

SERVED_RACES = ("protoss",)
SERVED_BOT_RACES = ("terran",)
SERVED_DIFFICULTIES = ("very_easy",)
MAX_SEED = 2**63 - 1
MAX_SIZES = {**SPACE_SIZES, "capacity": 2**16}
"""Largest accepted sizes: FullGame-v0's (``sc2_envs.full_game.spaces.MAX_SIZES``), and unit slots per game."""
MAX_NUM_ENVS = 2**16  # games of one LiteFullGameVectorEnv; the same reason as MAX_SIZES


def _check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}={value!r}; expected an int")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and <= {maximum}" if maximum is not None else ""
        raise ValueError(f"{name}={value!r}; expected an int >= {minimum}{upper}")
    return int(value)


def check_seed(seed) -> int | None:
    """``seed`` as a Python int (None stays None), or a ``ValueError`` naming it unless it is an
    int in [0, ``MAX_SEED``] (NumPy ints are accepted; bools are not)."""
    if seed is not None and (
        isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED
    ):
        raise ValueError(f"seed={seed!r}; expected an int in [0, {MAX_SEED}]")
    return None if seed is None else int(seed)


def check_reset_options(options) -> None:
    """Refuse ``reset(options=...)`` other than None or ``{}``: FullGame-v0 reads none, so one (Gymnasium's vector
    ``reset_mask`` among them) would be ignored silently.

    Raises:
        ValueError: naming the options.
    """
    if not (options is None or (isinstance(options, dict) and not options)):
        raise ValueError(f"options={options!r}; expected None or {{}} (FullGame-v0's reset takes no options)")


def check_served(map_name: str, race: str, bot_race: str, bot_difficulty: str) -> None:
    """Refuse a game the lite engine does not serve, naming what is served.

    Raises:
        ValueError: an unknown map, race, bot race or difficulty.
    """
    if map_name not in SERVED_MAPS:
        raise ValueError(
            f"map_name={map_name!r} is not served by the lite engine; served: {list(SERVED_MAPS)} "
            "(backend='sc2' plays any map)"
        )
    spec.race_id(race)
    spec.race_id(bot_race)
    if str(race).lower() not in SERVED_RACES:
        raise ValueError(f"race={race!r} is not served by the lite engine; served: {list(SERVED_RACES)}")
    if str(bot_race).lower() not in SERVED_BOT_RACES:
        raise ValueError(f"bot_race={bot_race!r} is not served by the lite engine; served: {list(SERVED_BOT_RACES)}")
    if not isinstance(bot_difficulty, str) or bot_difficulty not in DIFFICULTIES:  # a list is unhashable
        raise ValueError(f"bot_difficulty={bot_difficulty!r}; expected one of {list(DIFFICULTIES)}")
    if bot_difficulty not in SERVED_DIFFICULTIES:
        raise ValueError(
            f"bot_difficulty={bot_difficulty!r} is not served by the lite engine; served: {list(SERVED_DIFFICULTIES)}"
        )


@dataclass(frozen=True, eq=False)
class GameSave:
    """One lite game at one moment, everything that decides how it plays on: the engine's state, the
    bot's plan and the observation's history (``LiteFullGameVectorEnv.save_game``). Loading it twice
    gives the same game twice: the parts are copied in and out, never shared. Compared and hashed by
    identity (its arrays have no single truth value).

    Attributes:
        map_name, data_profile, omniscient, max_entities: the games it was saved from (a load into games
            that differ in any of them is refused: other rules, other visibility, other observation rows).
        engine: a one-game ``GameState`` (``LiteEngine.save``).
        bot: ``VeryEasyTerranBot.save``'s dict.
        observer: ``Observer.save``'s dict.
        start_loop: the game loop its episode started at (the episode limit counts from it).
        last_action_loop: the game loop of the agent's last action (-1: none yet), for ``last_action``'s delay.
    """

    map_name: str
    data_profile: str
    omniscient: bool
    max_entities: int
    engine: GameState
    bot: dict
    observer: dict
    start_loop: int
    last_action_loop: int

    @property
    def game_loop(self) -> int:
        """The game loop it was saved at."""
        return int(self.engine.gi[0, GI_LOOP])


class LiteGames:
    """B lite games with the agent's observation and the bot: the shared core of both envs.

    Args: see ``LiteFullGameVectorEnv``.
    """

    def __init__(
        self,
        num_games: int,
        map_name: str = "Simple64",
        step_mul: int | None = 8,
        game_steps_per_episode: int = 0,
        max_entities: int = 512,
        max_selected: int = 64,
        raw_resolution: int = 64,
        minimap_resolution: int = 64,
        omniscient: bool = False,
        capacity: int = DEFAULT_CAPACITY,
        data_profile: str = "3.16.1",
    ):
        self.engine = LiteEngine(num_games, map_name, data_profile, capacity)
        self.data_profile = data_profile
        self.observer = Observer(
            self.engine.catalog, self.engine.map, num_games, max_entities, raw_resolution, minimap_resolution, omniscient
        )
        self.bot = VeryEasyTerranBot(self.engine)
        self.cmd_table, self.param_table = command_tables(self.engine.catalog)
        self.step_mul = step_mul
        self.game_steps_per_episode = int(game_steps_per_episode)
        self.max_entities = int(max_entities)
        self.max_selected = int(max_selected)
        self.raw_resolution = int(raw_resolution)
        b = int(num_games)
        self.start_loop = np.zeros(b, np.int64)
        self.last_action_loop = np.full(b, -1, np.int64)

    @property
    def num_games(self) -> int:
        return self.engine.num_games

    def reset(self, games, seeds) -> None:
        """Restart ``games`` (index array) with the bot's seeds, and observe them."""
        games = np.asarray(games, np.int64).reshape(-1)
        self.engine.reset(games)
        self.observer.reset(games)
        self.bot.reset(games, seeds)
        self.start_loop[games] = self.engine.game_loop[games]
        self.last_action_loop[games] = -1
        self.observer.observe(self.engine.state, games)

    def save(self, game: int) -> GameSave:
        """One game as it is now (:class:`GameSave`).

        Raises:
            ValueError: ``game`` not an int in [0, B).
        """
        engine = self.engine.save(game)  # checks the index
        g = int(game)
        obs = self.observer
        return GameSave(
            self.engine.map.name, self.data_profile, obs.omniscient, obs.max_entities, engine, self.bot.save(g),
            obs.save(g), int(self.start_loop[g]), int(self.last_action_loop[g]),
        )  # fmt: skip

    def check_save(self, saved: GameSave) -> None:
        """Refuse a save these games cannot load, before anything is written (:meth:`load`).

        Raises:
            ValueError: ``saved`` not a :class:`GameSave`, saved from games of another map, data profile,
                visibility (``omniscient``), entity rows or unit slots (each named with both values), or saved at or
                past these games' ``game_steps_per_episode``.
        """
        if not isinstance(saved, GameSave):
            raise ValueError(f"saved={type(saved).__name__}; expected a GameSave (LiteFullGameVectorEnv.save_game)")
        obs = self.observer
        for key, value, own in (
            ("map", saved.map_name, self.engine.map.name),
            ("data_profile", saved.data_profile, self.data_profile),
            ("omniscient", saved.omniscient, obs.omniscient),
            ("max_entities", saved.max_entities, obs.max_entities),
        ):
            if value != own:
                raise ValueError(f"a game saved with {key}={value!r}; these games have {key}={own!r}")
        self.engine.check_save(saved.engine)
        played = saved.game_loop - saved.start_loop
        if self.game_steps_per_episode and played >= self.game_steps_per_episode:
            raise ValueError(
                f"a game saved {played} game loops into its episode; these games end at game_steps_per_episode="
                f"{self.game_steps_per_episode}, so it would end on its first step"
            )

    def load(self, game: int, saved: GameSave) -> None:
        """Make game ``game`` the saved one, and observe it.

        Raises:
            ValueError: ``game`` not an int in [0, B), or a save :meth:`check_save` refuses (nothing is written).
        """
        g = self.engine.game_index(game)
        self.check_save(saved)
        self.engine.load(g, saved.engine)
        self.bot.load(g, saved.bot)
        self.observer.load(g, saved.observer)
        self.start_loop[g] = saved.start_loop
        self.last_action_loop[g] = saved.last_action_loop
        self.observer.observe(self.engine.state, np.array([g]))

    def step(self, action: dict, batched: bool = True):
        """One env step of every game; returns ``(reward, terminated, truncated, errors, invalid)``:
        ``(B,)`` float32, bool, bool, ``(B, spec.MAX_ACTION_ERRORS)`` int32 ActionResult codes of the
        refused commands (0-padded) and ``(B,)`` int32 ``spec.InvalidAction`` codes.

        ``batched=False``: ``action`` is one game's heads with a leading axis added (error messages
        leave that axis out; see ``check_heads``).
        """
        heads = check_heads(action, self.num_games, self.max_entities, self.max_selected, self.raw_resolution, batched)
        obs = self.observer
        ck, cf, cs, invalid, camera = decode(
            heads,
            self.cmd_table,
            self.param_table,
            obs.row_slot,
            obs.entity_mask,
            self.engine.map.map_size,
            self.raw_resolution,
        )
        cam = ~np.isnan(camera[:, 0])
        obs.camera[cam] = camera[cam]
        unsupported = ck[:, CK_KIND] == CMD_UNSUPPORTED
        ck[unsupported, CK_KIND] = CMD_NONE
        result = self.engine.apply(ck, cf, cs)
        result[unsupported] = AR_NOT_SUPPORTED
        fid = np.where(invalid != spec.InvalidAction.NONE, 0, heads["action_type"])
        loop = self.engine.game_loop.copy()
        acted = fid != 0
        gap = np.where(self.last_action_loop < 0, 0, loop - self.last_action_loop)
        generals = spec.general_function_ids()
        obs.last_action[acted, 0] = generals[fid[acted]]
        obs.last_action[acted, 1] = np.minimum(gap[acted], spec.MAX_DELAY)
        obs.last_action[acted, 2] = heads["queued"][acted]
        self.last_action_loop[acted] = loop[acted]
        loops = (
            np.full(self.num_games, self.step_mul, np.int64) if self.step_mul is not None else np.maximum(heads["delay"], 1)
        )
        if self.game_steps_per_episode:
            loops = np.minimum(loops, np.maximum(self.start_loop + self.game_steps_per_episode - loop, 0))
        self.bot.run(loops)
        self.observer.observe(self.engine.state)
        res = self.engine.result
        terminated = res != RESULT_NONE
        reward = np.where(res == RESULT_P1_WINS, 1.0, np.where(res == RESULT_P2_WINS, -1.0, 0.0)).astype(np.float32)
        elapsed = self.engine.game_loop - self.start_loop
        truncated = (self.game_steps_per_episode > 0) & (elapsed >= self.game_steps_per_episode) & ~terminated
        # the command's ActionResult (result 0: none sent), then the agent's Build orders refused on arrival,
        # oldest first, in the columns left; those that do not fit wait for the next step (the real game
        # reports them in a later observation too), none is overwritten
        errors = np.zeros((self.num_games, spec.MAX_ACTION_ERRORS), np.int32)
        refused = (result != spec.NO_ACTION_ERROR) & (result != AR_SUCCESS)
        errors[refused, 0] = result[refused]
        err = self.engine.state.err
        for g in np.flatnonzero(err[:, 0, 0] > 0):
            used = int(refused[g])
            codes = read_refusals(err[g, 0], spec.MAX_ACTION_ERRORS - used)
            errors[g, used : used + len(codes)] = codes
        err[:, 1] = 0  # the bot's refusals: not the agent's action errors
        return reward, terminated, truncated, errors, invalid


def _validate(kwargs: dict) -> None:
    check_served(kwargs["map_name"], kwargs["race"], kwargs["bot_race"], kwargs["bot_difficulty"])
    for name, maximum in MAX_SIZES.items():
        _check_int(name, kwargs[name], 1, maximum)
    for name in ("omniscient", "query_available_actions", "realtime"):
        if name in kwargs and not isinstance(kwargs[name], (bool, np.bool_)):
            raise TypeError(f"{name}={kwargs[name]!r}; expected a bool")
    if kwargs.get("realtime"):  # FullGame-v0's flag for the real game; the API server refuses it too
        raise ValueError(
            "realtime=True is not served by the lite engine (it runs in step mode: each step advances step_mul "
            "game loops at once); backend='sc2' plays in real time"
        )
    if kwargs.get("version") is not None:  # it would be ignored: the lite engine's game data is its data profile
        raise ValueError(
            f"version={kwargs['version']!r} picks a StarCraft II binary (backend='sc2'); the lite engine's game data "
            f"is data_profile (one of {sorted(PROFILES)}); leave version out"
        )
    if not isinstance(kwargs["data_profile"], str) or kwargs["data_profile"] not in PROFILES:
        raise ValueError(f"data_profile={kwargs['data_profile']!r}; expected one of {sorted(PROFILES)}")
    if "bot_build" in kwargs and (not isinstance(kwargs["bot_build"], str) or kwargs["bot_build"] not in BOT_BUILDS):
        raise ValueError(f"bot_build={kwargs['bot_build']!r}; expected one of {list(BOT_BUILDS)}")
    if kwargs["step_mul"] is not None:
        _check_int("step_mul", kwargs["step_mul"], 1, MAX_LOOPS["step_mul"])
    _check_int("game_steps_per_episode", kwargs["game_steps_per_episode"], 0, MAX_LOOPS["game_steps_per_episode"])


class LiteFullGameEnv(gym.Env):
    """FullGame-v0 on the lite engine: Protoss vs the very_easy Terran bot on Simple64.

    Args:
        map_name: ``"Simple64"`` (the one map served).
        race: ``"protoss"``; bot_race: ``"terran"``; bot_difficulty: ``"very_easy"``; bot_build:
            one of ``BOT_BUILDS`` (``random``, ``rush``, ...), accepted for FullGame-v0
            compatibility (the lite bot has one build).
        step_mul: game loops per step (8 = half a normal-speed second), or None to step ``max(delay, 1)``;
            at most ``MAX_LOOPS["step_mul"]`` (2**20).
        game_steps_per_episode: truncate after this many game loops (0 = no limit; at most 2**62).
        max_entities, max_selected, raw_resolution, minimap_resolution: as ``FullGameEnv``; at
            most ``MAX_SIZES`` (65536, 65536, 4096, 1024).
        omniscient: a bool: no fog of war (every unit visible), as the replay dataset's default.
        capacity: unit slots per game (at most ``MAX_SIZES["capacity"]``, 65536).
        data_profile: the game-data profile, a key of ``sc2_envs.lite.data.PROFILES`` (``"3.16.1"``, ``"4.10"``).
        query_available_actions, log_dir: accepted for FullGame-v0 compatibility (the action mask is
            always computed; there is no game process to log); ``query_available_actions`` is a bool.
        version, realtime: the real game's; accepted only as their defaults (None, False): the lite
            engine's game data is ``data_profile``, and it runs in step mode.

    Raises:
        ValueError: a map, race, difficulty the lite engine does not serve (the message lists
            those served), an unknown ``bot_build`` or ``data_profile``, a size below 1 or above
            ``MAX_SIZES``, a ``step_mul`` / ``game_steps_per_episode`` outside its range
            (``MAX_LOOPS``), ``realtime=True`` or a ``version``.
        TypeError: a size, ``capacity`` or ``step_mul`` that is not an int, or ``omniscient``,
            ``query_available_actions`` or ``realtime`` that is not a bool.
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
        omniscient: bool = False,
        capacity: int = DEFAULT_CAPACITY,
        data_profile: str = "3.16.1",
        query_available_actions: bool = True,
        log_dir: str | None = None,
        version: str | None = None,
        realtime: bool = False,
    ):
        self._kwargs = dict(locals())
        self._kwargs.pop("self")
        self._kwargs.pop("__class__", None)
        _validate(self._kwargs)
        self.map_name = map_name
        self.step_mul = step_mul
        self.game_steps_per_episode = int(game_steps_per_episode)
        self.max_entities = int(max_entities)
        self.max_selected = int(max_selected)
        self.raw_resolution = int(raw_resolution)
        self.minimap_resolution = int(minimap_resolution)
        self.omniscient = bool(omniscient)
        self.observation_space = make_observation_space(self.max_entities, self.minimap_resolution)
        self.action_space = make_action_space(self.max_entities, self.max_selected, self.raw_resolution)
        self._games: LiteGames | None = None
        self._ended: str | None = None  # "terminated" / "truncated" once the episode ended

    def __getstate__(self):
        return {"kwargs": dict(self._kwargs)}

    def __setstate__(self, state):
        self.__init__(**state["kwargs"])

    def _core(self) -> LiteGames:
        if self._games is None:
            k = self._kwargs
            self._games = LiteGames(
                1, k["map_name"], k["step_mul"], k["game_steps_per_episode"], k["max_entities"], k["max_selected"],
                k["raw_resolution"], k["minimap_resolution"], k["omniscient"], k["capacity"], k["data_profile"],
            )  # fmt: skip
        return self._games

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start a new game; ``seed`` seeds the bot's timeline jitter (an int in [0, 2**63 - 1]).

        Raises:
            ValueError: a seed that is not a non-negative int, or ``options`` other than None / ``{}``.
        """
        seed = check_seed(seed)
        check_reset_options(options)
        super().reset(seed=seed)
        core = self._core()
        bot_seed = int(self.np_random.integers(0, 2**63 - 1))
        core.reset(np.array([0]), [bot_seed])
        self._ended = None
        left_out = int(core.observer.entities_left_out()[0])
        return core.observer.as_dict(0), spec.step_info(core.engine.game_loop[0], entities_left_out=left_out)

    def step(self, action: dict):
        """One step (see the module docstring).

        Raises:
            RuntimeError: ``step`` before ``reset``, or after the episode ended (terminated or truncated):
                the engine runs no more loops of an ended game, so its commands would act on a frozen one.
            ValueError: a malformed action (not a dict, an unknown key, a head of the wrong type,
                shape or range).
        """
        if self._games is None:
            raise RuntimeError("step() called before reset(); call reset() first")
        core = self._games
        if self._ended is not None:
            raise RuntimeError(
                f"step() called after the episode ended ({self._ended} at game loop {int(core.engine.game_loop[0])}); "
                "call reset()"
            )
        check_action_keys(action)
        batched = {k: np.asarray(v)[None] for k, v in action.items()}
        reward, terminated, truncated, errors, invalid = core.step(batched, batched=False)
        codes = errors[0][errors[0] != spec.NO_ACTION_ERROR]
        info = spec.step_info(core.engine.game_loop[0], codes, invalid[0], int(core.observer.entities_left_out()[0]))
        if terminated[0]:
            info["outcome"] = float(reward[0])
            self._ended = "terminated"
        if truncated[0]:
            info["episode_limit"] = True
            self._ended = "truncated"
        return core.observer.as_dict(0), float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    @property
    def engine(self) -> LiteEngine:
        """The lite engine (after the first ``reset``)."""
        return self._core().engine

    def close(self):
        """Nothing to end (no game process); kept for the Gymnasium API."""
        self._games = None


class LiteFullGameVectorEnv(gym.vector.VectorEnv):
    """B lite games stepped together, with FullGame-v0's spaces batched (Gymnasium VectorEnv).

    Observations and actions are dicts of arrays with a leading axis B. A game that ends is reset
    on the next ``step`` (Gymnasium's next-step autoreset): that step's action is ignored for it
    and it returns its first observation with reward 0.

    The observation arrays are the env's own buffers, overwritten by the next ``step`` or
    ``reset`` (at B=256 a copy of the entity rows alone is 20 MB per step); copy what you keep.

    Args:
        num_envs: B, in [1, ``MAX_NUM_ENVS``] (65536).
        seed: base seed of the games' bot jitter (game ``b`` of episode ``k`` draws from it).
        the rest: as ``LiteFullGameEnv``.
    """

    metadata: ClassVar[dict] = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 8, map_name: str = "Simple64", race: str = "protoss", bot_race: str = "terran",
                 bot_difficulty: str = "very_easy", step_mul: int | None = 8, game_steps_per_episode: int = 0,
                 max_entities: int = 512, max_selected: int = 64, raw_resolution: int = 64, minimap_resolution: int = 64,
                 omniscient: bool = False, capacity: int = DEFAULT_CAPACITY, data_profile: str = "3.16.1"):  # fmt: skip
        kw = dict(locals())
        kw.pop("self")
        kw.pop("__class__", None)
        _validate(kw)
        self.num_envs = _check_int("num_envs", num_envs, 1, MAX_NUM_ENVS)
        self._reset_done = False
        self._core = LiteGames(
            self.num_envs, map_name, step_mul, game_steps_per_episode, max_entities, max_selected, raw_resolution,
            minimap_resolution, omniscient, capacity, data_profile,
        )  # fmt: skip
        self.single_observation_space = make_observation_space(int(max_entities), int(minimap_resolution))
        self.single_action_space = make_action_space(int(max_entities), int(max_selected), int(raw_resolution))
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._autoreset = np.zeros(self.num_envs, bool)
        self._rng = np.random.default_rng()

    @property
    def engine(self) -> LiteEngine:
        return self._core.engine

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every game; returns batched observations and the info ``step`` gives, with the same keys,
        dtypes and shapes (``game_loop`` (B,) int64, ``action_errors`` (B, ``spec.MAX_ACTION_ERRORS``) int32,
        ``invalid_action`` (B,) int32, no errors, and ``entities_left_out`` (B,) int32): TorchRL's info reader
        takes its keys from the reset, and the single env gives them at reset too.

        Raises:
            ValueError: a seed that is not an int in [0, 2**63 - 1] (a list of per-game seeds among them), or
                ``options`` other than None / ``{}`` (no ``reset_mask``: every game resets here, and an ended game
                resets on the next ``step``).
        """
        if isinstance(seed, (list, tuple, np.ndarray)):  # Gymnasium's VectorEnv allows one seed per env
            raise ValueError(
                f"seed={seed!r}: one seed per game is not supported here; expected an int in [0, {MAX_SEED}] (it seeds "
                "every game: game b gets a seed drawn from it) or None"
            )
        seed = check_seed(seed)
        check_reset_options(options)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        seeds = self._rng.integers(0, 2**63 - 1, size=self.num_envs)
        self._core.reset(np.arange(self.num_envs), seeds)
        self._autoreset[:] = False
        self._reset_done = True
        b = self.num_envs
        errors = np.full((b, spec.MAX_ACTION_ERRORS), spec.NO_ACTION_ERROR, np.int32)
        invalid = np.full(b, spec.InvalidAction.NONE, np.int32)
        return self._core.observer.as_dict(None, copy=False), self._info(errors, invalid)

    def _info(self, errors: np.ndarray, invalid: np.ndarray) -> dict:
        return {
            "game_loop": self._core.engine.game_loop.copy(),
            "action_errors": errors,
            "invalid_action": invalid,
            "entities_left_out": self._core.observer.entities_left_out(),
        }

    def step(self, actions: dict):
        """Step all games (batched heads); ended games reset first (their action is ignored).

        Returns:
            ``(obs, reward (B,) float32, terminated (B,) bool, truncated (B,) bool, info)``; info has
            ``game_loop`` (B,) int64, ``action_errors`` (B, ``spec.MAX_ACTION_ERRORS``) int32 and
            ``invalid_action`` (B,) int32, as ``LiteFullGameEnv.step`` per game (zeros for a game reset
            on this step), and ``entities_left_out`` (B,) int32 of the observation returned.

        Raises:
            RuntimeError: ``step`` before ``reset``.
            ValueError: a malformed action (see ``LiteFullGameEnv.step``).
        """
        if not self._reset_done:
            raise RuntimeError("step() called before reset(); call reset() first")
        check_action_keys(actions)
        core = self._core
        if self._autoreset.any():
            games = np.flatnonzero(self._autoreset)
            actions = {k: np.array(v, copy=True) for k, v in actions.items()}
            if "action_type" in actions:
                actions["action_type"][games] = 0
        reward, terminated, truncated, errors, invalid = core.step(actions)
        if self._autoreset.any():
            games = np.flatnonzero(self._autoreset)
            core.reset(games, self._rng.integers(0, 2**63 - 1, size=len(games)))
            reward[games] = 0.0
            terminated[games] = False
            truncated[games] = False
            errors[games] = spec.NO_ACTION_ERROR
            invalid[games] = spec.InvalidAction.NONE
        self._autoreset = terminated | truncated
        return core.observer.as_dict(None, copy=False), reward, terminated, truncated, self._info(errors, invalid)

    def save_game(self, game: int) -> GameSave:
        """Game ``game`` as it is after the last ``step`` (:class:`GameSave`), to be loaded later, here or in
        another vector env on the same map with the same sizes.

        Raises:
            RuntimeError: before ``reset``.
            ValueError: ``game`` not an int in [0, B), or a game that ended on the last step.
        """
        if not self._reset_done:
            raise RuntimeError("save_game() called before reset(); call reset() first")
        game_index = self._core.engine.game_index(game)
        if self._autoreset[game_index]:
            raise ValueError(f"game={game!r} ended on the last step (it resets on the next); save a game that is running")
        return self._core.save(game_index)

    def load_game(self, game: int, saved: GameSave) -> None:
        """Replace game ``game`` by a saved one: it goes on from the saved game loop, with the saved episode
        start (the ``game_steps_per_episode`` limit counts from there) and bot. Its row of the observation
        arrays the last ``step`` or ``reset`` returned (the env's own buffers) now holds the saved game's
        observation; a pending autoreset of it is dropped. The rest of that step's return (reward, flags, info)
        is unchanged: a caller starting a new episode from the save treats this observation as its first.

        Raises:
            RuntimeError: before ``reset``.
            ValueError: ``game`` not an int in [0, B), or ``saved`` not a :class:`GameSave` of games like these
                (``LiteGames.check_save``); nothing is written then.
        """
        if not self._reset_done:
            raise RuntimeError("load_game() called before reset(); call reset() first")
        self._core.load(game, saved)
        self._autoreset[int(game)] = False

    def close_extras(self, **kwargs):
        """Nothing to end (no processes)."""
