"""SMAC's ``StarCraft2Env`` flow over the StarCraft II API, with SMAC's rules on the protocol's raw units.

``SMACProtocolEnv`` launches a game through pysc2's ``run_configs`` (``SC2PATH``; with
``python -m sc2_envs.sc2api install`` that is the simulator's server, with a real install the game),
sends what oxwhirl SMAC's ``StarCraft2Env`` sends (``create_game`` with ``random_seed``,
``join_game`` raw, ``game_info``, then per step ``action`` + ``step(8)`` + ``observation``, and
``debug kill_unit`` + ``step(2)`` to reset) and computes SMAC's observation, state, available actions,
reward and episode end from the returned ``raw_data.units`` with
``sc2_envs.sc2api.smac_rules.SMACUnitRules`` (SMAC's own rules, re-implemented). The protobuf
``Unit`` messages are used as SMAC uses them (attribute reads, ``health`` set to 0 on death).

It is the reference client of the protocol route (tests, ``benchmarks/sc2api_throughput.py``); it
needs pysc2 (``pysc2`` or ``pysc2-evolved``, the ``full-game`` extra) and ``s2clientprotocol``.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from sc2_envs.maps import MAP_SIZE, get_map
from sc2_envs.sc2api.smac_rules import SMAC_FEATURE_DEFAULTS as _DEFAULTS
from sc2_envs.sc2api.smac_rules import SMACUnitRules

__all__ = ["SMACProtocolEnv", "import_pysc2"]

_RACES = {"T": 1, "Z": 2, "P": 3}  # common.proto Race
_DIFFICULTY = {str(k): k for k in range(1, 10)} | {"A": 10}  # sc2api.proto Difficulty, SMAC's keys


def import_pysc2():
    """``(run_configs, protocol)`` from ``pysc2`` or, failing that, ``pysc2_evolved``.

    Raises:
        ImportError: neither is installed (``pip install "sc2-envs[full-game]"``).
    """
    from sc2_envs.full_game._deps import import_pysc2_evolved_settings

    import_pysc2_evolved_settings()  # its import logs a TIMEOUT_SECONDS line and configures root logging
    for name in ("pysc2", "pysc2_evolved"):
        try:
            return (importlib.import_module(f"{name}.run_configs"), importlib.import_module(f"{name}.lib.protocol"))
        except ImportError:
            continue
    raise ImportError("the StarCraft II API client needs pysc2 or pysc2-evolved: pip install 'sc2-envs[full-game]'")


class SMACProtocolEnv(SMACUnitRules):
    """SMAC's env over the StarCraft II API (module docstring).

    Args:
        map_name: a SMAC map (``SMAC_Maps/<map_name>.SC2Map`` under ``SC2PATH``).
        seed: ``RequestCreateGame.random_seed`` (``None``: unseeded).
        game_version: pysc2 version name (``None``: the largest ``Versions/Base*``).
        difficulty: the Computer's difficulty key, SMAC's ``"1"``..``"9"``, ``"A"``.
        **options: SMAC's observation / state / reward keywords (same defaults).

    Raises:
        ValueError: unknown map or option.
    """

    def __init__(
        self,
        map_name: str = "8m",
        seed: int | None = None,
        game_version: str | None = None,
        difficulty: str = "7",
        **options: Any,
    ):
        unknown = set(options) - set(_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown option(s) {sorted(unknown)}; valid: {sorted(_DEFAULTS)}")
        spec = get_map(map_name)
        self.map_name = map_name
        self._seed = seed
        self.game_version = game_version
        self.difficulty = difficulty
        for k, v in {**_DEFAULTS, **options}.items():
            setattr(self, k, v)
        if self.obs_all_health:
            self.obs_own_health = True
        self.n_agents, self.n_enemies, self.episode_limit = spec.n_agents, spec.n_enemies, spec.episode_limit
        self._move_amount = 2
        self.n_obs_pathing, self.n_obs_height = 8, 9
        self.n_actions_no_attack, self.n_actions_move = 6, 4
        self.n_actions = 6 + self.n_enemies
        self._agent_race, self._bot_race = spec.a_race, spec.b_race
        self.shield_bits_ally = 1 if spec.a_race == "P" else 0
        self.shield_bits_enemy = 1 if spec.b_race == "P" else 0
        self.unit_type_bits, self.map_type = spec.unit_type_bits, spec.map_type
        self.max_reward = self.n_enemies * self.reward_death_value + self.reward_win
        self.ally_state_attr_names, self.enemy_state_attr_names = self._state_attr_names()
        self.agents, self.enemies = {}, {}
        self._episode_count = self._episode_steps = self._total_steps = 0
        self.battles_won = self.battles_game = self.timeouts = self.force_restarts = 0
        self.death_tracker_ally = np.zeros(self.n_agents)
        self.death_tracker_enemy = np.zeros(self.n_enemies)
        self.previous_ally_units = self.previous_enemy_units = None
        self.last_action = np.zeros((self.n_agents, self.n_actions))
        self.win_counted = self.defeat_counted = False
        self._reset_type_ids()
        self.map_x = self.map_y = self.max_distance_x = self.max_distance_y = MAP_SIZE
        self.pathing_grid = self.terrain_height = None
        self._proc = self._controller = None
        self.sc_pb = importlib.import_module("s2clientprotocol.sc2api_pb2")
        self.raw_pb = importlib.import_module("s2clientprotocol.raw_pb2")
        self.debug_pb = importlib.import_module("s2clientprotocol.debug_pb2")
        self.requests = 0

    # ------------------------------------------------------------------ game
    def _launch(self) -> None:
        run_configs, _ = import_pysc2()
        sc = self.sc_pb
        rc = run_configs.get(version=self.game_version)
        self._proc = rc.start(want_rgb=False)
        self._controller = self._proc.controller
        path = f"SMAC_Maps/{self.map_name}.SC2Map"
        create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path=path, map_data=rc.map_data(path)), realtime=False)
        if self._seed is not None:
            create.random_seed = self._seed
        create.player_setup.add(type=sc.Participant)
        create.player_setup.add(type=sc.Computer, race=_RACES[self._bot_race], difficulty=_DIFFICULTY[self.difficulty])
        self._controller.create_game(create)
        self._controller.join_game(
            sc.RequestJoinGame(race=_RACES[self._agent_race], options=sc.InterfaceOptions(raw=True, score=False))
        )
        info = self._controller.game_info().start_raw
        self.max_distance_x = info.playable_area.p1.x - info.playable_area.p0.x
        self.max_distance_y = info.playable_area.p1.y - info.playable_area.p0.y
        self.map_x, self.map_y = info.map_size.x, info.map_size.y
        rows = np.frombuffer(info.pathing_grid.data, dtype=np.uint8).reshape(self.map_x, self.map_y // 8)
        self.pathing_grid = np.unpackbits(rows, axis=1).astype(bool).T  # SMAC: MSB first, transposed
        h = np.frombuffer(info.terrain_height.data, dtype=np.uint8).reshape(self.map_x, self.map_y)
        self.terrain_height = np.flip(h.T, 1) / 255
        self.requests += 5

    def _observe(self):
        self.requests += 1
        return self._controller.observe()

    def reset(self):
        """SMAC's ``reset``: launch on the first call, else kill every unit and step 2 loops; then
        observe and ``init_units`` (stepping 1 loop until both sides are complete).

        Returns:
            ``(get_obs(), get_state())``.
        """
        self._episode_steps = 0
        if self._episode_count == 0 and self._controller is None:
            self._launch()
        else:
            alive = [u.tag for u in self.agents.values() if u.health > 0] + [
                u.tag for u in self.enemies.values() if u.health > 0
            ]
            self._controller.debug([self.debug_pb.DebugCommand(kill_unit=self.debug_pb.DebugKillUnit(tag=alive))])
            self._controller.step(2)
            self.requests += 2
        self.death_tracker_ally = np.zeros(self.n_agents)
        self.death_tracker_enemy = np.zeros(self.n_enemies)
        self.previous_ally_units = self.previous_enemy_units = None
        self.win_counted = self.defeat_counted = False
        self.last_action = np.zeros((self.n_agents, self.n_actions))
        while not self.init_units_from(list(self._observe().observation.raw_data.units)):
            self._controller.step(1)
            self.requests += 1
        return self.get_obs(), self.get_state()

    def step(self, actions):
        """SMAC's ``step``: one raw command per living agent, ``step(8)``, observe, then SMAC's reward
        and end rules. Returns ``(reward, terminated, info)`` as SMAC."""
        acts = [int(a) for a in np.asarray(actions).reshape(-1)]
        self.last_action = np.eye(self.n_actions)[np.array(acts)]
        sc, raw = self.sc_pb, self.raw_pb
        cmds = []
        for a_id, a in enumerate(acts):
            cmd = self.get_agent_action(a_id, a)
            if cmd is None:
                continue
            ability, tag, target = cmd
            uc = raw.ActionRawUnitCommand(ability_id=ability, unit_tags=[tag], queue_command=False)
            if isinstance(target, tuple):
                uc.target_world_space_pos.x, uc.target_world_space_pos.y = target
            elif target is not None:
                uc.target_unit_tag = target
            cmds.append(sc.Action(action_raw=raw.ActionRaw(unit_command=uc)))
        self._controller.actions(sc.RequestAction(actions=cmds))
        self._controller.step(8)
        self.requests += 2
        obs = self._observe()
        self._total_steps += 1
        self._episode_steps += 1
        code = self.update_units_from(list(obs.observation.raw_data.units))
        reward = self.reward_battle()
        terminated = False
        info = {"battle_won": False}
        if code is not None:
            terminated = True
            self.battles_game += 1
            if code == 1 and not self.win_counted:
                self.battles_won += 1
                self.win_counted = True
                info["battle_won"] = True
                reward = 1 if self.reward_sparse else reward + self.reward_win
            elif code == -1 and not self.defeat_counted:
                self.defeat_counted = True
                reward = -1 if self.reward_sparse else reward + self.reward_defeat
        elif self._episode_steps >= self.episode_limit:
            terminated = True
            self.battles_game += 1
            self.timeouts += 1
        info["dead_allies"] = sum(u.health == 0 for u in self.agents.values())
        info["dead_enemies"] = sum(u.health == 0 for u in self.enemies.values())
        if terminated:
            self._episode_count += 1
        if self.reward_scale:
            reward /= self.max_reward / self.reward_scale_rate
        return reward, terminated, info

    # ------------------------------------------------------------------ SMAC's getters
    def get_obs(self) -> list[np.ndarray]:
        """Every agent's observation (SMAC's rules on the raw units)."""
        return [self.rules_obs_agent(i) for i in range(self.n_agents)]

    def get_obs_agent(self, agent_id: int) -> np.ndarray:
        return self.rules_obs_agent(agent_id)

    def get_state(self) -> np.ndarray:
        return self.rules_state()

    def get_avail_agent_actions(self, agent_id: int) -> list[int]:
        return self.rules_avail_agent_actions(agent_id)

    def get_avail_actions(self) -> list[list[int]]:
        return [self.rules_avail_agent_actions(i) for i in range(self.n_agents)]

    def close(self) -> None:
        """Quit the game (pysc2 sends ``quit`` and stops the process); safe to call twice."""
        if self._proc is not None:
            self._proc.close()
            self._proc = self._controller = None
