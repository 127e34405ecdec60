"""Evaluation of a policy on the batched simulator: the one episode loop every script imports.

:func:`evaluate` plays a fixed number of episodes with a policy (greedy by default) and returns
the win rate with its Wilson 95 % interval, the mean return and the mean episode length; with
``behaviour=True`` also what the policy *does* (share of each action among living agent-steps,
the idle share, damage dealt per episode), which behaviour cloning compares checkpoints by.
:func:`behaviour_key` and :func:`format_result` rank and print those results.

One per-env quota rule (:func:`episode_quota`): env ``b`` of ``B`` contributes its first
``q_b = n // B (+1 for b < n % B)`` episodes, so exactly ``n`` episodes are counted and short
episodes are not favoured, as they would be by counting the first ``n`` to finish anywhere
(the same concern as CleanRL's ``cleanrl_utils/evals``, which plays whole episodes per env).

The policy is any object with ``act(obs [B, N, obs_size], avail [B, N, n_actions] bool, greedy)
-> (actions [B, N] int64, logprobs)``, e.g. ``models.ClassPolicy``; loading checkpoints is left to
the caller (``models.load_checkpoint``). A recurrent policy (``policy.recurrent`` true) acts with
``act_recurrent(obs, avail, hidden, episode_start, greedy) -> (actions, logprobs, hidden)`` instead, its
hidden state carried from ``initial_hidden(B)`` and zeroed where an episode starts.
"""

from __future__ import annotations

from typing import Any

import torch

from sc2_envs.smac_actions import STOP, alive_mask
from sc2_envs.stats import wilson_interval

__all__ = ["behaviour_key", "enemy_hp", "enemy_maxima", "episode_quota", "evaluate", "format_result"]


def enemy_hp(state: torch.Tensor, env_info: dict, max_health: torch.Tensor, max_shield: torch.Tensor) -> torch.Tensor:
    """Absolute enemy health + shield ``[B]`` from SMAC global states ``[B, S]``.

    SMAC's state stores enemy health and shield as fractions of their maxima
    (``starcraft2.py get_state``); ``max_health`` / ``max_shield`` are the enemies' maxima,
    ``[n_enemies]`` or per env ``[B, n_enemies]`` (:func:`enemy_maxima`). Dead enemies have 0 in both.
    """
    lay = env_info["state_layout"]
    n_al, fa, n_en, fe = lay["n_agents"], lay["ally_state_feats"], lay["n_enemies"], lay["enemy_state_feats"]
    names = lay["enemy_state_feature_names"]
    rows = state[:, n_al * fa : n_al * fa + n_en * fe].reshape(state.shape[0], n_en, fe)
    hp = rows[..., names.index("health")] * max_health
    if "shield" in names:
        hp = hp + rows[..., names.index("shield")] * max_shield
    return hp.sum(-1)


def enemy_maxima(env) -> tuple[torch.Tensor, torch.Tensor]:
    """The enemies' health and shield maxima of ``env``'s current episodes, for :func:`enemy_hp`.

    Returns:
        ``(max_health, max_shield)``, each ``[n_enemies]`` float32 on a SMAC v1 map, or ``[B, n_enemies]``
        on a SMACv2 scenario, whose rosters differ per env and change at every reset (``env.table``); read
        them before each step, so that a step's ``final_state`` is weighed by the roster it was played with.
    """
    n = env.n_agents
    return env.table.max_health[..., n:], env.table.max_shield[..., n:]


def episode_quota(n_episodes: int, num_envs: int, device: str | torch.device = "cpu") -> torch.Tensor:
    """Episodes each env contributes: ``[num_envs]`` int64, ``n // B`` plus one for the first ``n % B`` envs.

    With more envs than episodes the last ``B - n`` envs contribute none.

    Raises:
        ValueError: ``num_envs < 1`` or ``n_episodes < 1``.
    """
    if num_envs < 1 or n_episodes < 1:
        raise ValueError(f"need num_envs >= 1 and n_episodes >= 1, got num_envs={num_envs}, n_episodes={n_episodes}")
    quota = torch.full((num_envs,), n_episodes // num_envs, dtype=torch.int64, device=device)
    quota[: n_episodes % num_envs] += 1
    return quota


@torch.no_grad()
def evaluate(
    policy: Any,
    env: Any,
    n_episodes: int,
    seed: Any,
    greedy: bool = True,
    behaviour: bool = False,
    frames: list | None = None,
    sample_seed: int | None = None,
) -> dict:
    """Play exactly ``n_episodes`` episodes of ``env`` with ``policy`` (quota rule: :func:`episode_quota`).

    Args:
        policy: ``act(obs, avail, greedy) -> (actions [B, N] int64, logprobs)``, or a recurrent one; see the
            module docstring.
        env: an autoresetting batched simulator (``sc2_envs.make_batched(..., autoreset=True)``);
            ``num_envs = B <= n_episodes`` wastes no env.
        n_episodes: episodes counted in total.
        seed: ``env.reset(seed)``: an int or a ``numpy.random.SeedSequence`` (env ``b``'s stream is
            its child ``b``); ``sc2_envs.eval_seed(run_seed, ...)`` gives battles that no training run
            of any seed plays.
        greedy: argmax over the available actions; False samples from the policy.
        behaviour: also measure ``idle_share``, ``action_shares`` and ``damage_per_episode`` (needs
            the simulator's ``table`` and ``state_layout``).
        frames: if a list, ``rgb_array`` frames of env 0's first episode are appended (for videos).
        sample_seed: sampled actions (``greedy=False``) draw from torch's global generator; with an
            int, the episodes run under ``torch.random.fork_rng`` seeded with it, so the figures
            repeat whatever ran before in the process and the caller's stream is left as it was.
            ``None`` draws from the global stream as it stands. Sampled figures depend on the env
            count too (the policy draws its noise for the whole batch); greedy ones do not.

    Returns:
        dict: ``episodes`` (int, ``= n_episodes``), ``wins`` (int, ``battle_won`` at the episode end),
        ``win_rate`` (float), ``win_ci`` (Wilson 95 % ``(low, high)``, ``sc2_envs.stats``),
        ``mean_return`` (float, undiscounted sum of the env's rewards per episode), ``mean_length``
        (float, env steps; 1 env step = 8 game loops). With ``behaviour``: ``action_shares`` (list
        over actions, among living agent-steps), ``idle_share`` (SMAC's stop among them) and
        ``damage_per_episode`` (enemy health + shield lost, absolute HP).

    Raises:
        ValueError: ``n_episodes < 1``.
    """
    if sample_seed is None or greedy:
        return _evaluate(policy, env, n_episodes, seed, greedy, behaviour, frames)
    dev = torch.device(env.device)
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
        torch.manual_seed(sample_seed)
        return _evaluate(policy, env, n_episodes, seed, greedy, behaviour, frames)


def _evaluate(policy, env, n_episodes: int, seed, greedy: bool, behaviour: bool, frames: list | None) -> dict:
    B = env.num_envs
    dev = env.device
    quota = episode_quota(n_episodes, B, dev)
    count = torch.zeros(B, dtype=torch.int64, device=dev)
    wins = torch.zeros(B, dtype=torch.int64, device=dev)
    ret_sum = torch.zeros(B, dtype=torch.float64, device=dev)
    len_sum = torch.zeros(B, dtype=torch.int64, device=dev)
    ep_ret = torch.zeros(B, dtype=torch.float64, device=dev)
    ep_len = torch.zeros(B, dtype=torch.int64, device=dev)
    if behaviour:
        info = env.get_env_info()
        act_counts = torch.zeros(env.n_actions, device=dev)
        dmg_sum = torch.zeros(B, dtype=torch.float64, device=dev)
        ep_dmg = torch.zeros(B, dtype=torch.float64, device=dev)
    out = env.reset(seed=seed)
    recurrent = bool(getattr(policy, "recurrent", False))
    hidden = policy.initial_hidden(B) if recurrent else None
    episode_start = torch.ones(B, dtype=torch.bool, device=dev)
    while bool((count < quota).any()):
        if frames is not None and int(count[0]) == 0:
            from sc2_envs.render import render_frame

            frames.append(render_frame(env.render_data(0)))
        counting = count < quota
        avail = out["avail_actions"]
        if recurrent:
            actions, _, hidden = policy.act_recurrent(out["obs"], avail, hidden, episode_start, greedy=greedy)
        else:
            actions, _ = policy.act(out["obs"], avail, greedy=greedy)
        if behaviour:
            alive = alive_mask(avail) & counting.unsqueeze(1)
            act_counts += torch.bincount(actions[alive], minlength=env.n_actions).float()
            max_h, max_s = enemy_maxima(env)  # this episode's roster (SMACv2 redraws it at each reset)
            before = enemy_hp(out["state"], info, max_h, max_s)
        out = env.step(actions)
        ep_ret += out["reward"].double()
        ep_len += 1
        done = episode_start = out["terminated"] | out["truncated"]
        take = done & counting
        wins += (take & out["battle_won"]).long()
        ret_sum += torch.where(take, ep_ret, 0.0)
        len_sum += torch.where(take, ep_len, 0)
        count += take.long()
        ep_ret = torch.where(done, 0.0, ep_ret)
        ep_len = torch.where(done, 0, ep_len)
        if behaviour:
            ep_dmg += (before - enemy_hp(out["final_state"], info, max_h, max_s)).clamp(min=0).double()
            dmg_sum += torch.where(take, ep_dmg, 0.0)
            ep_dmg = torch.where(done, 0.0, ep_dmg)
    n, w = int(count.sum()), int(wins.sum())
    result = {
        "episodes": n,
        "wins": w,
        "win_rate": w / n,
        "win_ci": wilson_interval(w, n),
        "mean_return": float(ret_sum.sum()) / n,
        "mean_length": float(len_sum.sum()) / n,
    }
    if behaviour:
        shares = (act_counts / act_counts.sum().clamp(min=1)).tolist()
        result.update(action_shares=shares, idle_share=shares[STOP], damage_per_episode=float(dmg_sum.sum()) / n)
    return result


def behaviour_key(r: dict) -> tuple:
    """Sort key of behaviour selection (larger is better): win rate, then less idling, then more damage.

    ``r`` is an :func:`evaluate` result with ``behaviour=True``. Validation action accuracy of a
    cloned policy can run against how it plays, so checkpoints are compared by what they do.
    """
    return (r["win_rate"], -r["idle_share"], r["damage_per_episode"])


def format_result(name: str, r: dict) -> str:
    """One table line of an :func:`evaluate` result with ``behaviour=True``, or of a full-game one
    (``sc2_envs.training.fullgame_evaluation.behaviour_result``, which has a ``fullgame`` row).

    The length carries its unit: env steps per episode for SMAC; for a full game, real minutes
    (1344 game loops, ``game_length_min``), the unit of ``algos/eval_fullgame.py``'s table.
    """
    lo, hi = r["win_ci"]
    if "fullgame" in r:
        length = f"{r['fullgame']['game_length_min']:.2f} min"
    else:
        length = f"{r['mean_length']:.1f} env steps"
    return (
        f"{name}: win {r['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] ({r['wins']}/{r['episodes']}), idle {r['idle_share']:.3f}, "
        f"damage/ep {r['damage_per_episode']:.1f}, return {r['mean_return']:.2f}, length {length}"
    )
