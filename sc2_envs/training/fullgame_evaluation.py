"""Full-game evaluation against the bot: mini-AlphaStar's table, and behaviour selection of checkpoints.

:func:`evaluate_fullgame` plays a policy (an ``AlphaStarPolicy`` checkpoint, or a baseline name:
``random``, ``scripted``) for a number of games on FullGame-v0 through the actor loop
(:mod:`sc2_envs.training.fullgame_actor`) and returns a :class:`FullGameRow`: win rate with its
Wilson 95% interval, minerals collected, enemy units killed, army supply at 5 and 8 real minutes,
idle share (no-op and Stop), refused-command share and game length. ``algos/eval_fullgame.py`` prints
these rows; :func:`behaviour_result` gives the same figures in the form of
``sc2_envs.training.evaluation.evaluate(..., behaviour=True)``, so that behaviour selection
(``behaviour_key``, ``format_result``; ``algos/bc_select.py eval``) ranks full-game checkpoints as it
ranks SMAC ones: win rate, then less idling, then more damage (here the killed value: minerals + gas
of the enemy units and structures destroyed, score_cumulative killed_value_units + structures).

mini-AlphaStar's evaluation settings are the defaults (``rl_eval_sl.py``: Simple64, Protoss vs the
very_easy Terran bot, 18,000 game loops per game; its RL actors step 8 loops). A timeout is a tie,
not a win (mini-AlphaStar's ">4000 killed points counts as a win" rule is not applied: the table
shows killed value and kills beside the win rate instead).
"""

from __future__ import annotations

import collections
import os
from dataclasses import dataclass, fields

import numpy as np
import torch

from models.alphastar import check_play
from sc2_envs.full_game import MissingDependencyError, spec
from sc2_envs.stats import wilson_interval
from sc2_envs.training.fullgame_actor import LOOPS_PER_MINUTE, AlphaStarActor, LiteProbe, make_vector_env, play_games

__all__ = [
    "BASELINES",
    "BASELINE_RAW_RESOLUTION",
    "CSV_COLUMNS",
    "FullGameRow",
    "HEADER",
    "DEFAULT_STEP_MUL",
    "MAX_STEP_MUL",
    "REFUSED_TOP",
    "behaviour_result",
    "check_fullgame_checkpoint",
    "evaluate_fullgame",
    "format_row",
    "play_text",
    "is_fullgame_checkpoint",
    "refused_kinds",
    "summarise",
    "trained_step_mul",
]

BASELINES = ("random", "scripted")
"""Baseline policy names :func:`evaluate_fullgame` accepts besides checkpoint paths."""

DEFAULT_STEP_MUL = 8
"""Game loops per decision of a policy that records none: mini-AlphaStar's RL actors step 8 loops."""

MAX_STEP_MUL = 2**32 - 1
"""Largest step_mul a game can take: s2clientprotocol's ``RequestStep.count`` is a uint32 of game loops
(Blizzard/s2client-proto, s2clientprotocol/sc2api.proto)."""

BASELINE_RAW_RESOLUTION = 64
"""Raw-grid side the baselines (``random``, ``scripted``) play on (FullGame-v0's default)."""


def trained_step_mul(ckpt: dict, path: str = "the checkpoint") -> int | None:
    """Game loops between the decisions an ``AlphaStarPolicy`` checkpoint was trained to make, or None.

    Behaviour cloning on a fixed-stride replay dataset records the dataset's stride (``bc`` record,
    ``step_mul``: ``sc2_envs.replays`` ``--sample every_k --k K`` gives K): the labels say
    what the expert commanded per K game loops, so a policy that decides every 8 loops issues K/8
    times the experts' commands per game second. RL records the ``--step-mul`` it trained at
    (``rl`` record, its ``args``). Event-sampled datasets record none (no key, or None).

    Args:
        ckpt: the checkpoint dict (``models.alphastar.load_alphastar``'s second value).
        path: the checkpoint's file, named in errors.

    Returns:
        A positive int (game loops), or None.

    Raises:
        ValueError: ``bc``, ``rl`` or ``rl["args"]`` present but not a dict, or a recorded step_mul that is
            not an int in ``[1, MAX_STEP_MUL]`` (0, negative, a float, a bool, a string, NaN, a list), naming
            ``path``, the record and the value.
    """
    bc, rl = ckpt.get("bc"), ckpt.get("rl")
    rl_args = rl.get("args") if isinstance(rl, dict) else None
    for name, record in (("bc", bc), ("rl", rl), ("rl.args", rl_args)):
        if record is not None and not isinstance(record, dict):
            raise ValueError(f"{path}: its {name} record is a {type(record).__name__} ({record!r:.60}); expected a dict")
    for name, record in (("bc", bc), ("rl.args", rl_args)):
        k = (record or {}).get("step_mul")
        if k is None:
            continue
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_STEP_MUL:
            raise ValueError(
                f"{path}: its {name} record's step_mul is {k!r}; expected game loops per decision, "
                f"an int in [1, {MAX_STEP_MUL}]"
            )
        return k
    return None


def effective_step_mul(given: int, trained: int | None) -> tuple[int, str]:
    """The game loops per decision a policy plays at: ``given`` when > 0, else the step_mul it was trained
    at (:func:`trained_step_mul`), else :data:`DEFAULT_STEP_MUL` (mini-AlphaStar's 8).

    Args:
        given: a ``--step-mul``-style flag, >= 0 (0: the policy's own).
        trained: the policy's trained step_mul, or None.

    Returns:
        ``(step_mul, source)``; ``source`` is ``"given"``, ``"trained"`` or ``"default"``, for the caller's
        configuration line.
    """
    if given > 0:
        return given, "given"
    if trained:
        return trained, "trained"
    return DEFAULT_STEP_MUL, "default"


def check_fullgame_checkpoint(path: str, ckpt: dict) -> int | None:
    """Refuse an ``AlphaStarPolicy`` checkpoint (``format`` already checked) that cannot be played: its
    ``config`` does not build the model, its ``model`` state is missing or does not fit it, its recorded
    step_mul is invalid (:func:`trained_step_mul`), or its ``bc.args`` is not a dict. Builds the model on the
    CPU once.

    Args:
        path: the checkpoint's file, named in errors.
        ckpt: its dict (``torch.load``).

    Returns:
        The checkpoint's :func:`trained_step_mul`.

    Raises:
        ValueError: naming ``path`` and what is wrong.
    """
    from models.alphastar import AlphaStarConfig, AlphaStarPolicy

    for key in ("config", "model"):
        if not isinstance(ckpt.get(key), dict):
            found = "missing" if key not in ckpt else f"a {type(ckpt[key]).__name__}"
            raise ValueError(f"{path}: its {key!r} entry is {found}; expected a dict (models.alphastar.save_alphastar)")
    try:
        model = AlphaStarPolicy(AlphaStarConfig.from_dict(ckpt["config"]))
        model.load_state_dict(ckpt["model"])
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        message = " ".join(str(e).split())
        raise ValueError(
            f"{path}: its config and model do not make an AlphaStarPolicy ({type(e).__name__}: {message:.300})"
        ) from None
    step_mul = trained_step_mul(ckpt, path)  # checks the bc, rl and rl.args records too
    bc_args = (ckpt.get("bc") or {}).get("args")
    if bc_args is not None and not isinstance(bc_args, dict):  # read for the selection seed (eval_fullgame)
        raise ValueError(f"{path}: its bc.args record is a {type(bc_args).__name__}; expected a dict")
    return step_mul


@dataclass
class FullGameRow:
    """One policy's results over its games (``None`` where the backend does not report a figure).

    Units: minerals; kills are enemy units and structures; army supply is ``food_army`` (supply);
    shares are of agent decisions (env steps); ``game_length_min`` is in real minutes (1344 game loops).
    ``army_supply_5min_n`` counts the games still running at 5 minutes (the mean is over those).
    ``step_mul`` is the game loops per decision the games were played at (shares and ``mean_steps`` count
    decisions, so they compare only between rows of one ``step_mul``). ``refused_top`` names the
    commands the game refused most often (:func:`refused_kinds`, the top :data:`REFUSED_TOP`), each
    ``function:ActionResult=share`` of all decisions, joined by ``"; "``. ``play`` says how a checkpoint chose
    its actions (:func:`play_text`: ``sample``, ``sample at temperature 0.75``, ``argmax``); empty for a baseline.
    ``eval_seed`` and ``num_envs`` are the evaluation seed and the games played at once, which together fix the
    games (:func:`evaluate_fullgame`); ``sc2_envs.stats.pool_results`` refuses one seed twice for a row. Both are
    empty in CSVs written before the columns existed (2026-12-07).
    """

    policy: str
    games: int
    wins: int
    losses: int
    ties: int
    win_rate: float
    ci_low: float
    ci_high: float
    minerals_collected: float | None
    enemy_units_killed: float | None
    killed_value: float | None
    army_supply_5min: float | None
    army_supply_5min_n: int
    army_supply_8min: float | None
    army_supply_8min_n: int
    idle_share: float
    error_share: float
    game_length_min: float
    truncated_share: float
    mean_steps: float
    step_mul: int = DEFAULT_STEP_MUL
    refused_top: str = ""
    play: str = ""
    eval_seed: int | None = None
    num_envs: int | None = None


CSV_COLUMNS = [f.name for f in fields(FullGameRow)]

REFUSED_TOP = 5
"""How many kinds of refused command a :class:`FullGameRow` names."""


def refused_kinds(records, top: int = REFUSED_TOP) -> list[tuple[str, float]]:
    """The commands the game refused most often over ``records``, as ``("function:ActionResult", share)``
    with the share of all decisions (env steps) of the records, most frequent first, at most ``top``.

    Function names are pysc2's raw functions (``spec.raw_functions``) and ActionResult names
    s2clientprotocol's (``spec.action_result_name``); where those packages are missing, the numbers
    stand in (``fn<id>``, ``code<c>``).
    """
    total = collections.Counter()
    for r in records:
        total.update(r.refused)
    steps = max(sum(r.steps for r in records), 1)
    try:
        names = [f.name for f in spec.raw_functions()]
    except MissingDependencyError:
        names = None

    def label(fn: int, code: int) -> str:
        try:
            result = spec.action_result_name(code)
        except (MissingDependencyError, ValueError):
            result = f"code{code}"
        return f"{names[fn] if names is not None and 0 <= fn < len(names) else f'fn{fn}'}:{result}"

    return [(label(fn, code), k / steps) for (fn, code), k in total.most_common(top)]


def summarise(name: str, records) -> FullGameRow:
    """Aggregate :class:`~sc2_envs.training.fullgame_actor.GameRecord` s into one row.

    Raises:
        ValueError: no records.
    """
    n = len(records)
    if n == 0:
        raise ValueError(f"{name}: no finished games to summarise")
    wins = sum(r.outcome > 0 for r in records)
    losses = sum(r.outcome < 0 for r in records)
    lo, hi = wilson_interval(wins, n)

    def mean_probe(key):
        vals = [r.probe[key] for r in records if key in r.probe]
        return float(np.mean(vals)) if vals else None

    def army(minute):
        vals = [r.army_supply[minute] for r in records if minute in r.army_supply]
        return (float(np.mean(vals)) if vals else None), len(vals)

    a5, n5 = army(5.0)
    a8, n8 = army(8.0)
    steps = sum(r.steps for r in records)
    return FullGameRow(
        policy=name,
        games=n,
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        win_rate=wins / n,
        ci_low=lo,
        ci_high=hi,
        minerals_collected=mean_probe("minerals_collected"),
        enemy_units_killed=mean_probe("enemy_units_killed"),
        killed_value=mean_probe("killed_value"),
        army_supply_5min=a5,
        army_supply_5min_n=n5,
        army_supply_8min=a8,
        army_supply_8min_n=n8,
        idle_share=sum(r.idle_steps for r in records) / max(steps, 1),
        error_share=sum(r.error_steps for r in records) / max(steps, 1),
        game_length_min=float(np.mean([r.game_loops for r in records])) / LOOPS_PER_MINUTE,
        truncated_share=sum(r.truncated for r in records) / n,
        mean_steps=steps / n,
        refused_top="; ".join(f"{k}={v:.3f}" for k, v in refused_kinds(records)),
    )


def _f(v, fmt=".1f") -> str:
    return "n/a" if v is None else format(v, fmt)


HEADER = (
    "| policy | games | W / L / T | win rate [95% CI] | minerals | kills | "
    "army@5 (n) | army@8 (n) | idle | errors | length (min) |"
)
"""The Markdown header of :func:`format_row` lines."""


def format_row(r: FullGameRow) -> str:
    """One Markdown table line of a :class:`FullGameRow` (``n/a`` where a figure is ``None``)."""
    return (
        f"| {r.policy} | {r.games} | {r.wins} / {r.losses} / {r.ties} | {r.win_rate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] | "
        f"{_f(r.minerals_collected, '.0f')} | {_f(r.enemy_units_killed)} | "
        f"{_f(r.army_supply_5min)} ({r.army_supply_5min_n}) | "
        f"{_f(r.army_supply_8min)} ({r.army_supply_8min_n}) | {r.idle_share:.3f} | {r.error_share:.3f} | "
        f"{r.game_length_min:.2f} |"
    )


def behaviour_result(r: FullGameRow) -> dict:
    """The row as ``sc2_envs.training.evaluation.evaluate(..., behaviour=True)`` reports a SMAC evaluation.

    Keys: ``episodes``, ``wins``, ``win_rate``, ``win_ci``, ``idle_share``, ``damage_per_episode`` (the
    killed value per game, minerals + gas; 0 where the backend does not report it), ``mean_return``
    (mean outcome, +1 / -1 / 0), ``mean_length`` (env steps per game), plus the full row under ``fullgame``.
    """
    return {
        "episodes": r.games,
        "wins": r.wins,
        "win_rate": r.win_rate,
        "win_ci": (r.ci_low, r.ci_high),
        "idle_share": r.idle_share,
        "damage_per_episode": r.killed_value or 0.0,
        "mean_return": (r.wins - r.losses) / r.games,
        "mean_length": r.mean_steps,
        "fullgame": {f.name: getattr(r, f.name) for f in fields(r)},
    }


def load_policy(policy: str, step_mul: int = 0, device: str = "cpu") -> tuple[torch.nn.Module | None, int, int]:
    """The network behind ``policy`` and the settings it plays at.

    Args:
        policy: an ``AlphaStarPolicy`` checkpoint path, or a name in :data:`BASELINES`.
        step_mul: game loops per decision; 0: the checkpoint's :func:`trained_step_mul`, else
            :data:`DEFAULT_STEP_MUL`.
        device: torch device of the network.

    Returns:
        ``(model, step_mul, raw_resolution)``: the ``AlphaStarPolicy`` (None for a baseline), the game
        loops per decision it plays at, and the raw (and minimap) resolution of its model
        (:data:`BASELINE_RAW_RESOLUTION` for a baseline).

    Raises:
        ValueError: ``policy`` is neither a baseline name nor an existing file, or the file is not an
            ``AlphaStarPolicy`` checkpoint.
    """
    if policy in BASELINES:
        return None, effective_step_mul(step_mul, None)[0], BASELINE_RAW_RESOLUTION
    if not os.path.isfile(policy):
        raise ValueError(f"policy {policy!r}: neither a baseline {list(BASELINES)} nor a checkpoint file")
    from models.alphastar import load_alphastar

    model, ckpt = load_alphastar(policy, device=device)
    step_mul = effective_step_mul(step_mul, trained_step_mul(ckpt, policy))[0]
    return model, step_mul, model.cfg.raw_resolution


def make_actor(
    policy: str,
    model: torch.nn.Module | None,
    env,
    num_games: int,
    *,
    backend: str = "lite",
    raw_resolution: int = BASELINE_RAW_RESOLUTION,
    greedy: bool = False,
    mask_action_type: bool = True,
    enemy_start: tuple[int, int] | None = None,
    noop_prob: float = 0.5,
    seed: int = 0,
    device: str = "cpu",
    temperature: float = 1.0,
):
    """The actor that plays ``policy`` in ``env`` (``fullgame_actor.play_games``'s interface:
    ``actor(obs) -> action`` with an optional ``reset(games)``).

    Args:
        policy: a name in :data:`BASELINES` or a checkpoint path; model: its network from
            :func:`load_policy` (None for a baseline).
        env: the vector env it plays (``ScriptedExpert.for_lite`` reads the lite engine's map);
            num_games: B, the env's games.
        backend: ``lite`` or ``sc2``; raw_resolution: the model's (or the baselines') raw resolution.
        greedy, mask_action_type, temperature: :class:`~sc2_envs.training.fullgame_actor.AlphaStarActor` options.
        enemy_start: ``scripted`` on the real game: the enemy start location ``(col, row)``.
        noop_prob, seed: ``random``: its no-op probability and seed. device: torch device.

    Raises:
        ValueError: ``scripted`` on the real game without ``enemy_start``, or with it on the lite engine.
    """
    if policy == "random":
        from sc2_envs.lite.catalog import build_catalog
        from sc2_envs.lite.policy import RandomLegalPolicy

        catalog = env.engine.catalog if backend == "lite" else build_catalog("3.16.1")
        return RandomLegalPolicy(catalog, raw_resolution=raw_resolution, noop_prob=noop_prob, seed=seed)
    if policy == "scripted":
        from sc2_envs.training.fullgame_scripted import ScriptedExpert

        if backend == "lite":
            if enemy_start is not None:  # the lite engine knows the enemy base; another target would be a silent change
                raise ValueError(
                    f"enemy_start={enemy_start!r} with backend='lite': the lite engine gives the scripted expert the "
                    "enemy base; enemy_start is for backend='sc2'"
                )
            return ScriptedExpert.for_lite(env)
        if enemy_start is not None:
            return ScriptedExpert(enemy_start, raw_resolution=raw_resolution)
        raise ValueError("the scripted expert on backend='sc2' needs enemy_start=(col, row)")
    return AlphaStarActor(
        model,
        num_games,
        512,
        64,
        raw_resolution,
        greedy=greedy,
        mask_action_type=mask_action_type,
        temperature=temperature,
        device=device,
    )


def evaluate_fullgame(
    policy: str,
    games: int,
    seed: int,
    num_envs: int = 16,
    backend: str = "lite",
    step_mul: int = 0,
    game_steps_per_episode: int = 18000,
    omniscient: bool = False,
    greedy: bool = False,
    mask_action_type: bool = True,
    enemy_start: tuple[int, int] | None = None,
    noop_prob: float = 0.5,
    device: str = "cpu",
    temperature: float = 1.0,
) -> FullGameRow:
    """Play ``games`` games of ``policy`` against the bot and summarise them.

    Args:
        policy: an ``AlphaStarPolicy`` checkpoint path (``models.alphastar.save_alphastar``), or
            ``random`` / ``scripted`` (:data:`BASELINES`).
        games: games counted, >= 1; seed: ``env.reset(seed=seed)`` (the bot's jitter of every game) and
            the seed of the policy's sampled actions (torch's generator, forked: the caller's stream is left
            as it was), so a call repeats its figures.
        num_envs: games played at once (capped at ``games``). Part of what fixes the games: env ``b`` of the
            batch plays its share of them in turn and the policy samples for the whole batch, so the same
            ``seed`` at another ``num_envs`` plays other games.
        backend: ``lite`` or ``sc2``.
        step_mul: game loops per decision; 0: the checkpoint's :func:`trained_step_mul`, else
            :data:`DEFAULT_STEP_MUL` (baselines always play at 8 unless given another value).
        game_steps_per_episode, omniscient: FullGame-v0 options (``omniscient``: lite only).
        greedy, mask_action_type, temperature: :class:`~sc2_envs.training.fullgame_actor.AlphaStarActor` options
            (``greedy`` play of the shipped RL checkpoint wins none of 600 games: ``docs/a3c_upgo.md``); a
            baseline takes neither ``greedy`` nor a ``temperature`` other than 1.
        enemy_start: ``scripted`` on the real game: the enemy start location ``(col, row)``.
        noop_prob: ``random``: the no-op probability.
        device: torch device of the network.

    Raises:
        ValueError: ``games`` or ``num_envs`` not an int >= 1, a ``seed`` outside [0, 2**63 - 1], a ``noop_prob``
            outside [0, 1], a negative ``step_mul``, a ``temperature`` ``models.alphastar.check_play`` refuses (one
            other than 1 with ``greedy``), ``greedy`` or a temperature other than 1 for a baseline, a checkpoint
            that is not an ``AlphaStarPolicy`` checkpoint, a bad backend, or ``scripted`` on the real game
            without ``enemy_start``.
    """
    from sc2_envs.lite.env import MAX_SEED, check_seed  # the envs' seed range (imported here: the engine loads lazily)

    for name, value in (("games", games), ("num_envs", num_envs)):  # int() would play 1.5 as 1 (and count 2)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}={value!r}; expected an int >= 1")
    try:
        check_seed(seed)
    except ValueError:
        raise ValueError(f"seed={seed!r}; expected an int in [0, {MAX_SEED}]") from None
    if not 0.0 <= noop_prob <= 1.0:  # NaN fails this too
        raise ValueError(f"noop_prob={noop_prob!r}; expected a probability in [0, 1]")
    if step_mul < 0:
        raise ValueError(f"step_mul={step_mul!r}; expected game loops per decision >= 1, or 0 for the policy's own")
    temperature = check_play(greedy, temperature)  # before the env starts
    if policy in BASELINES and (greedy or temperature != 1.0):  # they would play as they always do, silently
        raise ValueError(
            f"greedy={greedy!r}, temperature={temperature!r}: the {policy} baseline samples no network; "
            "expected greedy=False and temperature=1"
        )
    b = min(int(num_envs), int(games))
    model, step_mul, res = load_policy(policy, step_mul, device)
    kw = dict(
        step_mul=step_mul,
        game_steps_per_episode=game_steps_per_episode,
        raw_resolution=res,
        minimap_resolution=res,
    )
    if backend == "lite":
        kw["omniscient"] = omniscient
    env = make_vector_env(backend, b, **kw)
    try:
        actor = make_actor(
            policy,
            model,
            env,
            b,
            backend=backend,
            raw_resolution=res,
            greedy=greedy,
            mask_action_type=mask_action_type,
            temperature=temperature,
            enemy_start=enemy_start,
            noop_prob=noop_prob,
            seed=seed,
            device=device,
        )
        probe = LiteProbe(env.engine) if backend == "lite" else None
        # sampled actions draw from torch's global generator: seeded with the evaluation seed inside a
        # fork, the figures repeat whatever ran before in the process, and the caller's stream is untouched
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            records = play_games(actor, env, games, seed, probe=probe)
    finally:
        env.close()
    row = summarise(policy, records)
    row.step_mul = step_mul
    row.play = "" if model is None else play_text(greedy, temperature)
    row.eval_seed, row.num_envs = seed, b
    return row


def play_text(greedy: bool, temperature: float) -> str:
    """How a checkpoint chooses its actions, as the CSV's ``play`` column says it: ``argmax``, ``sample``
    (temperature 1, as trained) or ``sample at temperature 0.75``."""
    if greedy:
        return "argmax"
    return "sample" if temperature == 1.0 else f"sample at temperature {temperature:g}"


def is_fullgame_checkpoint(path: str) -> bool:
    """True when ``path`` is an ``AlphaStarPolicy`` checkpoint (``models.alphastar.save_alphastar``);
    False for any other file, readable or not (the caller's own checkpoint reader names the problem)."""
    from models.alphastar import CHECKPOINT_FORMAT

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # not a torch file, or one that needs unpickling of objects: not ours
        return False
    return isinstance(ckpt, dict) and ckpt.get("format") == CHECKPOINT_FORMAT
