"""A random legal-action policy for FullGame-v0 observations (single or batched), vectorised.

Each step it draws an ``action_type`` uniformly among those the observation's
``action_type_mask`` allows and the lite engine models (no-op with probability ``noop_prob``),
then one own unit that can issue it, a target unit of the kind the function takes (a mineral
field for Harvest_Gather, an enemy for Attack, any unit otherwise) and a target cell (near an own
structure for Build functions, anywhere otherwise). It is a baseline and a load generator for
throughput measurements, not a player.
"""

from __future__ import annotations

import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.lite.catalog import (
    TI_BUILT_BY_WORKER,
    TI_CAN_MOVE,
    TI_PRODUCER,
    TI_RALLY,
    TI_RESOURCE,
    TI_STRUCTURE,
    TI_TRAINS_AS,
    TI_WORKER,
    Catalog,
)
from sc2_envs.lite.commands import (
    CMD_BUILD_PT,
    CMD_BUILD_UNIT,
    CMD_CALLDOWN_MULE,
    CMD_CANCEL_BUILD,
    CMD_CANCEL_LAST,
    CMD_GATHER,
    CMD_RALLY,
    CMD_RETURN,
    CMD_TRAIN,
    CMD_UNSUPPORTED,
    command_tables,
)

_E = spec.ENTITY_INDEX


class RandomLegalPolicy:
    """Random legal actions for the lite engine's FullGame-v0.

    Args:
        catalog: the engine's catalog (which unit types issue which functions).
        max_entities, max_selected, raw_resolution: the env's sizes.
        noop_prob: probability of a no-op step, in [0, 1].
        seed: seed of the policy's generator.

    Raises:
        ValueError: a ``noop_prob`` outside [0, 1].
    """

    def __init__(
        self,
        catalog: Catalog,
        max_entities: int = 512,
        max_selected: int = 64,
        raw_resolution: int = 64,
        noop_prob: float = 0.5,
        seed: int | None = None,
    ):
        self.n = int(max_entities)
        self.k = int(max_selected)
        self.r = int(raw_resolution)
        if not 0.0 <= noop_prob <= 1.0:  # NaN fails this too; 2.0 would be a no-op every step, silently
            raise ValueError(f"noop_prob={noop_prob!r}; expected a probability in [0, 1]")
        self.noop_prob = float(noop_prob)
        self.rng = np.random.default_rng(seed)
        cmd, param = command_tables(catalog)
        nf = spec.num_functions()
        self.modelled = cmd != CMD_UNSUPPORTED
        self.modelled[168] = False  # camera moves do nothing useful here
        vocab = np.array([spec.unit_type_index(int(g)) for g in catalog.game_ids])
        ti = catalog.ti
        nv = spec.num_unit_types()
        can = np.zeros((nf, nv), bool)
        masks = spec.argument_masks()
        for f in range(nf):
            if not self.modelled[f] or not masks[f, 3]:
                continue
            c = cmd[f]
            for t in range(len(catalog.names)):
                ok = False
                if c == CMD_TRAIN:
                    p = param[f]
                    ok = ti[t, TI_STRUCTURE] and (ti[t, TI_TRAINS_AS] == ti[p, TI_PRODUCER] or t == ti[p, TI_PRODUCER])
                elif c in (CMD_BUILD_PT, CMD_BUILD_UNIT):
                    ok = ti[t, TI_BUILT_BY_WORKER] == 0 and ti[t, TI_WORKER] and ti[param[f], TI_PRODUCER] == t
                elif c in (CMD_GATHER, CMD_RETURN):
                    ok = bool(ti[t, TI_WORKER])
                elif c == CMD_RALLY:
                    ok = bool(ti[t, TI_RALLY])
                elif c in (CMD_CANCEL_LAST, CMD_CANCEL_BUILD, CMD_CALLDOWN_MULE):
                    ok = bool(ti[t, TI_STRUCTURE])
                else:
                    ok = bool(ti[t, TI_CAN_MOVE])
                can[f, vocab[t]] = ok
        self.can = can
        self.cmd = cmd
        self.mineral_vocab = np.zeros(nv, bool)
        for t in range(len(catalog.names)):
            if ti[t, TI_RESOURCE] == 1:
                self.mineral_vocab[vocab[t]] = True
        self.needs_unit = masks[:, 4].astype(bool)
        self.needs_loc = masks[:, 5].astype(bool)

    def __call__(self, obs: dict) -> dict:
        """Actions for a single observation dict or a batched one (leading axis B)."""
        single = obs["entities"].ndim == 2
        if single:
            obs = {k: v[None] for k, v in obs.items()}
        b = obs["entities"].shape[0]
        rng = self.rng
        ents = obs["entities"]
        utype = ents[:, :, _E["unit_type"]].astype(np.int64)
        alliance = ents[:, :, _E["alliance"]]
        real = obs["entity_mask"].astype(bool)
        own = obs["selectable_mask"].astype(bool)
        legal = obs["action_type_mask"].astype(bool) & self.modelled[None]
        # a function is usable only when some own unit can issue it
        has = np.zeros_like(legal)
        for g in range(b):
            types = np.unique(utype[g][own[g]])
            has[g] = self.can[:, types].any(axis=1) if len(types) else False
        legal &= has
        keys = rng.random(legal.shape) + legal
        fid = np.where(legal.any(axis=1), np.argmax(keys, axis=1), 0)
        fid[rng.random(b) < self.noop_prob] = 0
        cand = self.can[fid[:, None], utype] & own
        pick = np.argmax(rng.random(cand.shape) + cand, axis=1)
        selected = np.full((b, self.k), self.n, np.int64)
        selected[:, 0] = np.where(cand.any(axis=1), pick, self.n)
        fid[~cand.any(axis=1)] = 0
        c = self.cmd[fid]
        tmask = real.copy()
        gather = c == CMD_GATHER
        tmask[gather] &= self.mineral_vocab[utype[gather]]
        attack = np.isin(fid, [3, 5, 7, 9])
        tmask[attack] &= alliance[attack] == 4
        target = np.where(tmask.any(axis=1), np.argmax(rng.random(tmask.shape) + tmask, axis=1), self.n)
        fid[self.needs_unit[fid] & ~tmask.any(axis=1)] = 0
        loc = rng.integers(0, self.r, size=(b, 2))
        build = c == CMD_BUILD_PT
        if build.any():
            structs = own & (ents[:, :, _E["build_progress"]] >= 0)
            anchor = np.argmax(rng.random(structs.shape) + structs, axis=1)
            ax = ents[np.arange(b), anchor, _E["x"]]
            ay = ents[np.arange(b), anchor, _E["y"]]
            near = np.stack([ax, ay], axis=1) + rng.integers(-6, 7, size=(b, 2))
            loc[build] = np.clip(near[build], 0, self.r - 1).astype(np.int64)
        action = {
            "action_type": fid.astype(np.int64),
            "delay": np.zeros(b, np.int64),
            "queued": (rng.random(b) < 0.25).astype(np.int64),
            "selected_units": selected,
            "target_unit": target.astype(np.int64),
            "target_location": loc.astype(np.int64),
        }
        if single:
            action = {k: v[0] for k, v in action.items()}
        return action
