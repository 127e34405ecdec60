"""A StarCraft II API server backed by the embedded simulators.

It speaks the game's protocol (s2clientprotocol ``Request`` / ``Response`` protobufs, one per WebSocket
message on ``ws://<host>:<port>/sc2api``) so that pysc2's ``run_configs`` can launch it as
``Versions/Base<build>/SC2_x64`` (see ``python -m sc2_envs.sc2api install``) and talk to it with
``RemoteController``, exactly as with the game. Two kinds of map are served:

* the SMAC maps (``SMAC_Maps/<name>.SC2Map``) from the batched SMAC simulator, for what SMAC-style
  clients send (below);
* ``Melee/Simple64.SC2Map`` from the lite full-game engine (``sc2_envs.sc2api.lite_game``): Protoss
  against the very_easy Terran bot, for raw-interface clients (pysc2's ``SC2Env`` with raw actions,
  FullGame-v0 with ``backend="sc2"``). ``create_game``: one Participant and one Computer of race
  Terran, difficulty VeryEasy, ai_build RandomBuild (or unset), ``random_seed`` (the bot's timeline, as
  ``LiteFullGameEnv.reset(seed)``), ``disable_fog``; anything else gets ``InvalidPlayerSetup`` naming what
  is served. ``join_game``: race Protoss, ``options.raw``; ``score`` and the ``feature_layer`` minimap
  (square ``minimap_resolution``, at most the lite engine's 1024) are served, screen layers are not sent, ``render`` and
  ``raw_crop_to_playable_area`` are refused (``FeatureUnsupported``). ``game_info``: players, map size 88 x 96, playable area,
  pathing and placement grids (1 bit per cell, rows from y = 0, MSB first), terrain height (1 byte per cell) and the
  opponent's start location. ``observation``: raw units (own units, enemies in sight, snapshots of
  enemy structures seen before, resources), ``player_common``, the eight minimap renders, ``score``
  (with ``options.score``: ``score_details`` collected / spent resources and food), ``action_errors`` and, once the melee rule
  ends the game (status ``ended``), ``player_result``. ``action``: raw unit commands of every ability
  the engine models (queued included) and ``camera_move``; a command the game would refuse gets its
  ``ActionResult`` and an ``action_errors`` entry, a Build order that fails on arrival an entry with
  tag 0. ``query``: available abilities (with resource checks); ``step`` (at most 2**20 game loops per
  request, the direct env's ``step_mul`` limit), ``data`` (unit types),
  ``restart_game`` (same seed), ``leave_game``, ``quit``. ``debug`` is not served there.

Served requests on the SMAC maps (s2clientprotocol ``sc2api.proto``):

* ``ping``: game version and build.
* ``create_game``: ``local_map`` with a SMAC map path (``SMAC_Maps/<name>.SC2Map``; the map bytes
  are not read), ``realtime=false``, ``random_seed`` (seeds the simulator as ``StarCraft2Env(seed=...)``
  does), ``player_setup`` = one Participant + one Computer (the simulator's built-in enemy: SMAC's
  difficulty 7, VeryHard; another difficulty gets ``InvalidPlayerSetup``).
* ``join_game``: the raw interface (``options.raw``); feature layers / rendering are refused.
* ``game_info``: map size 32 x 32, playable area (0, 0)-(32, 32), the pathing grid (1 bit per cell,
  rows from y = 0, MSB first) and the terrain height (1 byte per cell, rows from the top), laid out
  the way SMAC's ``_launch`` decodes them.
* ``data``: the unit types of the map (id and name).
* ``observation``: ``raw_data.units`` with the fields SMAC reads (``sc2_envs.sc2api.raw``): live units
  only, agents (owner 1, emulated ``*_RL`` type ids consecutive in SMAC's order) then enemies
  (owner 2, stock ids), ``tag``, ``pos``, ``health``/``health_max``, ``shield``/``shield_max``,
  ``energy``, ``weapon_cooldown`` (game loops), ``orders``.
* ``action``: raw unit commands of the agents: Stop (4), Move (16) to a point, Attack (23) a unit,
  MedivacHeal (386) an ally; ``queue_command`` is refused (``CantQueueThatOrder``), anything else
  ``NotSupported`` / ``Error`` per action. A target point with a NaN or infinite coordinate gets
  ``Error``; one farther off the playable area than SMAC's move reach gets ``NotSupported``
  (``SC2APIGame.target_point_result``). Every refused unit command is also reported in the next
  ``observation``'s ``action_errors`` (``sc2api.proto``: "Error result of actions since the last
  observation"): one ``ActionError`` per refused command, with its first unit tag (0 when it has
  none), its ability and its ``ActionResult``.
* ``step``: game loops; each block of 8 loops is one simulator env step (orders and enemy AI, then
  8 loop ticks), a shorter remainder runs loop ticks only.
* ``debug``: ``kill_unit`` (SMAC's reset). When no unit is left, the next ``step`` respawns the map's
  units with fresh tags, as the SMAC maps' trigger does (the simulator's next episode).
* ``leave_game``, ``quit``.

Anything else gets a ``Response`` with an ``error`` naming the request and listing the served ones
(never a hang); another map gets ``InvalidMapPath`` listing the supported maps. A client that
disconnects without ``quit`` has its game dropped at once; the server keeps listening for a new client,
exits when its parent process (the launcher) is gone, and after ``--idle-exit`` seconds without a
client.

Run directly: ``python -m sc2_envs.sc2api.server -listen 127.0.0.1 -port 5000`` (pysc2's argument
names; ``-dataDir``, ``-tempDir``, ``-verbose``, ``-dataVersion``, ... are accepted and ignored).
"""

from __future__ import annotations

import argparse
import math
import os
import select
import socket
import sys
import time
from pathlib import Path

import numpy as np
import torch

from sc2_envs.maps import MAP_SIZE, list_maps, pathing_grid, terrain_grids
from sc2_envs.sc2api.lite_game import (
    LITE_MAP_PATH,
    SERVED_AI_BUILDS,
    SERVED_BOT_RACE,
    SERVED_DIFFICULTY,
    SERVED_RACE,
    LiteAPIGame,
    lite_map_path,
)
from sc2_envs.sc2api.raw import OWNER_AGENTS, raw_units_from_sim, unit_type_ids
from sc2_envs.sc2api.websocket import WebSocketClosed, accept_websocket

__all__ = ["DEFAULT_BUILD", "GAME_VERSIONS", "SUPPORTED_REQUESTS", "SC2APIGame", "main", "serve"]

DEFAULT_BUILD = 75689
"""Build the server reports and ``install`` lays out by default (SC2 4.10.0, pysc2's ``lib.VERSIONS``)."""
GAME_VERSIONS = {69232: "4.6.2", 75689: "4.10.0"}
"""Game version strings of the builds SMAC's docs name (README: 4.6.2.69232 for the paper, 4.10)."""
SUPPORTED_REQUESTS = (
    "ping",
    "create_game",
    "join_game",
    "game_info",
    "data",
    "observation",
    "action",
    "step",
    "debug",
    "query",
    "restart_game",
    "leave_game",
    "quit",
)
LITE_ONLY_REQUESTS = ("query", "restart_game")
"""Requests served on ``Melee/Simple64.SC2Map`` (the lite engine) but not on the SMAC maps."""

_STATUS = {"launched": 1, "init_game": 2, "in_game": 3, "ended": 5, "quit": 6}
_ABILITY_STOP, _ABILITY_MOVE, _ABILITY_ATTACK, _ABILITY_HEAL = 4, 16, 23, 386
_RESULT_SUCCESS, _RESULT_NOT_SUPPORTED, _RESULT_ERROR, _RESULT_CANT_QUEUE = 1, 2, 3, 4
_DIFFICULTY_VERY_HARD = 7
"""s2clientprotocol `Difficulty.VeryHard`: SMAC's default difficulty "7", the only one the simulator's enemy plays."""


def _pb():
    from s2clientprotocol import common_pb2, data_pb2, debug_pb2, raw_pb2, sc2api_pb2  # noqa: F401

    return sc2api_pb2, raw_pb2, common_pb2, data_pb2


class SC2APIGame:
    """The game state machine of one server (``launched`` -> ``init_game`` -> ``in_game``).

    Args:
        build: the build reported by ``ping``.
        device: torch device of the simulator.
    """

    def __init__(self, build: int = DEFAULT_BUILD, device: str = "cpu"):
        self.build = build
        self.device = device
        self.sc, self.raw, self.common, self.data = _pb()
        self.status = "launched"
        self.sim = None
        self.map_name = None
        self.map_path = ""
        self.seed = None
        self.options = None
        self.game_loop = 0
        self.respawn_pending = False
        self.quit = False
        self.lite: LiteAPIGame | None = None
        """The Simple64 lite game (``map_name == "Simple64"``), else None (a SMAC map)."""
        self.lite_setup = None
        self.action_errors: list[tuple[int, int, int]] = []
        """``(unit_tag, ability_id, ActionResult)`` of the commands refused since the last observation."""

    # ------------------------------------------------------------------ dispatch
    def handle(self, payload: bytes) -> bytes:
        """Answer one serialized ``Request`` with one serialized ``Response`` (same ``id``)."""
        sc = self.sc
        resp = sc.Response()
        try:
            req = sc.Request.FromString(payload)
        except Exception as e:  # noqa: BLE001 - any decode failure is the client's protocol error
            resp.error.append(f"could not parse the Request protobuf ({type(e).__name__}: {e})")
            resp.status = _STATUS[self.status]
            return resp.SerializeToString()
        if req.HasField("id"):
            resp.id = req.id
        kind = req.WhichOneof("request")
        handler = getattr(self, f"_on_{kind}", None) if kind in SUPPORTED_REQUESTS else None
        if handler is not None and kind in LITE_ONLY_REQUESTS and self.map_name is not None and not self._is_lite:
            resp.error.append(
                f"request {kind!r} is not supported on the SMAC maps (served on {LITE_MAP_PATH} only); supported: "
                f"{', '.join(r for r in SUPPORTED_REQUESTS if r not in LITE_ONLY_REQUESTS)}"
            )
        elif handler is None:
            resp.error.append(
                f"request {kind!r} is not supported by the sc2_envs simulator server; supported: "
                f"{', '.join(SUPPORTED_REQUESTS)}"
            )
        else:
            try:
                handler(getattr(req, kind), resp)
            except _RequestError as e:
                resp.error.append(str(e))
        resp.status = _STATUS[self.status]
        return resp.SerializeToString()

    @property
    def _is_lite(self) -> bool:
        return self.map_name == "Simple64"

    def _need(self, *states: str, what: str) -> None:
        if self.status not in states:
            raise _RequestError(f"{what} needs game status {' or '.join(states)}, but it is {self.status}")

    # ------------------------------------------------------------------ requests
    def _on_ping(self, req, resp) -> None:
        resp.ping.game_version = GAME_VERSIONS.get(self.build, f"sc2_envs-sim.{self.build}")
        resp.ping.data_build = self.build
        resp.ping.base_build = self.build
        resp.ping.data_version = "sc2_envs-simulator"

    def _on_create_game(self, req, resp) -> None:
        self._need("launched", "ended", "in_game", what="create_game")
        r = resp.create_game
        codes = self.sc.ResponseCreateGame
        if not req.HasField("local_map"):
            r.error = codes.InvalidMapName if req.HasField("battlenet_map_name") else codes.MissingMap
            r.error_details = (
                "only local maps are served (local_map.map_path = SMAC_Maps/<name>.SC2Map or "
                f"{LITE_MAP_PATH}); supported SMAC maps: {', '.join(list_maps())}"
            )
            return
        path = req.local_map.map_path
        if lite_map_path(path):
            self._create_lite(req, r, path)
            return
        name = Path(path.replace("\\", "/")).name
        stem = name[: -len(".SC2Map")] if name.endswith(".SC2Map") else None
        if stem is None or stem not in list_maps():
            r.error = codes.InvalidMapPath
            r.error_details = (
                f"map {path!r} is not a map served by the simulator; supported maps: "
                f"{', '.join(list_maps())} (as SMAC_Maps/<name>.SC2Map), and {LITE_MAP_PATH} (the lite engine)"
            )
            return
        players = list(req.player_setup)
        kinds = sorted(p.type for p in players)
        if kinds != [1, 2]:  # Participant = 1, Computer = 2
            r.error = codes.InvalidPlayerSetup
            r.error_details = (
                "the simulator plays one Participant against one Computer (the built-in enemy); got "
                f"player types {[p.type for p in players]}"
            )
            return
        computer = next(p for p in players if p.type == 2)
        if computer.HasField("difficulty") and computer.difficulty != _DIFFICULTY_VERY_HARD:
            # the simulator's enemy is SMAC's difficulty "7" built-in AI; another level would be played as it, silently
            r.error = codes.InvalidPlayerSetup
            r.error_details = (
                f"the simulator's built-in enemy plays SMAC's difficulty 7 (VeryHard); got Computer difficulty "
                f"{computer.difficulty}"
            )
            return
        if req.realtime:
            raise _RequestError("realtime=true is not supported: the simulator runs in step mode (realtime=false)")
        self.map_name, self.map_path = stem, path
        self.seed = int(req.random_seed) if req.HasField("random_seed") else None
        self.sim = None
        self.lite = None
        self.status = "init_game"

    def _create_lite(self, req, r, path: str) -> None:
        """``create_game`` on Simple64: one Participant against the very_easy Terran Computer."""
        codes = self.sc.ResponseCreateGame
        players = list(req.player_setup)
        served = "one Participant and one Computer (race Terran, difficulty VeryEasy, ai_build RandomBuild)"
        if sorted(p.type for p in players) != [1, 2]:
            r.error = codes.InvalidPlayerSetup
            r.error_details = f"{LITE_MAP_PATH} is served with {served}; got player types {[p.type for p in players]}"
            return
        computer = next(p for p in players if p.type == 2)
        problems = []
        if computer.race != SERVED_BOT_RACE:
            problems.append(f"race {self.common.Race.Name(computer.race)} ({computer.race})")
        if computer.difficulty != SERVED_DIFFICULTY:
            problems.append(f"difficulty {self.sc.Difficulty.Name(computer.difficulty)} ({computer.difficulty})")
        if computer.HasField("ai_build") and computer.ai_build not in SERVED_AI_BUILDS:
            problems.append(f"ai_build {self.sc.AIBuild.Name(computer.ai_build)} ({computer.ai_build})")
        if problems:
            r.error = codes.InvalidPlayerSetup
            r.error_details = (
                f"the lite engine's built-in bot on {LITE_MAP_PATH} plays {served}; got Computer {', '.join(problems)}"
            )
            return
        if req.realtime:
            raise _RequestError("realtime=true is not supported: the lite engine runs in step mode (realtime=false)")
        self.map_name, self.map_path = "Simple64", path
        self.seed = int(req.random_seed) if req.HasField("random_seed") else None
        self.lite_setup = {"omniscient": bool(req.disable_fog)}
        self.sim = None
        self.lite = None
        self.status = "init_game"

    def _on_join_game(self, req, resp) -> None:
        self._need("init_game", what="join_game")
        opts = req.options
        if self._is_lite:
            self._join_lite(req, resp)
            return
        if not opts.raw:
            raise _RequestError("join_game: only the raw interface is served (options.raw=true)")
        for field in ("feature_layer", "render"):
            if opts.HasField(field):
                raise _RequestError(f"join_game: options.{field} is not supported by the simulator (raw interface only)")
        from sc2_envs.sim.env import SMACSim

        self.sim = SMACSim(self.map_name, num_envs=1, device=self.device, seed=self.seed, autoreset=False)
        self.sim.reset(seed=self.seed)
        self._ids = unit_type_ids(self.sim.spec)
        self.options = opts
        self.game_loop = 0
        self.respawn_pending = False
        self.status = "in_game"
        resp.join_game.player_id = 1

    def _join_lite(self, req, resp) -> None:
        """``join_game`` on Simple64: Protoss, the raw interface, optionally score and the minimap layer."""
        codes = self.sc.ResponseJoinGame
        opts, r = req.options, resp.join_game
        refused = []
        if req.WhichOneof("participation") != "race" or req.race != SERVED_RACE:
            got = self.common.Race.Name(req.race) if req.WhichOneof("participation") == "race" else "an observer"
            refused.append(f"race: the lite engine plays Protoss against its Terran bot; got {got}")
        if not opts.raw:
            refused.append("options.raw must be true (the raw interface is served)")
        if opts.HasField("render"):
            refused.append("options.render (RGB rendering) is not served")
        if opts.raw_crop_to_playable_area:
            refused.append("options.raw_crop_to_playable_area is not served (raw positions are the map's)")
        fl = opts.feature_layer
        minimap = 0
        if opts.HasField("feature_layer"):
            mx, my = fl.minimap_resolution.x, fl.minimap_resolution.y
            # the lite engine's own limit (its minimap planes are (8, R, R) bytes): 100000 would ask for 75 GiB
            from sc2_envs.lite.env import MAX_SIZES  # imported here: the engine loads when Simple64 is joined

            top = MAX_SIZES["minimap_resolution"]
            if mx != my or not 1 <= mx <= top:
                refused.append(f"feature_layer.minimap_resolution {mx}x{my}; expected a square resolution in [1, {top}]")
            minimap = mx
        if refused:
            r.error = codes.FeatureUnsupported
            r.error_details = "; ".join(refused) + (
                " (served: race Protoss, options.raw, score, feature_layer minimap renders; no screen layers, no render)"
            )
            return
        self.lite = LiteAPIGame(self.seed, self.lite_setup["omniscient"], minimap, score=opts.score)
        self.seed = self.lite.seed
        self.options = opts
        self.game_loop = 0
        self.status = "in_game"
        r.player_id = 1

    def _on_restart_game(self, req, resp) -> None:
        self._need("in_game", "ended", what="restart_game")
        self.lite.restart()
        self.status = "in_game"
        resp.restart_game.SetInParent()

    def _on_query(self, req, resp) -> None:
        self._need("in_game", what="query")
        if len(req.pathing) or len(req.placements):
            raise _RequestError("query: only abilities are served (pathing and placements are not)")
        self.lite.fill_query_abilities(req, resp.query)

    def _on_game_info(self, req, resp) -> None:
        self._need("in_game", what="game_info")
        if self._is_lite:
            self.lite.fill_game_info(resp.game_info, self.options, self.map_path)
            return
        g = resp.game_info
        g.map_name = self.map_name
        g.local_map_path = self.map_path
        for pid, ptype in ((1, 1), (2, 2)):
            p = g.player_info.add()
            p.player_id, p.type = pid, ptype
            race = self.sim.spec.a_race if pid == 1 else self.sim.spec.b_race
            p.race_requested = p.race_actual = {"T": 1, "Z": 2, "P": 3}[race]
        sr = g.start_raw
        sr.map_size.x = sr.map_size.y = MAP_SIZE
        sr.playable_area.p0.x = sr.playable_area.p0.y = 0
        sr.playable_area.p1.x = sr.playable_area.p1.y = MAP_SIZE
        grid = pathing_grid(self.sim.spec.terrain).astype(bool)  # [x, y]
        sr.pathing_grid.bits_per_pixel = 1
        sr.pathing_grid.size.x = sr.pathing_grid.size.y = MAP_SIZE
        sr.pathing_grid.data = np.packbits(grid.T, axis=1).tobytes()  # row y, bit x MSB first
        height = terrain_grids(self.sim.spec.terrain).height.astype(np.uint8)  # [x, y] API height bytes
        sr.terrain_height.bits_per_pixel = 8
        sr.terrain_height.size.x = sr.terrain_height.size.y = MAP_SIZE
        # row y, byte x, like the pathing grid: SMAC's flip in y then gives the simulator's obs_terrain_height
        sr.terrain_height.data = np.ascontiguousarray(height.T).tobytes()
        sr.placement_grid.bits_per_pixel = 1
        sr.placement_grid.size.x = sr.placement_grid.size.y = MAP_SIZE
        sr.placement_grid.data = np.packbits(grid.T, axis=1).tobytes()
        g.options.CopyFrom(self.options)

    def _on_data(self, req, resp) -> None:
        self._need("in_game", what="data")
        if self._is_lite:
            self.lite.fill_data(req, resp.data)
            return
        if req.unit_type_id:
            seen = set()
            for name, tid in zip(self.sim.table.names, self._ids, strict=True):
                if tid in seen:
                    continue
                seen.add(tid)
                u = resp.data.units.add()
                u.unit_id = tid
                u.name = name.title().replace("_", "") + ("_RL" if tid >= 1000 else "")
                u.available = True

    def _on_observation(self, req, resp) -> None:
        self._need("in_game", "ended", what="observation")
        if self._is_lite:
            if req.disable_fog and not self.lite_setup["omniscient"]:
                raise _RequestError(
                    "observation: disable_fog per request is not served; create the game with disable_fog=true"
                )
            self.lite.fill_observation(resp.observation)
            return
        obs = resp.observation.observation
        obs.game_loop = self.game_loop
        obs.player_common.player_id = 1
        for tag, ability, result in self.action_errors:
            err = resp.observation.action_errors.add()
            err.unit_tag, err.ability_id, err.result = tag, ability, result
        self.action_errors = []
        for u in raw_units_from_sim(self.sim, 0):
            pu = obs.raw_data.units.add()
            pu.display_type = 1
            pu.alliance = 1 if u.owner == OWNER_AGENTS else 4
            pu.tag, pu.unit_type, pu.owner = u.tag, u.unit_type, u.owner
            pu.pos.x, pu.pos.y, pu.pos.z = u.pos.x, u.pos.y, 0.0
            pu.radius, pu.build_progress = u.radius, 1.0
            pu.health, pu.health_max = u.health, u.health_max
            pu.shield, pu.shield_max = u.shield, u.shield_max
            pu.energy, pu.energy_max = u.energy, u.energy_max
            pu.weapon_cooldown = u.weapon_cooldown
            pu.is_flying = bool(self.sim.table.is_air[self._unit_index(u.tag)])
            for ability, target in u.orders:
                o = pu.orders.add()
                o.ability_id = ability
                if isinstance(target, tuple):
                    o.target_world_space_pos.x, o.target_world_space_pos.y = target
                else:
                    o.target_unit_tag = target

    def _unit_index(self, tag: int) -> int:
        """Simulator unit index of ``tag`` in the current episode, or -1."""
        episode = int(self.sim.st.episode_count[0])
        u = (tag & ((1 << 18) - 1)) - 1
        if tag >> 18 != episode + 1 or not 0 <= u < len(self.sim.table.names):
            return -1
        return u

    @staticmethod
    def target_point_result(x: float, y: float) -> int | None:
        """``None`` if a command's target point ``(x, y)`` is served, else the ``ActionResult`` refusing it.

        * A NaN or infinite coordinate: ``Error`` (3). It names no place, and the simulator would turn the
          unit's position into NaN.
        * A point farther than SMAC's move amount (2) outside the playable area (0, 0)-(32, 32) that
          ``game_info`` reports, i.e. outside [-2, 34] x [-2, 34]: ``NotSupported`` (2).

        Points off the playable area but within that reach are served as the embedded env serves them
        (the unit walks toward the point and stops at the map edge): SMAC itself sends them, since its
        ``can_move`` checks the cell half a move ahead (``int()`` of the coordinate) while the move goes a
        whole move (2) ahead, so a unit within one cell of an edge is sent to a point up to 2 past it. Refusing those would
        make SMAC's own legal moves fail here and differ from the embedded env.

        What the real game does with a point farther off the map is not established: s2client-proto
        (``ActionResult`` in ``error.proto``) has no result for an off-map point, and neither its docs nor
        pysc2's say. So the server refuses it rather than guess; the simulator would also mishandle it
        (beyond about 1.8e19 the squared distance overflows float32 and the unit silently stays put).
        """
        if not (math.isfinite(x) and math.isfinite(y)):
            return _RESULT_ERROR
        from sc2_envs.sim.rules.features import MOVE_AMOUNT

        lo, hi = -MOVE_AMOUNT, MAP_SIZE + MOVE_AMOUNT
        if not (lo <= x <= hi and lo <= y <= hi):
            return _RESULT_NOT_SUPPORTED
        return None

    def _on_action(self, req, resp) -> None:
        self._need("in_game", what="action")
        if self._is_lite:
            resp.action.result.extend(self.lite.apply(action) for action in req.actions)
            return
        for action in req.actions:
            result = self._apply(action)
            resp.action.result.append(result)
            if result != _RESULT_SUCCESS and action.HasField("action_raw") and action.action_raw.HasField("unit_command"):
                cmd = action.action_raw.unit_command
                self.action_errors.append((cmd.unit_tags[0] if cmd.unit_tags else 0, cmd.ability_id, result))

    def _apply(self, action) -> int:
        """Apply one ``Action``; returns its ``ActionResult`` (a refused one changes no order).

        A command with a target point is checked by :meth:`target_point_result` first, whatever its ability."""
        from sc2_envs.sim.state import ORDER_ATTACK, ORDER_HEAL, ORDER_MOVE, ORDER_NONE

        if not action.HasField("action_raw") or action.action_raw.WhichOneof("action") != "unit_command":
            return _RESULT_NOT_SUPPORTED
        cmd = action.action_raw.unit_command
        if cmd.queue_command:
            return _RESULT_CANT_QUEUE
        st, t, N = self.sim.st, self.sim.table, self.sim.n_agents
        units = [self._unit_index(tag) for tag in cmd.unit_tags]
        if not units or any(u < 0 or u >= N or not bool(st.alive[0, u]) for u in units):
            return _RESULT_ERROR
        target_kind = cmd.WhichOneof("target")
        if target_kind == "target_world_space_pos":  # any ability: a bad point never reaches the simulator
            refused = self.target_point_result(cmd.target_world_space_pos.x, cmd.target_world_space_pos.y)
            if refused is not None:
                return refused
        ability = cmd.ability_id
        if ability == _ABILITY_STOP and target_kind is None:
            kind, target, point = ORDER_NONE, -1, None
        elif ability == _ABILITY_MOVE and target_kind == "target_world_space_pos":
            kind, target = ORDER_MOVE, -1
            point = (cmd.target_world_space_pos.x, cmd.target_world_space_pos.y)
        elif ability in (_ABILITY_ATTACK, _ABILITY_HEAL) and target_kind == "target_unit_tag":
            tu = self._unit_index(cmd.target_unit_tag)
            if tu < 0 or not bool(st.alive[0, tu]):
                return _RESULT_ERROR
            heal = ability == _ABILITY_HEAL
            if heal != all(bool(t.is_healer[u]) for u in units) or heal != (tu < N):
                return _RESULT_ERROR  # heal: a medivac on an ally; attack: an armed unit on an enemy
            kind, target, point = (ORDER_HEAL if heal else ORDER_ATTACK), tu, None
        else:
            return _RESULT_NOT_SUPPORTED
        for u in units:
            st.order_kind[0, u] = kind
            st.order_target[0, u] = target
            if point is not None:
                st.order_point[0, u] = torch.tensor(point, dtype=torch.float32, device=st.order_point.device)
        return _RESULT_SUCCESS

    def _on_step(self, req, resp) -> None:
        self._need("in_game", what="step")
        count = int(req.count) if req.HasField("count") else 1
        if count < 1:
            raise _RequestError(f"step count must be >= 1 game loop, got {count}")
        if self._is_lite:
            from sc2_envs.lite.env import MAX_LOOPS  # the direct door's step_mul limit: 2**32 - 1 loops ran for hours

            if count > MAX_LOOPS["step_mul"]:
                raise _RequestError(
                    f"step count {count} game loops; expected at most {MAX_LOOPS['step_mul']} per step on {LITE_MAP_PATH}"
                )
            self.lite.step(count)
            self.game_loop = self.lite.game_loop
            if self.lite.ended:
                self.status = "ended"
            resp.step.simulation_loop = self.game_loop
            return
        if self.respawn_pending:
            self.sim.reset(seed=None)  # the map trigger's respawn: the simulator's next episode
            self.respawn_pending = False
        else:
            self.sim.advance_loops(count)
        self.game_loop += count
        resp.step.simulation_loop = self.game_loop

    def _on_debug(self, req, resp) -> None:
        self._need("in_game", what="debug")
        if self._is_lite:
            raise _RequestError(f"debug commands are not served on {LITE_MAP_PATH}")
        st = self.sim.st
        for cmd in req.debug:
            which = cmd.WhichOneof("command")
            if which != "kill_unit":
                raise _RequestError(f"debug command {which!r} is not supported; only kill_unit")
            for tag in cmd.kill_unit.tag:
                u = self._unit_index(tag)
                if u >= 0:
                    st.health[0, u] = 0.0
                    st.shield[0, u] = 0.0
                    st.alive[0, u] = False
        if not bool(st.alive[0].any()):
            self.respawn_pending = True
        resp.debug.SetInParent()

    def _on_leave_game(self, req, resp) -> None:
        self._need("in_game", "ended", what="leave_game")
        self.drop_game()
        resp.leave_game.SetInParent()

    def _on_quit(self, req, resp) -> None:
        self.drop_game()
        self.status = "quit"
        self.quit = True
        resp.quit.SetInParent()

    def drop_game(self) -> None:
        """Forget the current game (a client left or disconnected)."""
        self.sim = None
        self.lite = None
        self.map_name = None
        self.respawn_pending = False
        self.action_errors = []
        self.status = "launched"


class _RequestError(Exception):
    """A request the server understood but cannot honour; becomes ``Response.error``."""


class _ListenError(OSError):
    """The server cannot listen where it was told to; :func:`main` reports it as a usage error."""


def serve(
    host: str, port: int, build: int = DEFAULT_BUILD, idle_exit: float = 60.0, parent_pid: int | None = None, log=None
) -> int:
    """Serve clients one at a time until ``quit``, the parent dies, or ``idle_exit`` s pass without a client.

    Returns:
        The process exit code (0).

    Raises:
        OSError: the server cannot listen on ``host:port`` (an unknown host, a port in use or out of range); the
            message names both and the reason.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(4)
    except (OSError, OverflowError) as e:  # an unknown host, a port in use or out of range
        listener.close()
        raise _ListenError(f"-listen {host} -port {port}: cannot listen ({e})") from None
    game = SC2APIGame(build)
    parent = parent_pid if parent_pid is not None else os.getppid()

    def parent_gone() -> bool:
        return parent > 1 and os.getppid() != parent

    idle_since = time.monotonic()
    try:
        while not game.quit:
            if parent_gone():
                return 0
            if time.monotonic() - idle_since > idle_exit:
                return 0
            ready, _, _ = select.select([listener], [], [], 0.5)
            if not ready:
                continue
            sock, _ = listener.accept()
            ws = accept_websocket(sock)
            if ws is None:
                continue
            try:
                while not game.quit:
                    r, _, _ = select.select([ws.sock], [], [], 0.5)
                    if not r:
                        if parent_gone():
                            return 0
                        continue
                    ws.send_message(game.handle(ws.recv_message()))
            except WebSocketClosed:
                pass
            finally:
                ws.close()
                if not game.quit:
                    game.drop_game()  # a dead client's game goes at once
                idle_since = time.monotonic()
    finally:
        listener.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse pysc2's launch arguments (``-listen``, ``-port``, ...) and serve."""
    parser = argparse.ArgumentParser(prog="SC2_x64 (sc2_envs simulator)", allow_abbrev=False)
    parser.add_argument("-listen", default="127.0.0.1")
    parser.add_argument("-port", type=int, required=True)
    parser.add_argument("--build", type=int, default=DEFAULT_BUILD)
    parser.add_argument(
        "--idle-exit", type=float, default=60.0, help="exit after this many seconds without a client (default 60)"
    )
    args, _ignored = parser.parse_known_args(argv)  # -dataDir, -tempDir, -verbose, -dataVersion, ...
    if not 1 <= args.port <= 65535:
        parser.error(f"-port {args.port}: expected a TCP port in [1, 65535]")
    if not (math.isfinite(args.idle_exit) and args.idle_exit > 0):  # NaN never times out; <= 0 exits at once
        parser.error(f"--idle-exit {args.idle_exit}: expected seconds > 0")
    if args.build < 1:
        parser.error(f"--build {args.build}: expected a positive build number")
    torch.set_num_threads(1)
    try:
        return serve(args.listen, args.port, build=args.build, idle_exit=args.idle_exit)
    except _ListenError as e:
        parser.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
