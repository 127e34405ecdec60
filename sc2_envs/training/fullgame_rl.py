"""Actor-learner pieces for reinforcement learning of ``AlphaStarPolicy`` on FullGame-v0.

The actor side collects unrolls with :class:`~sc2_envs.training.fullgame_actor.AlphaStarActor`
(B games at once, next-step autoreset) and the learner side recomputes every head under teacher
forcing (``env_actions_to_labels``) for the loss of ``models.alphastar_rl``. ``algos/a3c_upgo.py``
plugs them into the supervised actor pool (``sc2_envs.vector.actor_pool``).

* :class:`UnrollCollector` steps the games and returns one unroll of ``T`` env steps.
* :func:`run_fullgame_actor` is the actor pool's target: pull weights, collect, send, until stopped.
* :func:`collate_unrolls` pads entity rows and concatenates unrolls along the game axis.
* :class:`FullGameLearner` runs the student (and the teacher) on a batch and returns the loss. It
  keeps the teacher's LSTM state per actor game across unrolls (an actor's unrolls reach the
  learner in order, each continuing the previous; several of them in one batch are run one after
  the other), so the teacher sees whole games, as AlphaStar's actors ran the supervised policy
  alongside the agent, without the actor paying for it.

Unroll layout (numpy; ``B`` games of one actor, ``T`` env steps; row ``T`` of the inputs is
the observation after the last step, for the bootstrap value). The model's inputs and labels are
game-major, ``[B, T, ...]``, as ``AlphaStarPolicy``'s batch-first LSTM reads them; the per-step
terms of the loss are time-major, ``[T, B]``, as V-trace and UPGO scan them (IMPALA's layout):

* ``inputs``: ``model_inputs`` dict, each ``[B, T + 1, ...]``, entity rows padded to ``rows``;
* ``labels``: ``env_actions_to_labels`` dict, each ``[B, T, ...]`` int64;
* ``at_mask [B, T + 1, F]`` bool: the action types available (no_op always), as the actor masked;
* ``first [B, T + 1]`` bool: the actor zeroed the game's LSTM state before that step;
* ``state0``: ``(h, c)``, each ``[layers, B, hidden]`` float32, the actor's LSTM state at step 0;
* ``behaviour_logp [T, B, 6]`` float32 (``models.alphastar_rl.head_terms`` of the actor's output);
* ``reward``, ``terminated``, ``truncated``, ``valid`` ``[T, B]`` (``reward``: the game's, minus
  ``banked_minerals_cost`` per 1,000 minerals held, :class:`UnrollCollector`; ``valid`` is False on an
  autoreset step, whose action the env ignored);
* ``episodes``: ``(return, length, won)`` per episode that ended, ``saved_start_episodes`` the same for those that
  started from a saved game (:class:`UnrollCollector`); ``rows``; ``act_time_s``.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from models.alphastar import AlphaStarConfig, AlphaStarPolicy, with_rows
from models.alphastar_rl import OffPolicySettings, alphastar_offpolicy_loss, head_terms
from sc2_envs.full_game import spec
from sc2_envs.training.async_learner import actor_progress
from sc2_envs.training.fullgame_actor import AlphaStarActor, env_actions_to_labels, make_vector_env, model_inputs

__all__ = [
    "SAVED_START_GAMES",
    "FullGameActorSettings",
    "FullGameLearner",
    "UnrollCollector",
    "check_banked_minerals_cost",
    "check_saved_start_share",
    "check_teacher_fits",
    "collate_unrolls",
    "run_fullgame_actor",
]

MINERALS = spec.SCALAR_INDEX["minerals"]
"""The ``scalars`` column of the minerals the player holds (``PlayerCommon.minerals``), for ``banked_minerals_cost``."""

SAVED_START_SPAWN_KEY = 0x73767374
"""Spawn key of an actor's draws of saved starts (ASCII "svst"): ``SeedSequence(seed, spawn_key=(key,))``, a stream
apart from the games' own seeding by ``seed``."""

SAVED_START_GAMES = ("failed", "running")
"""Which saved training games join the saved-start pool (``--saved-start-games``, :class:`UnrollCollector`):
``failed``, those that went on to end without a win; ``running``, every game still running at the save loop."""


def check_saved_start_share(share) -> float:
    """The one home of the rule for a saved-start share (``--saved-start-share``, :class:`UnrollCollector`).

    Returns:
        ``share`` as a float in [0, 1).

    Raises:
        ValueError: not a real number (bools and strings included) in [0, 1), naming the value.
    """
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share < 1.0:
        raise ValueError(f"{share!r}: expected a share of new training games in [0, 1) (0: none)")
    return float(share)


def check_banked_minerals_cost(cost) -> float:
    """The one home of the rule for a banked-minerals cost (``--banked-minerals-cost``, :class:`UnrollCollector`).

    Returns:
        ``cost`` as a float >= 0.

    Raises:
        ValueError: not a finite real number >= 0 (bools and strings included), naming the value.
    """
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not (math.isfinite(cost) and cost >= 0):
        raise ValueError(f"{cost!r}: expected a cost per env step per 1,000 minerals held, a finite number >= 0 (0: none)")
    return float(cost)


_NONE_IS_MINUS_ONE = ("selected", "target_unit", "target_location")  # label heads whose "none" is -1

_INPUT_FIELDS = (
    "entity_features",
    "scalar_features",
    "minimap_features",
    "use_action_type_mask",
    "max_selected",
    "raw_resolution",
    "minimap_size",
    "n_functions",
    "n_unit_types",
    "n_upgrades",
)


@dataclass(frozen=True)
class FullGameActorSettings:
    """What an actor plays.

    Attributes:
        backend: ``"lite"`` (the embedded lite engine) or ``"sc2"`` (real StarCraft II).
        num_games: B, games per actor (``"sc2"``: one game process each).
        unroll_length: T, env steps per unroll.
        env_kwargs: FullGame-v0 options (``step_mul``, ``game_steps_per_episode``, ``max_entities``,
            ``max_selected``, ``raw_resolution``, ``minimap_resolution``); the resolutions must be the model's.
        entity_bucket: entity rows are run in multiples of this (``AlphaStarActor``).
        discount_zero_after_timeout: a game that reaches its loop limit ends as a tie with discount 0
            (reported ``terminated``, not ``truncated``), so the value learns that running out of time
            is worth 0 and the objective is to win within the limit; pysc2's ``SC2Env`` option of the
            same name (``pysc2/env/sc2_env.py``). False: the limit is a truncation that the value bootstraps.
        saved_start_share: the share of new training games that start from a saved one instead of loop 0
            (:class:`UnrollCollector`; the lite engine only); 0: none.
        save_loop: the game loop at which the actor saves its training games for ``saved_start_share``.
        saved_start_games: which saves join the pool, one of :data:`SAVED_START_GAMES` (:class:`UnrollCollector`).
        save_pool: the most saved games an actor keeps (the oldest go first).
        banked_minerals_cost: the cost per env step per 1,000 minerals held after the step, subtracted from the
            game's reward (:class:`UnrollCollector`); 0: the game's reward alone.
    """

    backend: str = "lite"
    num_games: int = 8
    unroll_length: int = 16
    env_kwargs: dict = field(default_factory=dict)
    entity_bucket: int = 32
    discount_zero_after_timeout: bool = False
    saved_start_share: float = 0.0
    save_loop: int = 0
    saved_start_games: str = "failed"
    save_pool: int = 256
    banked_minerals_cost: float = 0.0


def check_teacher_fits(student: AlphaStarConfig, teacher: AlphaStarConfig) -> None:
    """The teacher must read the student's inputs and share its heads.

    Raises:
        ValueError: naming every configuration field that differs.
    """
    bad = [
        f"{k}: student {getattr(student, k)!r}, teacher {getattr(teacher, k)!r}"
        for k in _INPUT_FIELDS
        if getattr(student, k) != getattr(teacher, k)
    ]
    if bad:
        raise ValueError("the teacher reads other inputs or has other heads than the student: " + "; ".join(bad))


def _cat_games(outs: list, order: torch.Tensor):
    """Concatenate model outputs (nested dicts of ``[B_i, ...]`` tensors) along the game axis, then take the
    games in ``order``."""
    if isinstance(outs[0], dict):
        return {k: _cat_games([o[k] for o in outs], order) for k in outs[0]}
    return torch.cat(outs, 0)[order]


def _at_mask(obs: dict) -> np.ndarray:
    """The action types ``[B, F]`` bool the actor masked with (``at_mask``): the env's mask, no_op always set."""
    m = np.array(obs["action_type_mask"], dtype=bool, copy=True)
    m[:, 0] = True  # no_op (the actor's rule)
    return m


class UnrollCollector:
    """Plays B games with ``actor`` on ``env`` and cuts the stream into unrolls of T env steps.

    Saved starts (``saved_start_share > 0``): every training game still running at game loop ``save_loop`` is
    saved there (``LiteFullGameVectorEnv.save_game``). With ``saved_start_games="failed"`` the save joins the pool
    when that game then ends without a win (a tie or a loss): the states from which the policy fails; with
    ``"running"`` it joins at once, so the pool holds the states the policy reaches at that loop, whatever
    followed. Each new game then starts from a
    save drawn uniformly from the pool with probability ``saved_start_share`` (from loop 0 otherwise, and always
    while the pool is empty), with a fresh LSTM state like any new episode, and plays on to the same loop
    limit. Its episode is reported in ``saved_start_episodes``, not ``episodes``, so the training win rate
    stays that of whole games. This is "starting from states the agent reached" (Ecoffet et al., Go-Explore,
    Nature 2021; Salimans and Chen, "Learning Montezuma's Revenge from a single demonstration", 2018), with
    the states chosen by the outcome that followed them.

    Banked minerals (``banked_minerals_cost > 0``): each live step's reward is the game's minus
    ``banked_minerals_cost`` per 1,000 minerals held after the step (``PlayerCommon.minerals``, the
    observation's ``scalars`` column), a pseudo-reward for spending, in the spirit of AlphaStar's pseudo-rewards
    (Vinyals et al., Nature 2019), aimed at the games that bank minerals and stop producing. It changes the
    objective (it is not potential-based), and a cost per env step weighs more at a smaller step_mul.
    Episodes (``episodes``, ``saved_start_episodes``) report the game's return and outcome, never the cost,
    so training win rates and returns stay comparable across runs.

    Args:
        actor: an ``AlphaStarActor`` over ``env.num_envs`` games (sampling).
        env: a batched FullGame-v0 env with next-step autoreset (``make_vector_env``).
        seed: ``env.reset(seed=seed)``, an int in ``[0, 2**63 - 1]``; also seeds the draws of saved starts.
        discount_zero_after_timeout: a game that reaches its loop limit is reported ``terminated``, not
            ``truncated`` (:class:`FullGameActorSettings`).
        saved_start_share: in [0, 1); above 0 the env must have ``save_game`` / ``load_game`` (the lite engine's).
        save_loop: game loops, an int >= 1 (read when ``saved_start_share > 0``; >= 0 otherwise).
        saved_start_games: one of :data:`SAVED_START_GAMES`.
        save_pool: saves kept, an int >= 1 (a FIFO; >= 0 when ``saved_start_share`` is 0).
        banked_minerals_cost: the cost per env step per 1,000 minerals held, a finite number >= 0 (0: none;
            :func:`check_banked_minerals_cost`).

    Raises:
        ValueError: ``actor.num_games != env.num_envs``, saved-start settings out of range or on an env
            that cannot save games, or a negative or non-finite ``banked_minerals_cost``.
    """

    def __init__(
        self,
        actor: AlphaStarActor,
        env,
        seed: int,
        discount_zero_after_timeout: bool = False,
        saved_start_share: float = 0.0,
        save_loop: int = 0,
        saved_start_games: str = "failed",
        save_pool: int = 256,
        banked_minerals_cost: float = 0.0,
    ):
        if actor.num_games != env.num_envs:
            raise ValueError(f"the actor plays {actor.num_games} games; the env has {env.num_envs}")
        try:
            share = check_saved_start_share(saved_start_share)
        except ValueError as e:
            raise ValueError(f"saved_start_share={e}") from None
        for name, value in (("save_loop", save_loop), ("save_pool", save_pool)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < (1 if share else 0):
                raise ValueError(f"{name}={value!r}; expected an int >= 1 (>= 0 when saved_start_share is 0)")
        if saved_start_games not in SAVED_START_GAMES:
            raise ValueError(f"saved_start_games={saved_start_games!r}; expected one of {SAVED_START_GAMES}")
        if share > 0 and not hasattr(env, "save_game"):
            raise ValueError(
                f"saved_start_share={share}: {type(env).__name__} cannot save a game; saved starts need the lite "
                "engine (LiteFullGameVectorEnv)"
            )
        try:
            self.banked_minerals_cost = check_banked_minerals_cost(banked_minerals_cost)
        except ValueError as e:
            raise ValueError(f"banked_minerals_cost={e}") from None
        self.actor, self.env = actor, env
        self.discount_zero_after_timeout = bool(discount_zero_after_timeout)
        self.saved_start_share, self.save_loop = share, int(save_loop)
        self.pool_failed_only = saved_start_games == "failed"
        self.obs, info = env.reset(seed=int(seed))
        b = env.num_envs
        self.autoreset = np.zeros(b, bool)  # the next step resets these games (their action is ignored)
        self.first = np.ones(b, bool)  # the LSTM state was zeroed before the next step
        self.ep_ret = np.zeros(b, np.float64)
        self.ep_len = np.zeros(b, np.int64)
        self.rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(SAVED_START_SPAWN_KEY,)))
        self.pool: collections.deque = collections.deque(maxlen=int(save_pool))
        self.held: list = [None] * b  # each game's save at save_loop, until its outcome is known
        self.from_save = np.zeros(b, bool)  # the game's episode started from a save
        self.loop = np.asarray(info.get("game_loop", np.zeros(b)), np.int64).copy()

    def _save_crossing(self, loop: np.ndarray, running: np.ndarray) -> None:
        """Save the running games whose last step crossed ``save_loop``: held until the game's outcome
        (``saved_start_games="failed"``), else into the pool at once."""
        for g in np.flatnonzero(running & (self.loop < self.save_loop) & (loop >= self.save_loop)):
            saved = self.env.save_game(int(g))
            if self.pool_failed_only:
                self.held[g] = saved
            else:
                self.pool.append(saved)

    def _start_from_saves(self, games: np.ndarray) -> None:
        """Start each of ``games`` (just reset) from a pool save with probability ``saved_start_share``."""
        for g in games:
            self.from_save[g] = False
            if self.pool and self.rng.random() < self.saved_start_share:
                saved = self.pool[int(self.rng.integers(len(self.pool)))]
                self.env.load_game(int(g), saved)  # rewrites game g's row of self.obs (the env's buffers)
                self.loop[g] = saved.game_loop
                self.from_save[g] = True

    def collect(self, T: int, on_step: Callable[[], None] = lambda: None, stopped: Callable[[], bool] = lambda: False):
        """The next ``T`` env steps as an unroll (module docstring), or None when ``stopped()``."""
        actor, cfg = self.actor, self.actor.cfg
        h0, c0 = (x.detach().cpu().numpy().copy() for x in actor.state)
        steps_inputs, labels, at_masks, first, blogp = [], [], [], [], []
        keys = ("reward", "terminated", "truncated", "valid")
        buf = {k: [] for k in keys}
        episodes, saved_start_episodes = [], []
        t0 = time.monotonic()
        for _ in range(T):
            if stopped():
                return None
            rows = actor.rows_for(self.obs)
            steps_inputs.append({k: v.clone() for k, v in model_inputs(self.obs, cfg, rows).items()})
            at_masks.append(_at_mask(self.obs))
            first.append(self.first.copy())
            action, out = actor.act(self.obs)
            lab = env_actions_to_labels(action, actor.n, actor.r)
            labels.append(lab)
            blogp.append(head_terms(out, torch.as_tensor(at_masks[-1]).unsqueeze(1)).logp[:, 0].numpy())
            self.obs, reward, term, trunc, info = self.env.step(action)
            on_step()
            live = ~self.autoreset
            term, trunc = np.asarray(term, bool), np.asarray(trunc, bool)
            if self.discount_zero_after_timeout:  # the limit ends the game as a tie worth 0
                term, trunc = term | trunc, np.zeros_like(trunc)
            reward = np.asarray(reward, np.float32)  # the game's: +1 won, -1 lost, 0 otherwise
            trained = reward
            if self.banked_minerals_cost:  # the minerals held after the step, this step's observation
                held = np.asarray(self.obs["scalars"])[:, MINERALS]
                trained = reward - np.float32(self.banked_minerals_cost / 1000.0) * held
            buf["reward"].append(trained)
            buf["terminated"].append(term & live)
            buf["truncated"].append(trunc & live)
            buf["valid"].append(live)
            self.ep_ret[live] += np.asarray(reward, np.float64)[live]
            self.ep_len[live] += 1
            ended = (term | trunc) & live
            if self.saved_start_share:
                loop = np.asarray(info["game_loop"], np.int64)
                self._save_crossing(loop, live & ~ended)
                self.loop[:] = loop
            for g in np.flatnonzero(ended):
                won = bool(reward[g] > 0)
                (saved_start_episodes if self.from_save[g] else episodes).append(
                    (float(self.ep_ret[g]), int(self.ep_len[g]), won)
                )
                if self.held[g] is not None and not won:
                    self.pool.append(self.held[g])
                self.held[g] = None
            self.ep_ret[ended], self.ep_len[ended] = 0.0, 0
            # games reset in this step start their new episode at the next observation: fresh LSTM state
            self.first = self.autoreset.copy()
            if self.first.any():
                actor.reset(self.first)
                if self.saved_start_share:
                    self._start_from_saves(np.flatnonzero(self.first))
            self.autoreset = ended
        rows = max(actor.rows_for(self.obs), max(x["entities"].shape[2] for x in steps_inputs))
        steps_inputs.append({k: v.clone() for k, v in model_inputs(self.obs, cfg, rows).items()})
        at_masks.append(_at_mask(self.obs))
        first.append(self.first.copy())
        inputs = {}
        for k in steps_inputs[0]:
            parts = [x[k] for x in steps_inputs]
            if k == "entities":
                parts = [torch.nn.functional.pad(p, (0, 0, 0, rows - p.shape[2])) for p in parts]
            inputs[k] = torch.cat(parts, 1).numpy()
        unroll = {
            "inputs": inputs,
            "labels": {k: torch.cat([lab[k] for lab in labels], 1).numpy() for k in labels[0]},
            "at_mask": np.stack(at_masks, 1),
            "first": np.stack(first, 1),
            "state0": (h0, c0),
            "behaviour_logp": np.stack(blogp, 0).astype(np.float32),
            "episodes": episodes,
            "saved_start_episodes": saved_start_episodes,
            "rows": int(rows),
            "act_time_s": time.monotonic() - t0,
        }
        unroll.update({k: np.stack(v, 0) for k, v in buf.items()})
        return unroll


def compile_lite_kernels(settings: FullGameActorSettings, log: Callable[[str], None] = print) -> float:
    """Compile the lite engine's Numba kernels in this process, before the actors start.

    With an empty Numba cache (a fresh install, an edit of ``sc2_envs.lite``) an actor's first env step
    compiles the engine (about 50 CPU seconds; minutes on a loaded machine, docs/full_game.md), and
    every actor would compile it at once, each past ``--startup-timeout``, to be restarted and compile
    again. Compiled here once, the kernels go to Numba's on-disk cache, which the actors then load.
    Plays ``settings.num_games`` random legal games (the actors' batch size, so the same builds) for
    two env steps: every kernel an env step calls is compiled by the first.

    Args:
        settings: the actors' settings (``backend`` must be ``"lite"``).
        log: called with one line before and one after.

    Returns:
        Wall-clock seconds it took (a cache hit: about a second).
    """
    from sc2_envs.lite.policy import RandomLegalPolicy
    from sc2_envs.training.fullgame_actor import play_games

    t0 = time.time()
    log("compiling the lite engine's kernels before the actors start (first use: ~50 CPU s; then Numba's cache)")
    env = make_vector_env("lite", settings.num_games, **settings.env_kwargs)
    try:
        kw = settings.env_kwargs  # the policy's action sizes must be the env's (FullGame-v0's defaults otherwise)
        sizes = {k: kw[k] for k in ("max_entities", "max_selected", "raw_resolution") if k in kw}
        policy = RandomLegalPolicy(env.engine.catalog, seed=0, **sizes)
        play_games(policy, env, settings.num_games, 0, max_steps=2)
    finally:
        env.close()
    log(f"lite engine ready in {time.time() - t0:.1f} s")
    return time.time() - t0


def run_fullgame_actor(
    settings: FullGameActorSettings,
    model_config: dict,
    seed_fn: Callable[[int, int], np.random.SeedSequence],
    slot: int,
    gen: int,
    channel,
) -> None:
    """The actor pool's target (``functools.partial(run_fullgame_actor, settings, cfg, seed_fn)``).

    Builds ``settings.num_games`` games and an ``AlphaStarPolicy`` of ``model_config``
    (``AlphaStarConfig.to_dict()``), then sends unrolls of ``settings.unroll_length`` env steps
    (module docstring) with ``version``, ``slot`` and ``gen`` added, pulling newer weights before
    each, until ``channel.stopped()``. ``seed_fn(slot, gen)`` seeds torch (sampling) and the games.
    """
    state = seed_fn(slot, gen).generate_state(2, np.uint32)
    torch.manual_seed(int(state[0]))
    # < 2**30: the real game's random_seed is 31 bits (full_game.env.MAX_GAME_SEED) and a vector env
    # of real games seeds game b with seed + b
    env_seed = int(state[1] >> 2)
    env = make_vector_env(settings.backend, settings.num_games, **settings.env_kwargs)
    try:
        model = AlphaStarPolicy(AlphaStarConfig.from_dict(model_config))
        version = channel.pull_weights(model, -1)
        kw = settings.env_kwargs
        actor = AlphaStarActor(
            model,
            settings.num_games,
            max_entities=kw.get("max_entities", 512),
            max_selected=kw.get("max_selected", 64),
            raw_resolution=kw.get("raw_resolution", 64),
            entity_bucket=settings.entity_bucket,
        )
        collector = UnrollCollector(
            actor,
            env,
            env_seed,
            discount_zero_after_timeout=settings.discount_zero_after_timeout,
            saved_start_share=settings.saved_start_share,
            save_loop=settings.save_loop,
            saved_start_games=settings.saved_start_games,
            save_pool=settings.save_pool,
            banked_minerals_cost=settings.banked_minerals_cost,
        )
        print(
            f"[actor {slot} gen {gen}] {settings.num_games} FullGame-v0 games ({settings.backend}), policy version {version}",
            flush=True,
        )
        sent = 0
        while not channel.stopped():
            new = channel.pull_weights(model, version)
            if new is not None:
                version = new
            unroll = collector.collect(settings.unroll_length, channel.beat_step, channel.stopped)
            if unroll is None:
                return
            unroll.update(version=version, slot=slot, gen=gen)
            channel.send(unroll)
            sent += 1
            actor_progress(slot, gen, sent, version)
    finally:
        env.close()


def collate_unrolls(unrolls: list[dict], device: torch.device | str = "cpu") -> dict:
    """Concatenate unrolls along the game axis (entity rows padded to the largest); tensors on ``device``."""
    rows = max(u["rows"] for u in unrolls)

    def cat(arrays, axis):
        return torch.as_tensor(np.concatenate(arrays, axis=axis), device=device)

    inputs = {}
    for k in unrolls[0]["inputs"]:
        parts = [u["inputs"][k] for u in unrolls]
        if k == "entities":
            parts = [np.pad(p, ((0, 0), (0, 0), (0, rows - p.shape[2]), (0, 0))) for p in parts]
        inputs[k] = cat(parts, 0)
    out = {
        "inputs": inputs,
        "labels": {k: cat([u["labels"][k] for u in unrolls], 0) for k in unrolls[0]["labels"]},
        "at_mask": cat([u["at_mask"] for u in unrolls], 0),
        "first": cat([u["first"] for u in unrolls], 0),
        "state0": tuple(cat([u["state0"][i] for u in unrolls], 1) for i in range(2)),
        "rows": rows,
        "keys": [(u["slot"], u["gen"], u["first"].shape[0]) for u in unrolls],
    }
    for k in ("behaviour_logp", "reward", "terminated", "truncated", "valid"):
        out[k] = cat([u[k] for u in unrolls], 1)
    return out


class FullGameLearner:
    """The learner's forward passes and loss for a batch of :func:`collate_unrolls`.

    Args:
        model: the student ``AlphaStarPolicy`` (trained).
        teacher: the supervised ``AlphaStarPolicy`` of the KL, or None; frozen here.
        settings: the loss's discount, traces and coefficients.

    Raises:
        ValueError: a teacher that does not fit the student (:func:`check_teacher_fits`), or
            ``settings.kl_coef > 0`` without one.
    """

    def __init__(self, model: AlphaStarPolicy, teacher: AlphaStarPolicy | None, settings: OffPolicySettings):
        if teacher is not None:
            check_teacher_fits(model.cfg, teacher.cfg)
            teacher.eval().requires_grad_(False)
        if settings.kl_coef > 0 and teacher is None:
            raise ValueError(f"kl_coef={settings.kl_coef} > 0 needs a teacher")
        self.model, self.teacher, self.settings = model, teacher, settings
        self.teacher_state: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}

    def _teacher_state(self, keys, device):
        """The teacher's LSTM state at the start of the unrolls ``keys`` (``(slot, gen, B)`` each): the state it
        ended the same actor's previous unroll with, or zeros for an actor's first unroll."""
        hs, cs = [], []
        for slot, gen, b in keys:
            st = self.teacher_state.get((slot, gen))
            if st is None or st[0].shape[1] != b:
                st = self.teacher.initial_state(b, device)
            hs.append(st[0])
            cs.append(st[1])
        return torch.cat(hs, 1), torch.cat(cs, 1)

    def _teacher_forward(self, batch: dict, labels: dict) -> dict:
        """The teacher's teacher-forced output over the first ``T`` steps of every unroll of ``batch``, games
        in the batch's order; its LSTM state follows each actor's unrolls in the order they were received.

        An actor may have several unrolls in one batch (``--batch-unrolls`` > 1), each continuing the one before:
        the batch is run in rounds, round ``k`` holding every actor's ``k``-th unroll of the batch, so that each
        unroll starts from the state the teacher ended the actor's previous unroll with (in this batch or an
        earlier one).
        """
        T = batch["reward"].shape[0]
        keys, device = batch["keys"], batch["reward"].device
        teacher = with_rows(self.teacher, batch["rows"])
        rounds, games, seen, start = [], [], {}, 0
        for slot, gen, b in keys:
            rounds.append(seen.get((slot, gen), 0))
            seen[(slot, gen)] = rounds[-1] + 1
            games.append(list(range(start, start + b)))
            start += b
        outs, order = [], []
        for r in range(max(rounds) + 1):
            picked = [i for i, k in enumerate(rounds) if k == r]
            cols = [g for i in picked for g in games[i]]
            idx = slice(None) if len(picked) == len(keys) else torch.as_tensor(cols, device=device)
            state = self._teacher_state([keys[i] for i in picked], device)
            with torch.no_grad():
                inputs = {k: v[idx, :T] for k, v in batch["inputs"].items()}
                lab = {k: v[idx] for k, v in labels.items()}
                out, (h, c) = teacher(inputs, state, labels=lab, first=batch["first"][idx, :T])
            i = 0
            for slot, gen, b in (keys[j] for j in picked):
                self.teacher_state[(slot, gen)] = (h[:, i : i + b].clone(), c[:, i : i + b].clone())
                for old in [k for k in self.teacher_state if k[0] == slot and k[1] < gen]:
                    del self.teacher_state[old]  # a replaced actor's games are gone
                i += b
            outs.append(out)
            order.extend(cols)
        if len(outs) == 1:
            return outs[0]
        back = torch.argsort(torch.as_tensor(order, device=device))  # the rounds' games back in the batch's order
        return _cat_games(outs, back)

    def loss(self, batch: dict) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``(loss, logs)`` of ``models.alphastar_rl.alphastar_offpolicy_loss`` on ``batch``."""
        labels = batch["labels"]
        # the bootstrap row needs only the value: a no_op label (uses no argument head)
        last = {k: torch.full_like(v[:, :1], -1 if k in _NONE_IS_MINUS_ONE else 0) for k, v in labels.items()}
        pad = {k: torch.cat([v, last[k]], 1) for k, v in labels.items()}
        model = with_rows(self.model, batch["rows"])
        out, _ = model(batch["inputs"], batch["state0"], labels=pad, first=batch["first"])
        teacher_out = self._teacher_forward(batch, labels) if self.teacher is not None else None
        return alphastar_offpolicy_loss(out, teacher_out, batch, self.settings)
