"""One Simple64 game of the lite engine behind the StarCraft II API (what ``server.py`` serves for
``Melee/Simple64.SC2Map``).

The game is ``sc2_envs.lite``'s: Protoss (the client, player 1) against the very_easy Terran bot
(player 2) on Simple64, one ``LiteEngine`` game with its ``Observer`` and ``VeryEasyTerranBot``, the
same objects ``LiteFullGameEnv`` steps. The protocol side is a thin layer:

* observations are ``sc2_envs.lite.proto.observation_proto`` (raw units, ``player_common``, the
  eight minimap renders) plus ``score``, ``action_errors`` and ``player_result``;
* a raw unit command's ``(ability_id, target kind)`` names a pysc2 raw function
  (``spec.function_by_ability``), which names an engine command (``sc2_envs.lite.commands.
  command_tables``, the table the direct door uses), so both doors apply the same command for the
  same action; unit tags are the engine's (``(slot + 1) << 18 | recycle``, ``kernels.unit_tag``);
* ``step`` runs the bot and the engine (``VeryEasyTerranBot.run``), then observes, as one
  ``LiteFullGameEnv`` step does.

Seeds: ``RequestCreateGame.random_seed = s`` gives the bot the timeline ``LiteFullGameEnv.reset(seed=s)``
gives it (the first draw of ``numpy.random.default_rng(s)``, which is Gymnasium's ``np_random(s)``), so a
client on this server and the direct env play the same game for the same seed and actions.
``restart_game`` replays the same seed, as the game's ``RequestRestartGame`` keeps its ``random_seed``.
"""

from __future__ import annotations

import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.lite.commands import CMD_UNSUPPORTED as ENGINE_CMD_UNSUPPORTED
from sc2_envs.lite.commands import MOVE_CAMERA as RAW_MOVE_CAMERA
from sc2_envs.lite.layout import (
    AR_ERROR,
    AR_NOT_SUPPORTED,
    AR_SUCCESS,
    CK_KIND,
    CK_PARAM,
    CK_PLAYER,
    CK_QUEUED,
    CK_TARGET,
    CMD_NONE,
    NCK,
    PF_COLLECTED_MINERALS,
    PF_COLLECTED_VESPENE,
    PF_FOOD_ARMY,
    PF_FOOD_WORKERS,
    PF_SPENT_MINERALS,
    PF_SPENT_VESPENE,
    RESULT_NONE,
    RESULT_P1_WINS,
    RESULT_P2_WINS,
    UI_ALIVE,
    UI_RECYCLE,
)
from sc2_envs.lite.state import read_refusals

__all__ = [
    "AR_ERROR",
    "AR_NOT_SUPPORTED",
    "AR_SUCCESS",
    "ENGINE_CMD_UNSUPPORTED",
    "LITE_MAP_PATH",
    "RAW_MOVE_CAMERA",
    "SERVED_AI_BUILDS",
    "SERVED_DIFFICULTY",
    "SERVED_RACE",
    "SERVED_BOT_RACE",
    "LiteAPIGame",
    "lite_map_path",
]

LITE_MAP_PATH = "Melee/Simple64.SC2Map"
"""The map path served from the lite engine (pysc2's ``maps.get("Simple64").path``)."""
SERVED_RACE = 3
"""s2clientprotocol ``Race.Protoss``: the race the client plays."""
SERVED_BOT_RACE = 1
"""``Race.Terran``: the built-in bot's race."""
SERVED_DIFFICULTY = 1
"""``Difficulty.VeryEasy``: the built-in bot's difficulty."""
SERVED_AI_BUILDS = (1,)
"""``AIBuild.RandomBuild`` (the default): the lite bot plays one fitted build."""

_TAG_SLOT_BITS = 18
_GONE = 1 << 30  # a tag naming no live unit: the engine answers it as a dead unit (Error / CantTargetThatUnit)
_RESULT_VICTORY, _RESULT_DEFEAT, _RESULT_TIE = 1, 2, 3  # s2clientprotocol Result
_SCORE_MELEE = 2  # ScoreType.Melee


def lite_map_path(path: str) -> bool:
    """True when a ``local_map.map_path`` names the served Simple64 (``.../Melee/Simple64.SC2Map``)."""
    parts = path.replace("\\", "/").split("/")
    return parts[-2:] == LITE_MAP_PATH.split("/")


class LiteAPIGame:
    """A Simple64 lite game as the API server plays it (module docstring).

    Args:
        seed: ``RequestCreateGame.random_seed``; None draws one (kept for restarts).
        omniscient: ``RequestCreateGame.disable_fog``.
        minimap_resolution: the joined ``feature_layer.minimap_resolution`` (0: no minimap renders).
        score: the joined ``options.score`` (observations carry ``score`` only then, as the game's).
    """

    def __init__(self, seed: int | None, omniscient: bool, minimap_resolution: int, score: bool = True):
        # the engine (Numba kernels) is imported when a Simple64 game is joined, not when the server starts
        from sc2_envs.lite.commands import command_tables
        from sc2_envs.lite.env import LiteGames
        from sc2_envs.lite.proto import observation_proto

        self._observation_proto = observation_proto
        self.seed = int(seed) if seed is not None else int(np.random.SeedSequence().entropy % (1 << 31))
        self.minimap_resolution = int(minimap_resolution)
        self.score = bool(score)
        # 512 entity rows hold every unit slot and snapshot. The observer's direct arrays are not served (only
        # its fog, snapshot marks and camera are); they are kept at one resolution for raw grid and minimap,
        # as the observer's kernel draws minimap boxes on the raw grid. Without a minimap layer it renders 64.
        resolution = self.minimap_resolution or 64
        self.games = LiteGames(
            1, minimap_resolution=resolution, raw_resolution=resolution, omniscient=omniscient, max_entities=512
        )
        self.engine = self.games.engine
        self.cmd_table, self.param_table = command_tables(self.engine.catalog)
        self.by_ability = spec.function_by_ability()
        self.action_errors: list[tuple[int, int, int]] = []
        self._cache = None
        self.restart()

    # ------------------------------------------------------------------ game flow
    def restart(self) -> None:
        """Back to loop 0 with the game's seed (the bot's timeline as ``LiteFullGameEnv.reset(seed)``)."""
        bot_seed = int(np.random.default_rng(self.seed).integers(0, 2**63 - 1))
        self.games.reset(np.array([0]), [bot_seed])
        self.action_errors = []
        self._cache = None

    @property
    def game_loop(self) -> int:
        return int(self.engine.game_loop[0])

    @property
    def ended(self) -> bool:
        """True once the melee rule decided the game."""
        return int(self.engine.result[0]) != RESULT_NONE

    def step(self, count: int) -> None:
        """Run ``count`` game loops (the bot acts on the way), then observe (fog and snapshots)."""
        self.games.bot.run(np.array([count], np.int64))
        st = self.engine.state
        for code in read_refusals(st.err[0, 0]):  # each Build order that failed on arrival
            self.action_errors.append((0, 0, code))
        st.err[0, 1] = 0  # the bot's own
        self.games.observer.observe(st)
        self._cache = None

    # ------------------------------------------------------------------ actions
    def _slot(self, tag: int) -> int:
        ui = self.engine.state.ui[0]
        slot = (int(tag) >> _TAG_SLOT_BITS) - 1
        if not 0 <= slot < ui.shape[0] or not ui[slot, UI_ALIVE]:
            return _GONE
        if int(tag) & 0x3FFFF != int(ui[slot, UI_RECYCLE]) & 0x3FFFF:
            return _GONE
        return slot

    def apply(self, action) -> int:
        """Apply one ``sc2api_pb2.Action``; returns its ``ActionResult``.

        Served: ``action_raw.unit_command`` (any ability the engine models, ``queue_command``
        included) and ``action_raw.camera_move``. Anything else is ``NotSupported``; a point that is
        NaN or infinite (a unit command's target or the camera's centre) is an ``Error``. A refused
        unit command or camera move is also kept for the next observation's ``action_errors`` (a
        camera move with unit tag 0 and ability id 0: it names neither).
        """
        self._cache = None
        if not action.HasField("action_raw"):
            return AR_NOT_SUPPORTED
        raw = action.action_raw
        which = raw.WhichOneof("action")
        if which == "camera_move":
            p = raw.camera_move.center_world_space
            if not (np.isfinite(p.x) and np.isfinite(p.y)):
                self.action_errors.append((0, 0, AR_ERROR))  # names no place: the camera would be NaN
                return AR_ERROR
            self.games.observer.camera[0] = (p.x, p.y)
            return AR_SUCCESS
        if which != "unit_command":
            return AR_NOT_SUPPORTED
        cmd = raw.unit_command
        result = self._unit_command(cmd)
        if result != AR_SUCCESS:
            self.action_errors.append((int(cmd.unit_tags[0]) if cmd.unit_tags else 0, int(cmd.ability_id), result))
        return result

    def _unit_command(self, cmd) -> int:
        kind_name = cmd.WhichOneof("target")
        kind = {"target_world_space_pos": "pt", "target_unit_tag": "unit", None: "quick"}[kind_name]
        fid = self.by_ability.get((int(cmd.ability_id), kind))
        if fid is None or fid == RAW_MOVE_CAMERA:
            return AR_NOT_SUPPORTED  # no raw function has this ability with this target kind
        engine_cmd = int(self.cmd_table[fid])
        if engine_cmd == ENGINE_CMD_UNSUPPORTED:
            return AR_NOT_SUPPORTED
        if engine_cmd == CMD_NONE:
            return AR_SUCCESS
        if not cmd.unit_tags:
            return AR_ERROR
        ck = np.zeros((1, NCK), np.int64)
        ck[0, CK_KIND], ck[0, CK_PARAM], ck[0, CK_PLAYER] = engine_cmd, self.param_table[fid], 1
        ck[0, CK_QUEUED] = int(bool(cmd.queue_command))
        ck[0, CK_TARGET] = self._slot(cmd.target_unit_tag) if kind == "unit" else -1
        cf = np.zeros((1, 2), np.float32)
        if kind == "pt":
            x, y = cmd.target_world_space_pos.x, cmd.target_world_space_pos.y
            if not (np.isfinite(x) and np.isfinite(y)):
                return AR_ERROR  # names no place (the engine would walk units to NaN)
            cf[0] = (x, y)
        cs = np.array([[self._slot(t) for t in cmd.unit_tags] + [-1]], np.int64)
        return int(self.engine.apply(ck, cf, cs)[0])

    # ------------------------------------------------------------------ messages
    def _protos(self):
        if self._cache is None:
            self._cache = self._observation_proto(self.engine, self.games.observer, 0)
        return self._cache

    def fill_observation(self, resp) -> None:
        """Fill a ``ResponseObservation``: the view, score, action errors since the last one, result."""
        view, _ = self._protos()
        resp.MergeFrom(view)
        if not self.minimap_resolution:
            resp.observation.ClearField("feature_layer_data")
        if self.score:
            pf = self.engine.state.pf[0, 1]
            score = resp.observation.score
            score.score_type = _SCORE_MELEE
            d = score.score_details
            d.collected_minerals, d.collected_vespene = float(pf[PF_COLLECTED_MINERALS]), float(pf[PF_COLLECTED_VESPENE])
            d.spent_minerals, d.spent_vespene = float(pf[PF_SPENT_MINERALS]), float(pf[PF_SPENT_VESPENE])
            d.food_used.economy, d.food_used.army = float(pf[PF_FOOD_WORKERS]), float(pf[PF_FOOD_ARMY])
        for tag, ability, result in self.action_errors:
            resp.action_errors.add(unit_tag=tag, ability_id=ability, result=result)
        self.action_errors = []
        res = int(self.engine.result[0])
        if res != RESULT_NONE:
            mine = {RESULT_P1_WINS: _RESULT_VICTORY, RESULT_P2_WINS: _RESULT_DEFEAT}.get(res, _RESULT_TIE)
            theirs = {_RESULT_VICTORY: _RESULT_DEFEAT, _RESULT_DEFEAT: _RESULT_VICTORY}.get(mine, _RESULT_TIE)
            resp.player_result.add(player_id=1, result=mine)
            resp.player_result.add(player_id=2, result=theirs)

    def fill_query_abilities(self, req, resp) -> None:
        """Answer ``RequestQuery.abilities``: each asked tag's available abilities (none for a tag
        that is not a live own unit), with the resource checks of ``ignore_resource_requirements=False``."""
        _, query = self._protos()
        by_tag = {entry.unit_tag: entry for entry in query.abilities}
        for ask in req.abilities:
            entry = resp.abilities.add(unit_tag=ask.unit_tag)
            known = by_tag.get(ask.unit_tag)
            if known is not None:
                entry.abilities.extend(known.abilities)

    def fill_game_info(self, g, options, map_path: str) -> None:
        """Fill a ``ResponseGameInfo``: players, the map's grids, playable area and start location."""
        m = self.engine.map
        g.map_name = m.name
        g.local_map_path = map_path
        g.player_info.add(player_id=1, type=1, race_requested=SERVED_RACE, race_actual=SERVED_RACE)
        g.player_info.add(
            player_id=2, type=2, race_requested=SERVED_BOT_RACE, race_actual=SERVED_BOT_RACE,
            difficulty=SERVED_DIFFICULTY, ai_build=SERVED_AI_BUILDS[0],
        )  # fmt: skip
        sr = g.start_raw
        w, h = m.map_size
        sr.map_size.x, sr.map_size.y = w, h
        x0, y0, x1, y1 = m.playable
        sr.playable_area.p0.x, sr.playable_area.p0.y = x0, y0
        sr.playable_area.p1.x, sr.playable_area.p1.y = x1, y1
        # The game's grids: rows from y = 0, 1-bit grids packed MSB first (LiteMap's (H, W) layout).
        for field, grid in (("pathing_grid", m.pathing), ("placement_grid", m.placement)):
            image = getattr(sr, field)
            image.bits_per_pixel = 1
            image.size.x, image.size.y = w, h
            image.data = np.packbits(np.asarray(grid) != 0, axis=1).tobytes()
        sr.terrain_height.bits_per_pixel = 8
        sr.terrain_height.size.x, sr.terrain_height.size.y = w, h
        sr.terrain_height.data = np.ascontiguousarray(m.height, dtype=np.uint8).tobytes()
        x, y = m.start_locations[1]  # the game lists the opponents' possible starts, not the player's own
        sr.start_locations.add(x=x, y=y)
        g.options.CopyFrom(options)

    def fill_data(self, req, resp) -> None:
        """Fill ``ResponseData.units`` (when ``unit_type_id`` is asked) with the engine's unit types:
        id, name, costs, supply, build time (game loops) and the ability that makes them."""
        from sc2_envs.lite.catalog import (
            TF_FOOD,
            TF_FOOD_PROVIDED,
            TI_ABILITY_ID,
            TI_BUILD_TIME,
            TI_GAS,
            TI_MINERALS,
            TI_RACE,
        )

        if not req.unit_type_id:
            return
        cat = self.engine.catalog
        for t, name in enumerate(cat.names):
            u = resp.units.add(unit_id=int(cat.game_ids[t]), name=name, available=True)
            u.mineral_cost, u.vespene_cost = int(cat.ti[t, TI_MINERALS]), int(cat.ti[t, TI_GAS])
            u.food_required, u.food_provided = float(cat.tf[t, TF_FOOD]), float(cat.tf[t, TF_FOOD_PROVIDED])
            u.build_time = float(cat.ti[t, TI_BUILD_TIME])
            u.ability_id = int(cat.ti[t, TI_ABILITY_ID])
            u.race = int(cat.ti[t, TI_RACE])
