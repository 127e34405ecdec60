"""FullGame-v0's spaces and difficulty names, shared by every backend.

The observation and action spaces follow ``sc2_envs.full_game.spec`` (AlphaStar's entity, scalar and
minimap inputs and its action heads); the difficulty and build names are s2clientprotocol's
``Difficulty`` and ``AIBuild`` enums (``s2clientprotocol/common.proto``/``sc2api.proto``,
github.com/Blizzard/s2client-proto). Both the real-game backend (``sc2_envs.full_game.env``) and the
lite engine (``sc2_envs.lite.env``) import them from here.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from sc2_envs.full_game import spec

DIFFICULTIES = {
    "very_easy": 1,
    "easy": 2,
    "medium": 3,
    "medium_hard": 4,
    "hard": 5,
    "harder": 6,
    "very_hard": 7,
    "cheat_vision": 8,
    "cheat_money": 9,
    "cheat_insane": 10,
}
BOT_BUILDS = {"random": 1, "rush": 2, "timing": 3, "power": 4, "macro": 5, "air": 6}
# Largest accepted sizes, on every backend: each is far above any real use (Simple64 has ~100 units, a 64 grid
# is the real game's raw resolution) and keeps one game's buffers to tens of MB, so a typo such as
# max_entities=2**40 is refused by name instead of failing in a numpy allocation.
MAX_SIZES = {"max_entities": 2**16, "max_selected": 2**16, "raw_resolution": 4096, "minimap_resolution": 1024}
# Largest loop counts, in game loops: an hour of game time is 80,640 loops (22.4 a second), so 2**20 per step
# (13 hours) is far above any use while a typo such as step_mul=2**40 is refused by name instead of running
# for days in one step; game_steps_per_episode stays where game_loop + limit cannot overflow int64.
MAX_LOOPS = {"step_mul": 2**20, "game_steps_per_episode": 2**62}


def make_observation_space(max_entities: int, minimap_resolution: int) -> spaces.Dict:
    """FullGame-v0's observation space (the same for every backend; see the module table).

    Args:
        max_entities: entity rows N.
        minimap_resolution: minimap plane size R.
    """
    n, m = max_entities, minimap_resolution
    nf = spec.num_functions()
    return spaces.Dict(
        {
            "entities": spaces.Box(-np.inf, np.inf, (n, len(spec.ENTITY_FEATURES)), np.float32),
            "entity_mask": spaces.Box(0, 1, (n,), np.int8),
            "selectable_mask": spaces.Box(0, 1, (n,), np.int8),
            "scalars": spaces.Box(-np.inf, np.inf, (len(spec.SCALAR_FEATURES),), np.float32),
            "minimap": spaces.Box(0, 255, (len(spec.MINIMAP_FEATURES), m, m), np.uint8),
            "upgrades": spaces.Box(0, 1, (len(spec.upgrade_ids()),), np.int8),
            "unit_counts": spaces.Box(0, np.inf, (spec.num_unit_types(),), np.float32),
            "build_order": spaces.Box(0, spec.num_unit_types() - 1, (spec.BUILD_ORDER_LENGTH,), np.int64),
            "action_type_mask": spaces.Box(0, 1, (nf,), np.int8),
        }
    )


def make_action_space(max_entities: int, max_selected: int, raw_resolution: int) -> spaces.Dict:
    """FullGame-v0's action space (AlphaStar's heads; the same for every backend).

    Args:
        max_entities: entity rows N (index N is EOF / no target).
        max_selected: selected_units slots K.
        raw_resolution: raw grid R of target_location.
    """
    n, r = max_entities, raw_resolution
    return spaces.Dict(
        {
            "action_type": spaces.Discrete(spec.num_functions()),
            "delay": spaces.Discrete(spec.MAX_DELAY + 1),
            "queued": spaces.Discrete(2),
            "selected_units": spaces.MultiDiscrete(np.full(max_selected, n + 1)),
            "target_unit": spaces.Discrete(n + 1),
            "target_location": spaces.MultiDiscrete(np.array([r, r])),
        }
    )
