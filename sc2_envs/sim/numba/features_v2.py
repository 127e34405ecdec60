"""The observe stage of a SMACv2 scenario as one compiled CPU kernel (Numba), bit-equal to torch.

The torch reference is ``sim.rules.features_v2.SMACv2Features``, itself a re-statement of oxwhirl/smacv2
577ab5a ``starcraft2.py``. Its rules are compiled once with SMAC v1's in ``sim.numba.features``
(``step_env``, ``observe_env`` and their parts, ``_cone_angle`` and ``_update_tags`` among them); what a
scenario brings is its tables, built here from the torch object (``v2_consts``): one unit-table row per
unit kind and side, looked up per env through ``WorldState.unit_kind``, per-kind sight and shoot ranges,
and the flags of SMACv2's options (``conic_fov``, own position, the terran medivac rule, ``max(., 0)``
rewards); the kernels compiled for the family (``ObserveKernelV2.v2``) add the roster look-ups, the
enemy tags and the reward scaled by each env's ``max_reward``. ``tests/test_kernel_v2.py`` compares every
output and state field with the torch path over seeded play on every race and option, and
``tests/test_smacv2_golden.py`` runs SMACv2's golden vectors through both.
"""

from __future__ import annotations

import operator

import numpy as np
import torch

from sc2_envs.sim.numba.features import (
    C_CD_NORM,
    C_COUNT,
    C_HAS_SHIELD,
    C_HEALABLE,
    C_HEALER,
    C_MAX_HEALTH,
    C_MAX_SHIELD_SAFE,
    C_MEDIVAC,
    C_SHOOT,
    C_SIGHT,
    C_USES_ENERGY,
    F_CONIC,
    F_COUNT,
    F_HAS_HEALER,
    F_MAP_X,
    F_MAP_Y,
    F_MEDIVAC_RULE,
    F_NFOV,
    F_NNA,
    F_NTARGETS,
    F_OWN_POS,
    F_REWARD_CLIP_REGEN,
    F_SHIELD_A,
    F_SHIELD_E,
    F_T,
    MEDIVAC_NONE,
    MEDIVAC_TERRAN,
    P_CONE_EPS,
    P_TAN_HALF_CONE,
    PARALLEL_MIN_ENVS,
    ObserveKernel,
    option_flags,
    reward_params,
)
from sc2_envs.sim.numba.state import STATE_DTYPES, STATE_FIELDS, EpisodeState
from sc2_envs.sim.rules.features_v2 import CONE_EPS, SMACv2Features
from sc2_envs.sim.state import WorldState

# the UnitState, then the EpisodeState fields (numba.state)
_FIELDS = STATE_FIELDS + EpisodeState._fields
_get_fields = operator.attrgetter(*_FIELDS)
_DTYPES = {
    **STATE_DTYPES,
    "prev_alive": torch.bool,
    "last_action": torch.int64,
    "episode_steps": torch.int64,
    "unit_kind": torch.int64,
    "enemy_tag": torch.int64,
}
_UNIT_KIND = EpisodeState._fields.index("unit_kind")


def v2_consts(features: SMACv2Features) -> tuple:
    """``(table, pathing, height, move_dirs, obs_pts, flags, fparams)``: the tables of the kernels for a
    scenario's features (read from the torch object, so both paths use the same constants); the unit table
    has one row per kind, ally kinds then enemy kinds."""
    f = features
    kt = f.table.kinds
    T = len(kt.names) // 2
    table = np.zeros((2 * T, C_COUNT + f.utb), np.float32)
    mh = kt.max_health.detach().cpu().to(torch.float32)
    ms = kt.max_shield.detach().cpu().to(torch.float32)
    table[:, C_MAX_HEALTH] = mh.numpy()
    table[:, C_MAX_SHIELD_SAFE] = torch.where(ms > 0, ms, torch.ones_like(ms)).numpy()
    table[:, C_HAS_SHIELD] = (ms > 0).numpy()
    medivac = f._medivac_k.cpu().numpy()
    for side in (0, T):  # the per-kind SMACv2 tables are indexed by kind, whatever the side
        rows = slice(side, side + T)
        table[rows, C_SIGHT] = f._sight_k.cpu().numpy()
        table[rows, C_SHOOT] = f._shoot_k.cpu().numpy()
        table[rows, C_CD_NORM] = f._max_cd_k.cpu().numpy()
        # a medivac shows its energy, heals the live non-medivac allies, and does not count as a fighter
        table[rows, C_USES_ENERGY] = medivac
        table[rows, C_HEALER] = medivac
        table[rows, C_HEALABLE] = ~medivac
        table[rows, C_MEDIVAC] = medivac
        table[rows, C_COUNT:] = np.eye(T, f.utb, dtype=np.float32)
    flags = np.zeros(F_COUNT, np.int64)
    option_flags(f, flags)
    flags[F_NNA], flags[F_NFOV], flags[F_NTARGETS], flags[F_T] = f.n_actions_no_attack, f.n_fov, f.n_targets, T
    flags[F_SHIELD_A] = flags[F_SHIELD_E] = f.shield
    flags[F_CONIC] = f.conic_fov
    flags[F_OWN_POS] = f.obs_own_pos
    flags[F_HAS_HEALER] = f.is_terran
    flags[F_MEDIVAC_RULE] = MEDIVAC_TERRAN if f.is_terran else MEDIVAC_NONE
    flags[F_REWARD_CLIP_REGEN] = 1  # SMACv2's only-positive reward is max(., 0)
    flags[F_MAP_X], flags[F_MAP_Y] = f._pathing.shape
    fp = reward_params(f.rcfg)
    fp[P_TAN_HALF_CONE] = f._tan_half_cone
    fp[P_CONE_EPS] = CONE_EPS
    pathing = np.ascontiguousarray(f._pathing.cpu().numpy().astype(np.bool_))
    height = np.ascontiguousarray(f._height.cpu().numpy().astype(np.float32))
    move_dirs = np.ascontiguousarray(f._move_dirs.cpu().numpy().astype(np.float64))
    obs_pts = np.ascontiguousarray(f._obs_pts.cpu().numpy().astype(np.int64))
    return table, pathing, height, move_dirs, obs_pts, flags, fp


class ObserveKernelV2(ObserveKernel):
    """``SMACSim._stage_observe`` of a SMACv2 scenario as one compiled CPU call, bit-equal to torch.

    Same interface as ``features.ObserveKernel`` (``__call__`` for a step, ``observe`` for the
    features of all envs or rows ``env_ids``), plus ``visit_rank`` (``SMACv2Features.update_tags``).
    The per-kind tables are copied from ``features`` at construction (``v2_consts``): a change to
    ``features.table.kinds`` needs a new kernel (``SMACSim._build_kernels``).

    Args:
        features: the scenario's ``SMACv2Features`` on the CPU (float64 distances).
        parallel: ``True`` / ``False`` force chunks on threads (one per Numba thread) / the
            calling thread; ``None`` splits from ``PARALLEL_MIN_ENVS`` envs up.

    Raises:
        ValueError: features on another device than the CPU.
        TypeError: ``parallel`` not ``None`` or a bool.
    """

    v2 = True

    def _consts(self, features) -> tuple:
        return v2_consts(features)

    def _views(self, st: WorldState) -> tuple[tuple, int]:
        """Zero-copy NumPy views of the fields read or written as ``(units, episode)``, a ``UnitState`` and
        an ``EpisodeState`` as plain tuples (``numba.state``; kept while ``st`` holds the same
        tensors; a non-contiguous field is replaced by a contiguous copy in ``st`` first), and ``B``;
        ``ValueError`` for a ``unit_kind`` outside the scenario's kinds."""
        tensors = _get_fields(st)
        cache = self._view_cache
        if cache is not None and all(map(operator.is_, tensors, cache[0])):
            arrays, B = cache[1], cache[2]
        else:
            arrays, B = self._new_views(st)
        self._check_kinds(arrays[1][_UNIT_KIND])
        return arrays, B

    def _new_views(self, st: WorldState) -> tuple[tuple, int]:
        B = st.health.shape[0]
        U, N = self.n_units, self.n_agents
        for n, x in zip(_FIELDS, _get_fields(st), strict=True):
            want = _DTYPES.get(n, torch.float32)
            if x.device.type != "cpu" or x.dtype != want or x.shape[0] != B:
                raise ValueError(
                    f"WorldState.{n} must be a CPU {want} tensor with {B} envs, got {x.dtype} {tuple(x.shape)} on {x.device}"
                )
            if not x.is_contiguous():
                setattr(st, n, x.contiguous())
        if tuple(st.health.shape) != (B, U) or tuple(st.enemy_tag.shape) != (B, U - N):
            raise ValueError(f"WorldState holds {tuple(st.health.shape)} units; this scenario has {U} ({N} agents)")
        tensors = _get_fields(st)
        arrays = tuple(x.numpy() for x in tensors)
        groups = (arrays[: len(STATE_FIELDS)], arrays[len(STATE_FIELDS) :])  # (units, episode)
        self._view_cache = (tensors, groups, B)
        return groups, B

    def _check_kinds(self, unit_kind: np.ndarray) -> None:
        T = int(self.consts[5][F_T])
        if unit_kind.size and (int(unit_kind.min()) < 0 or int(unit_kind.max()) >= T):
            bad = np.argwhere((unit_kind < 0) | (unit_kind >= T))[0].tolist()
            raise ValueError(f"WorldState.unit_kind{bad} = {int(unit_kind[tuple(bad)])} is not a kind index in [0, {T})")

    def observe(
        self, st: WorldState, env_ids: torch.Tensor | np.ndarray | None = None, out: dict | None = None, visit_rank=None
    ) -> dict[str, torch.Tensor]:
        """Features only (``SMACSim._observe``): all envs, or rows ``env_ids`` of ``out``; updates the
        enemy tags of those envs.

        Args:
            st: the world state.
            env_ids: ``[k]`` int64 env indices (with ``out``), or ``None`` for every env.
            out: ``{"obs", "state", "avail_actions"}`` of the full batch shape; required with ``env_ids``.
            visit_rank: ``[B, N]`` int64, each agent's place in SMACv2's visiting order of the enemy
                bookkeeping (``SMACv2Features.update_tags``); ``None``: agent id order.

        Returns:
            ``{"obs": [B, N, obs_size] float32, "state": [B, state_size] float32,
            "avail_actions": [B, N, n_actions] bool}`` (``out``'s tensors when given).

        Raises:
            ValueError: bad shapes or devices, ``env_ids`` out of range or without ``out``, a bad
                ``visit_rank`` or a ``unit_kind`` outside the race's kinds.
        """
        return self._observe(st, env_ids, out, visit_rank)


__all__ = ["PARALLEL_MIN_ENVS", "ObserveKernelV2", "v2_consts"]
