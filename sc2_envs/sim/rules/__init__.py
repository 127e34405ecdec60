"""The simulator's game rules in torch: the reference every execution path reproduces bit for bit.

One module per rule family: ``actions`` (SMAC actions -> orders), ``enemy_ai`` (the built-in enemy),
``dynamics`` (one tick of game loops: weapons, damage, deaths, heals, movement, regeneration),
``features`` / ``features_v2`` (game result, reward, observations, state, available actions of SMAC v1 /
SMACv2) and ``reset`` (a fresh episode). ``sim.numba`` mirrors each module under the same name.
"""
