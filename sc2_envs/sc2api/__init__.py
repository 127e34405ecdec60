"""The embedded simulators behind the StarCraft II API (``server``: SMAC maps, and Simple64 from the lite
engine through ``lite_game``).

* ``raw``: the simulator's units as raw-interface records (``RawUnit``: tag, ``*_RL`` / stock type
  ids, owner, pos, health, shield, energy, weapon cooldown, orders), without protobuf.
* ``smac_rules``: SMAC's unit-level rules (observation, state, available actions, reward, episode
  end) on such records, shared by ``sc2_envs.adapters.smac_compat`` and the protocol route.
"""
