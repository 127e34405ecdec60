"""The full-game actor loop: ``AlphaStarPolicy`` playing FullGame-v0, batched over B games.

Three conversions and one loop:

* :func:`model_inputs`: a batched FullGame-v0 observation (numpy dicts with a leading axis B, as
  ``LiteFullGameVectorEnv`` or a Gymnasium ``SyncVectorEnv`` of the real game return) -> the
  policy's ``[B, 1, ...]`` tensors, restricted to the columns the checkpoint was trained on
  (``AlphaStarConfig.entity_features`` etc.; a replay-trained model reads the replay columns only).
* :func:`model_actions_to_env`: the policy's head outputs (``out["actions"]``: action_type, delay,
  queued, selected with the end-of-selection index, target_unit, target_location as ``row * R + col``)
  -> FullGame-v0's action dict (``selected_units`` ended by N, ``target_unit`` N when the function
  takes no unit, ``target_location`` as ``(col, row)``); heads an action type does not use
  (``spec.argument_masks()``) are set to their "none" value.
* :func:`env_actions_to_labels`: the way back, FullGame-v0 actions -> the policy's teacher-forcing
  labels (for log-probabilities of actions another policy took, e.g. a teacher's KL or behaviour
  cloning on rollouts).
* :class:`AlphaStarActor` keeps the LSTM state of B games and acts on a batch at once (one forward
  pass for all games, which is what makes the policy affordable: its cost per call grows far slower
  than B). :func:`play_games` plays any policy with this interface against the bot and returns one
  :class:`GameRecord` per finished game.

The policy interface (the random legal policy ``sc2_envs.lite.policy.RandomLegalPolicy``, the scripted
expert ``sc2_envs.training.fullgame_scripted.ScriptedExpert`` and :class:`AlphaStarActor` share it):
``policy(obs) -> action`` on batched dicts, and an optional ``policy.reset(games)`` (bool ``(B,)``)
called when games start a new episode.

Entity rows: the model sees the first ``cfg.max_entities`` rows (own units first, as the env orders
them; the replay dataset cuts the same way). The actor runs the network on only as many rows as the
batch's largest ``entity_count`` needs (rounded up to ``entity_bucket``): every part of
``AlphaStarPolicy`` masks rows past ``entity_count`` (attention key padding, masked means and
pointer masks) and none of its weights depends on the row count, so the outputs are those of the
full-size call (``tests/test_fullgame_actor.py`` checks it) at a fraction of the cost.

Time: minutes are real (Faster) minutes, 22.4 game loops per second (SC2's in-game clock since
patch 3.0; ``LOOPS_PER_MINUTE``).
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from models.alphastar import check_play, with_rows
from models.common import MASKED_LOGIT
from sc2_envs.full_game import spec

__all__ = [
    "LOOPS_PER_MINUTE",
    "AlphaStarActor",
    "GameRecord",
    "LiteProbe",
    "env_actions_to_labels",
    "idle_function_ids",
    "make_vector_env",
    "model_actions_to_env",
    "model_inputs",
    "play_games",
]

LOOPS_PER_MINUTE = 1344
"""Game loops per real (Faster) minute: 22.4 per second x 60 (SC2's clock since patch 3.0)."""


def idle_function_ids() -> np.ndarray:
    """Raw function ids that leave units idle: ``no_op`` (0) and every ``Stop_*`` function.

    Returns:
        ``(n,)`` int64, ascending (pysc2 ``RAW_FUNCTIONS`` ids).
    """
    return np.asarray([f.id for f in spec.raw_functions() if f.name == "no_op" or f.name.startswith("Stop_")], dtype=np.int64)


# --------------------------------------------------------------------------------------- conversions
def _columns(names, index: dict, what: str) -> list[int]:
    missing = [n for n in names if n not in index]
    if missing:
        raise ValueError(f"the model reads {what} columns {missing} that FullGame-v0 observations lack")
    return [index[n] for n in names]


def model_inputs(obs: dict, cfg, rows: int | None = None, device: str | torch.device = "cpu") -> dict:
    """A batched FullGame-v0 observation -> ``AlphaStarPolicy`` inputs of one time step.

    Args:
        obs: numpy dict with a leading axis B: ``entities (B, N, 38)``, ``entity_mask (B, N)``,
            ``scalars (B, 16)``, ``minimap (B, 8, M, M)``, ``upgrades``, ``unit_counts``, ``build_order``,
            ``action_type_mask (B, 564)`` (the env's spaces, ``sc2_envs.full_game.env``).
        cfg: the model's ``AlphaStarConfig``.
        rows: entity rows to pass (default ``cfg.max_entities``); rows past an observation's
            ``entity_count`` are padding, and real rows past ``rows`` are cut (as the replay dataset
            cuts at the model's ``max_entities``).
        device: torch device of the tensors.

    Returns:
        dict of ``[B, 1, ...]`` tensors: ``entities [B,1,rows,len(cfg.entity_features)]`` float32
        (build_progress in 0..1), ``entity_count [B,1]`` int64, ``scalars [B,1,len(cfg.scalar_features)]``,
        ``upgrades``, ``unit_counts``, ``build_order``, and ``minimap [B,1,P,M,M]`` /
        ``action_type_mask [B,1,564]`` bool when the model reads them.

    Raises:
        ValueError: the observation is not batched, its minimap size differs from ``cfg.minimap_size``,
            or the model reads a column the observation lacks.
    """
    ent = np.asarray(obs["entities"])
    if ent.ndim != 3:
        raise ValueError(f"entities has shape {ent.shape}; expected a batched (B, N, {len(spec.ENTITY_FEATURES)}) array")
    rows = int(cfg.max_entities if rows is None else min(rows, cfg.max_entities))
    b, n = ent.shape[:2]
    cols = _columns(cfg.entity_features, spec.ENTITY_INDEX, "entity")
    sel = ent[:, : min(rows, n)][:, :, cols]
    if sel.shape[1] < rows:
        sel = np.concatenate([sel, np.zeros((b, rows - sel.shape[1], len(cols)), np.float32)], 1)
    count = np.minimum(np.asarray(obs["entity_mask"]).astype(bool).sum(1), rows)

    def t(x, dtype=torch.float32):
        return torch.as_tensor(np.ascontiguousarray(x), device=device).to(dtype).unsqueeze(1)

    out = {
        "entities": t(sel),
        "entity_count": t(count, torch.int64),
        "scalars": t(np.asarray(obs["scalars"])[:, _columns(cfg.scalar_features, spec.SCALAR_INDEX, "scalar")]),
        "upgrades": t(obs["upgrades"]),
        "unit_counts": t(obs["unit_counts"]),
        "build_order": t(obs["build_order"], torch.int64),
    }
    if cfg.minimap_features:
        mm = np.asarray(obs["minimap"])
        if mm.shape[-1] != cfg.minimap_size or mm.shape[-2] != cfg.minimap_size:
            raise ValueError(f"minimap is {mm.shape[-2]}x{mm.shape[-1]}; the model expects {cfg.minimap_size}")
        planes = _columns(cfg.minimap_features, {p: i for i, p in enumerate(spec.MINIMAP_FEATURES)}, "minimap")
        out["minimap"] = t(mm[:, planes], torch.uint8)
    if cfg.use_action_type_mask:
        out["action_type_mask"] = t(obs["action_type_mask"], torch.bool)
    return out


def model_actions_to_env(actions: dict, rows: int, max_entities: int, max_selected: int, raw_resolution: int) -> dict:
    """``AlphaStarPolicy`` head outputs of one time step -> a batched FullGame-v0 action.

    Args:
        actions: ``out["actions"]`` of ``AlphaStarPolicy.forward``: ``action_type``, ``delay``,
            ``queued``, ``target_unit``, ``target_location`` ``[B, 1]`` and ``selected [B, 1, K]``
            (index ``rows`` = end of selection).
        rows: the entity rows the model was run on (its end-of-selection index).
        max_entities, max_selected, raw_resolution: the env's N, K and R.

    Returns:
        numpy dict: ``action_type, delay, queued (B,)`` int64, ``selected_units (B, max_selected)``
        (entity rows ended by N, the rest N), ``target_unit (B,)`` (N when the function takes no unit),
        ``target_location (B, 2)`` ``(col, row)`` (``(0, 0)`` when the function takes no point).

    Raises:
        ValueError: a selected or target row at or past ``rows`` where the function uses it, or the
            model's location grid is not ``raw_resolution`` squared.
    """

    def a(k):
        return actions[k].detach().cpu().numpy().reshape(actions[k].shape[0], *actions[k].shape[2:]).astype(np.int64)

    at, delay, queued = a("action_type"), a("delay"), a("queued")
    sel, tu, loc = a("selected"), a("target_unit"), a("target_location")
    b = at.shape[0]
    argm = spec.argument_masks()[at].astype(bool)
    n, r = int(max_entities), int(raw_resolution)
    if np.any(loc >= r * r):
        raise ValueError(f"target_location index {int(loc.max())} is off a {r}x{r} grid; the model's grid differs")
    # selected: rows until the first end-of-selection, then N
    ended = np.cumsum(sel >= rows, axis=1) > 0
    sel = np.where(ended | ~argm[:, 3:4], n, sel)
    if np.any((sel != n) & (sel >= n)):
        raise ValueError(f"selected row {int(sel[sel != n].max())} is past the env's {n} entity rows")
    out_sel = np.full((b, int(max_selected)), n, np.int64)
    k = min(sel.shape[1], int(max_selected))
    out_sel[:, :k] = sel[:, :k]
    uses_unit = argm[:, 4]
    if np.any(uses_unit & (tu >= min(rows, n))):
        raise ValueError(f"target_unit row {int(tu[uses_unit].max())} is past the {min(rows, n)} rows the model saw")
    target = np.where(uses_unit, tu, n)
    col_row = np.stack([loc % r, loc // r], 1)
    col_row[~argm[:, 5]] = 0
    return {
        "action_type": at,
        "delay": np.clip(delay, 0, spec.MAX_DELAY),
        "queued": np.where(argm[:, 2], queued, 0),
        "selected_units": out_sel,
        "target_unit": target,
        "target_location": col_row,
    }


def env_actions_to_labels(action: dict, max_entities: int, raw_resolution: int, device="cpu") -> dict:
    """A batched FullGame-v0 action -> ``AlphaStarPolicy`` teacher-forcing labels of one step.

    Args:
        action: numpy dict as :func:`model_actions_to_env` returns (``selected_units`` ended by
            ``max_entities``; ``target_unit == max_entities`` means none).
        max_entities: the env's N; raw_resolution: its R.
        device: torch device.

    Returns:
        ``action_type, delay, queued, selected_count, target_unit, target_location [B, 1]`` and
        ``selected [B, 1, K]`` int64 tensors, -1 where a head is unused (the replay dataset's labels).

    Raises:
        ValueError: a target_location off the grid.
    """
    at = np.asarray(action["action_type"], np.int64).reshape(-1)
    argm = spec.argument_masks()[at].astype(bool)
    n, r = int(max_entities), int(raw_resolution)
    sel = np.asarray(action["selected_units"], np.int64).reshape(len(at), -1)
    ended = np.cumsum(sel >= n, axis=1) > 0
    sel = np.where(ended | ~argm[:, 3:4], -1, sel)
    count = (sel >= 0).sum(1)
    tu = np.asarray(action["target_unit"], np.int64).reshape(-1)
    tu = np.where(argm[:, 4] & (tu < n), tu, -1)
    loc = np.asarray(action["target_location"], np.int64).reshape(len(at), 2)
    if np.any((loc < 0) | (loc >= r)):
        raise ValueError(f"target_location {loc.tolist()} is off the {r}x{r} grid")
    idx = np.where(argm[:, 5], loc[:, 1] * r + loc[:, 0], -1)

    def t(x):
        return torch.as_tensor(x, dtype=torch.int64, device=device).unsqueeze(1)

    return {
        "action_type": t(at),
        "delay": t(np.clip(np.asarray(action["delay"], np.int64).reshape(-1), 0, spec.MAX_DELAY)),
        "queued": t(np.where(argm[:, 2], np.asarray(action["queued"], np.int64).reshape(-1), 0)),
        "selected": t(sel),
        "selected_count": t(count),
        "target_unit": t(tu),
        "target_location": t(idx),
    }


# --------------------------------------------------------------------------------------- the actor
class AlphaStarActor:
    """``AlphaStarPolicy`` acting in B FullGame-v0 games at once, with its LSTM state per game.

    Args:
        model: an ``AlphaStarPolicy`` (e.g. from ``models.alphastar.load_alphastar``); put in eval mode.
        num_games: B.
        max_entities, max_selected, raw_resolution: the env's N, K and R (``raw_resolution`` must
            equal the model's).
        greedy: argmax every head instead of sampling.
        temperature: sample every head from ``softmax(logits / temperature)``
            (``models.alphastar.sample_tempered``; 1: as trained; 1 with ``greedy``). The logits ``act`` returns
            are the policy's own, not the tempered distribution the actions were drawn from.
        mask_action_type: mask the action-type logits with the observation's ``action_type_mask``
            even when the model does not read it (a replay-trained model: the replays hold no mask).
            mini-AlphaStar masks unavailable action types when it plays (RL and evaluation).
        entity_bucket: rows are run in multiples of this (fewer distinct shapes), >= 1.
        device: torch device of the model.

    Raises:
        ValueError: a raw resolution the model was not built for, a bad ``num_games`` /
            ``entity_bucket``, or a ``temperature`` ``models.alphastar.check_play`` refuses (one other than 1 with
            ``greedy``: the argmax samples nothing).
    """

    def __init__(
        self,
        model,
        num_games: int,
        max_entities: int = 512,
        max_selected: int = 64,
        raw_resolution: int = 64,
        greedy: bool = False,
        mask_action_type: bool = True,
        entity_bucket: int = 32,
        temperature: float = 1.0,
        device: str | torch.device = "cpu",
    ):
        cfg = model.cfg
        if int(raw_resolution) != cfg.raw_resolution:
            raise ValueError(
                f"raw_resolution={raw_resolution}; the model was built for {cfg.raw_resolution} "
                "(its target_location grid and entity x/y): make the env with the model's raw_resolution"
            )
        if int(num_games) < 1 or int(entity_bucket) < 1:
            raise ValueError(f"num_games={num_games}, entity_bucket={entity_bucket}; expected ints >= 1")
        self.model = model.eval()
        self.cfg = cfg
        self.num_games = int(num_games)
        self.n, self.k, self.r = int(max_entities), int(max_selected), int(raw_resolution)
        self.greedy = bool(greedy)
        self.temperature = check_play(self.greedy, temperature)
        self.mask_action_type = bool(mask_action_type) and not cfg.use_action_type_mask
        self.bucket = int(entity_bucket)
        self.device = torch.device(device)
        self.state = model.initial_state(self.num_games, self.device)
        self._views: dict[int, object] = {}
        self._at_mask: torch.Tensor | None = None

    def _view(self, rows: int):
        # The same module (shared parameters and buffers) with max_entities = rows: no weight depends
        # on the row count, and rows past entity_count are masked everywhere (module docstring).
        if rows not in self._views:
            self._views[rows] = with_rows(self.model, rows)
        return self._views[rows]

    def rows_for(self, obs: dict) -> int:
        """Entity rows the batch needs: its largest entity count, rounded up to the bucket, capped."""
        most = int(np.asarray(obs["entity_mask"]).astype(bool).sum(1).max(initial=1))
        return min(self.cfg.max_entities, max(self.bucket, math.ceil(most / self.bucket) * self.bucket))

    def reset(self, games=None) -> None:
        """Zero the LSTM state of ``games`` (bool ``(B,)`` or indices; all when None)."""
        h, c = self.state
        if games is None:
            h.zero_()
            c.zero_()
            return
        idx = torch.as_tensor(np.flatnonzero(np.asarray(games)) if np.asarray(games).dtype == bool else games)
        h[:, idx] = 0
        c[:, idx] = 0

    def _mask_hook(self, module, inputs, output):
        return torch.where(self._at_mask, output, torch.full_like(output, MASKED_LOGIT))

    @torch.no_grad()
    def act(self, obs: dict) -> tuple[dict, dict]:
        """One step of every game.

        Returns:
            ``(action, out)``: the FullGame-v0 action (numpy, batched) and the model's output of
            this step (logits ``[B, 1, ...]`` over ``rows`` entity rows, ``value``, ``actions``),
            e.g. the behaviour logits a learner stores.

        Raises:
            ValueError: observations that do not fit the model (:func:`model_inputs`).
        """
        rows = self.rows_for(obs)
        inputs = model_inputs(obs, self.cfg, rows, self.device)
        if inputs["entities"].shape[0] != self.num_games:
            raise ValueError(f"a batch of {inputs['entities'].shape[0]} observations; the actor plays {self.num_games}")
        handle = None
        if self.mask_action_type:
            m = torch.as_tensor(np.asarray(obs["action_type_mask"]), device=self.device).bool()
            m[:, 0] = True  # no_op is always available (spec); a row is never left with nothing
            self._at_mask = m
            handle = self.model.at_out.register_forward_hook(self._mask_hook)
        try:
            out, self.state = self._view(rows)(inputs, self.state, greedy=self.greedy, temperature=self.temperature)
        finally:
            if handle is not None:
                handle.remove()
                self._at_mask = None
        action = model_actions_to_env(out["actions"], rows, self.n, self.k, self.r)
        return action, out

    def __call__(self, obs: dict) -> dict:
        return self.act(obs)[0]


# --------------------------------------------------------------------------------------- env and stats
def make_vector_env(backend: str = "lite", num_envs: int = 8, **kwargs):
    """B FullGame-v0 games behind one batched interface (Gymnasium ``VectorEnv``, next-step autoreset).

    Args:
        backend: ``"lite"`` (``LiteFullGameVectorEnv``: the lite engine, B games in one state) or
            ``"sc2"`` (a ``gymnasium.vector.SyncVectorEnv`` of B real games, ``FullGameEnv``).
        num_envs: B (seed the games with ``env.reset(seed=...)``).
        kwargs: FullGame-v0 options (``step_mul``, ``game_steps_per_episode``, ``max_entities``, ...).

    Raises:
        ValueError: an unknown backend (and whatever the env raises for its options).
    """
    if backend == "lite":
        from sc2_envs.lite.env import LiteFullGameVectorEnv

        return LiteFullGameVectorEnv(num_envs=num_envs, **kwargs)
    if backend == "sc2":
        import gymnasium as gym

        from sc2_envs.full_game.env import make_full_game_env

        return gym.vector.SyncVectorEnv(
            [lambda: make_full_game_env("sc2", **kwargs) for _ in range(int(num_envs))],
            autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
        )
    raise ValueError(f"backend={backend!r}; expected 'lite' or 'sc2'")


class LiteProbe:
    """Reads what the observation does not carry from the lite engine's state: minerals collected,
    enemy units killed (count: bot units and structures that died) and the killed value.

    Args:
        engine: the ``LiteEngine`` of the vector env (``env.engine``).
    """

    def __init__(self, engine):
        from sc2_envs.lite import layout

        self.engine = engine
        self._L = layout
        self.killed = np.zeros(engine.num_games, np.int64)
        self._alive, self._recycle = self._enemy()

    def _enemy(self):
        ui = self.engine.state.ui
        L = self._L
        return (ui[:, :, L.UI_ALIVE] == 1) & (ui[:, :, L.UI_OWNER] == 2), ui[:, :, L.UI_RECYCLE].copy()

    def update(self) -> None:
        """Count the bot's units that died since the last call (call after every env step)."""
        alive, recycle = self._enemy()
        died = self._alive & ~(alive & (recycle == self._recycle))
        self.killed += died.sum(1)
        self._alive, self._recycle = alive, recycle

    def restart(self, games: np.ndarray) -> None:
        """Zero the counts of ``games`` (bool ``(B,)``) that started a new episode."""
        self.killed[games] = 0
        self._alive, self._recycle = self._enemy()

    def values(self, g: int) -> dict:
        """Game ``g``'s ``minerals_collected``, ``enemy_units_killed`` and ``killed_value`` (minerals + gas)."""
        pf = self.engine.state.pf[g, 1]
        L = self._L
        return {
            "minerals_collected": float(pf[L.PF_COLLECTED_MINERALS]),
            "enemy_units_killed": float(self.killed[g]),
            "killed_value": float(pf[L.PF_KILLED_VALUE]),
        }


@dataclass
class GameRecord:
    """One finished game.

    Attributes:
        outcome: +1 win, -1 loss, 0 tie or truncated (FullGame-v0's reward at the end).
        truncated: ended by ``game_steps_per_episode``.
        game_loops: game loops played.
        steps: agent decisions (env steps).
        idle_steps: decisions whose action_type was no_op or Stop (:func:`idle_function_ids`).
        error_steps: decisions the game refused (a non-zero ``action_errors`` code).
        refused: ``{(action_type function id, ActionResult code): decisions}`` of the refused
            decisions (the first code of each), so a report can say which commands the game refuses.
        army_supply: ``{minute: food_army}`` at the first observation at or past each minute of
            ``minutes`` (missing when the game ended earlier).
        probe: :class:`LiteProbe` values (empty on the real game).
    """

    outcome: float
    truncated: bool
    game_loops: int
    steps: int
    idle_steps: int
    error_steps: int
    army_supply: dict = field(default_factory=dict)
    probe: dict = field(default_factory=dict)
    refused: dict = field(default_factory=dict)


def play_games(
    policy,
    env,
    n_games: int,
    seed: int,
    probe: LiteProbe | None = None,
    minutes: tuple[float, ...] = (5.0, 8.0),
    max_steps: int | None = None,
) -> list[GameRecord]:
    """Play ``n_games`` games of ``policy`` on a batched FullGame-v0 ``env`` (next-step autoreset).

    Env ``b`` of B contributes its first ``n // B (+1 for b < n % B)`` games
    (``sc2_envs.training.evaluation.episode_quota``), so exactly ``n_games`` are counted and short
    games are not favoured.

    Args:
        policy: ``policy(obs) -> action`` on batched dicts; ``policy.reset(games)`` is called, when the
            policy has it, for the games that start a new episode.
        env: ``LiteFullGameVectorEnv`` or a Gymnasium vector env of ``FullGameEnv`` (:func:`make_vector_env`).
        n_games: games to count, >= 1.
        seed: ``env.reset(seed=seed)``.
        probe: engine-side statistics (``LiteProbe(env.engine)`` on the lite engine), or None.
        minutes: real minutes at which army supply is read.
        max_steps: stop after this many env steps even if games are unfinished (a safety bound;
            None: none). The games cut short are not recorded.

    Returns:
        the records, in the order the games finished.

    Raises:
        ValueError: ``n_games < 1``.
    """
    if int(n_games) < 1:
        raise ValueError(f"n_games={n_games}; expected >= 1")
    b = env.num_envs
    quota = np.full(b, n_games // b) + (np.arange(b) < n_games % b)
    obs, _ = env.reset(seed=seed)
    food_army = spec.SCALAR_INDEX["food_army"]
    loop_col = spec.SCALAR_INDEX["game_loop"]
    idle_ids = idle_function_ids()
    start_loop = np.asarray(obs["scalars"])[:, loop_col].astype(np.int64)
    steps = np.zeros(b, np.int64)
    idle = np.zeros(b, np.int64)
    errors = np.zeros(b, np.int64)
    refused_by_kind = [collections.Counter() for _ in range(b)]
    supply = [dict() for _ in range(b)]
    autoreset = np.zeros(b, bool)
    records: list[GameRecord] = []
    done_games = np.zeros(b, np.int64)
    step = 0
    reset = getattr(policy, "reset", None)
    while (done_games < quota).any():
        if max_steps is not None and step >= max_steps:
            break
        action = policy(obs)
        at = np.asarray(action["action_type"]).reshape(b)
        obs, reward, term, trunc, info = env.step(action)
        step += 1
        live = ~autoreset
        steps[live] += 1
        idle[live] += np.isin(at[live], idle_ids)
        errs = info.get("action_errors")
        if errs is not None:  # (B, spec.MAX_ACTION_ERRORS) ActionResult codes, 0-padded
            codes = np.asarray(errs).reshape(b, -1)
            refused = (codes != spec.NO_ACTION_ERROR).any(axis=1)
            errors[live] += refused[live]
            for g in np.flatnonzero(refused & live):
                first = codes[g][codes[g] != spec.NO_ACTION_ERROR][0]
                refused_by_kind[g][(int(at[g]), int(first))] += 1
        if probe is not None:
            probe.update()
        sc = np.asarray(obs["scalars"])
        loops = sc[:, loop_col].astype(np.int64) - start_loop
        for g in np.flatnonzero(live):
            for m in minutes:
                if m not in supply[g] and loops[g] >= m * LOOPS_PER_MINUTE:
                    supply[g][m] = float(sc[g, food_army])
        ended = (np.asarray(term) | np.asarray(trunc)) & live
        for g in np.flatnonzero(ended):
            if done_games[g] < quota[g]:
                records.append(
                    GameRecord(
                        outcome=float(reward[g]),
                        truncated=bool(trunc[g]) and not bool(term[g]),
                        game_loops=int(loops[g]),
                        steps=int(steps[g]),
                        idle_steps=int(idle[g]),
                        error_steps=int(errors[g]),
                        army_supply=dict(supply[g]),
                        probe=probe.values(int(g)) if probe is not None else {},
                        refused=dict(refused_by_kind[g]),
                    )
                )
            done_games[g] += 1
        if autoreset.any():  # these games started a new episode in this step: their first observation
            start_loop[autoreset] = sc[autoreset, loop_col].astype(np.int64)
            steps[autoreset] = idle[autoreset] = errors[autoreset] = 0
            for g in np.flatnonzero(autoreset):
                supply[g] = {}
                refused_by_kind[g] = collections.Counter()
            if probe is not None:
                probe.restart(autoreset)
            if reset is not None:
                reset(autoreset.copy())
        autoreset = ended
    return records
