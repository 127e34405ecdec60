"""Run unmodified oxwhirl SMAC episodes (random available actions) and dump what SMAC returned.

Used by tests/test_sc2api_smac.py in a separate interpreter that has oxwhirl SMAC and pysc2 (PyPI
``pysc2`` pins an old protobuf, so it lives in its own environment):

    SC2PATH=DIR python tests/scripts/smac_episodes.py MAP SEED EPISODES OUT.npz
"""

import sys

import numpy as np
from smac.env import StarCraft2Env

map_name, seed, episodes, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
env = StarCraft2Env(map_name=map_name, seed=seed)
rng = np.random.default_rng(seed)
rec = {k: [] for k in ("obs", "state", "avail", "actions", "reward", "terminated", "won", "tags", "episode")}
try:
    for ep in range(episodes):
        env.reset()
        tags = [env.agents[k].tag for k in range(env.n_agents)]
        while True:
            avail = env.get_avail_actions()
            acts = [int(rng.choice(np.flatnonzero(a))) for a in avail]
            rec["obs"].append(np.stack(env.get_obs()))
            rec["state"].append(env.get_state())
            rec["avail"].append(np.array(avail))
            rec["actions"].append(acts)
            rec["tags"].append(tags)
            rec["episode"].append(ep)
            reward, terminated, info = env.step(acts)
            rec["reward"].append(reward)
            rec["terminated"].append(terminated)
            rec["won"].append(info.get("battle_won", False))
            if terminated:
                break
finally:
    env.close()
np.savez(out, **{k: np.array(v) for k, v in rec.items()}, stats=np.array(str(env.get_stats())))
print(env.get_stats())
