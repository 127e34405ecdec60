"""Snapshots of a simulator: ``state_dict`` / ``load_state_dict`` for checkpoints that continue bit for bit."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from sc2_envs.sim.state import WORLD_STATE_FIELDS, WorldState

_V2_FIELDS = ("unit_kind", "fov_dir", "enemy_tag", "max_reward")  # WorldState fields only SMACv2 scenarios use


class SnapshotMixin:
    """``SMACSim``'s ``state_dict`` and ``load_state_dict``."""

    def state_dict(self) -> dict:
        """A copy of everything the next ``reset()`` / ``step()`` depends on, for checkpoints.

        The simulator's randomness is counter-based (each env's ``env_seed`` and ``episode_count``,
        plus the per-unit cooldown-jitter state), so restoring this dict into a simulator built with
        the same map, ``num_envs`` and options continues every env bit for bit.

        Returns:
            ``{"map_name": str, "num_envs": int, "world": {field: tensor}}`` (the ``WorldState``
            fields, ``[B, ...]``, CPU copies) plus ``avail_actions [B, N, n_actions]`` bool,
            ``stat_counts [3]`` int64 (won, games, timeouts), ``seeded`` and ``needs_reset`` (bools),
            ``options`` (the options that change the game: SMAC's observation / reward options,
            ``lenient_actions``, ``loops_per_tick``, ``spawn_jitter`` and SMACv2's ``conic_fov``,
            ``use_unit_ranges``, ``obs_own_pos``, ``min_attack_range``; plain Python values);
            SMACv2 scenarios add ``scenario_pins`` (``pin_scenario``'s compositions and start points,
            which the next resets draw from: ``mask [B]``, ``kind [B, U]``, ``pos [B, U, 2]``, ``has_pos [B]``).
        """
        out = {
            "map_name": self.map_name,
            "num_envs": self.num_envs,
            "world": {n: getattr(self.st, n).detach().cpu().clone() for n in WORLD_STATE_FIELDS},
            "avail_actions": self._avail.detach().cpu().clone(),
            "stat_counts": self._stat_counts.detach().cpu().clone(),
            "seeded": bool(self._seeded),
            "needs_reset": bool(self._needs_reset),
            "options": dict(self._snapshot_options),
        }
        if self.scenario is not None:
            out["scenario_pins"] = {k: v.detach().cpu().clone() for k, v in self._pin_tensors().items()}
        return out

    def _pin_tensors(self) -> dict[str, torch.Tensor]:
        # the same tensor objects the compiled reset kernel reads (numba.reset): restored in place
        return {"mask": self._pin_mask, "kind": self._pin_kind, "pos": self._pin_pos, "has_pos": self._pin_has_pos}

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict` (tensors are copied to this simulator's device).

        A scenario snapshot without ``scenario_pins`` (taken before they were saved) leaves this
        simulator's pins as they are; a snapshot without ``options`` (taken before they were saved)
        is not checked for them. Nothing is changed when it raises.

        Raises:
            TypeError: ``state`` is not a mapping (a ``state_dict()``).
            ValueError: the snapshot is of another map or number of envs, was taken with other
                options, misses a field, a field's shape or dtype differs (the message names it,
                with both), or a float field holds NaN or infinity.
        """
        if not isinstance(state, Mapping):
            raise TypeError(f"env snapshot must be a dict from SMACSim.state_dict(), got {type(state).__name__} {state!r}")
        for key, mine in (("map_name", self.map_name), ("num_envs", self.num_envs)):
            if state.get(key) != mine:
                raise ValueError(f"env snapshot has {key}={state.get(key)!r}; this simulator has {key}={mine!r}")
        if "options" in state:
            theirs = state["options"]
            if not isinstance(theirs, Mapping):
                raise ValueError(f"env snapshot options must be a dict, got {theirs!r}")
            diff = {k: (theirs.get(k), v) for k, v in self._snapshot_options.items() if theirs.get(k) != v}
            diff.update({k: (v, None) for k, v in theirs.items() if k not in self._snapshot_options})
            if diff:
                k, (got, mine) = sorted(diff.items())[0]
                raise ValueError(
                    f"env snapshot was taken with {k}={got!r}; this simulator has {k}={mine!r} "
                    f"(a snapshot loads into a simulator built with the same options; differing: {sorted(diff)})"
                )
        missing = [k for k in ("avail_actions", "stat_counts", "seeded", "needs_reset") if k not in state]
        if missing:
            raise ValueError(f"env snapshot misses the key(s) {missing}")
        world = state.get("world", {})
        if not isinstance(world, Mapping):
            raise ValueError(f"env snapshot world must be a dict of tensors, got {type(world).__name__}")
        world = dict(world)
        if self.scenario is None:  # snapshots from before the SMACv2 fields: they are unused on v1 maps
            for n in _V2_FIELDS:
                world.setdefault(n, getattr(self.st, n).detach().cpu())
        missing = [n for n in WORLD_STATE_FIELDS if n not in world]
        if missing:
            raise ValueError(f"env snapshot misses the world field(s) {missing}")
        for n in WORLD_STATE_FIELDS:
            mine = getattr(self.st, n)
            if not isinstance(world[n], torch.Tensor):
                raise ValueError(f"env snapshot field {n!r} is {type(world[n]).__name__}; expected a {mine.dtype} tensor")
            if tuple(world[n].shape) != tuple(mine.shape) or world[n].dtype != mine.dtype:
                raise ValueError(
                    f"env snapshot field {n!r} is {world[n].dtype} {tuple(world[n].shape)}; expected "
                    f"{mine.dtype} {tuple(mine.shape)}"
                )
            if world[n].is_floating_point() and not bool(torch.isfinite(world[n]).all()):
                bad = world[n][~torch.isfinite(world[n])][0].item()
                raise ValueError(f"env snapshot field {n!r} holds {bad}; expected finite values")
        for key, mine in (("avail_actions", self._avail), ("stat_counts", self._stat_counts)):
            v = state[key]
            if not isinstance(v, torch.Tensor) or tuple(v.shape) != tuple(mine.shape) or v.dtype != mine.dtype:
                got = f"{v.dtype} {tuple(v.shape)}" if isinstance(v, torch.Tensor) else repr(v)
                raise ValueError(f"env snapshot {key} is {got}; expected {mine.dtype} {tuple(mine.shape)}")
        for key in ("seeded", "needs_reset"):
            if not isinstance(state[key], (bool, np.bool_)):
                raise ValueError(f"env snapshot {key} must be a bool, got {state[key]!r}")
        pins = state.get("scenario_pins")
        if pins is not None:
            if self.scenario is None:
                raise ValueError(f"env snapshot has scenario_pins, but {self.map_name!r} is a SMAC v1 map")
            for k, mine in self._pin_tensors().items():
                if k not in pins or tuple(pins[k].shape) != tuple(mine.shape) or pins[k].dtype != mine.dtype:
                    got = None if k not in pins else f"{pins[k].dtype} {tuple(pins[k].shape)}"
                    raise ValueError(f"env snapshot scenario_pins[{k!r}] is {got}; expected {mine.dtype} {tuple(mine.shape)}")
        self.st = WorldState(**{n: world[n].to(self.device).clone() for n in WORLD_STATE_FIELDS})
        self._avail = state["avail_actions"].to(self.device).clone()
        self._stat_counts = state["stat_counts"].to(self.device).clone()
        self._seeded = bool(state["seeded"])
        self._needs_reset = bool(state["needs_reset"])
        if pins is not None:
            for k, mine in self._pin_tensors().items():
                mine.copy_(pins[k].to(self.device))
        self._refresh_kinds()
