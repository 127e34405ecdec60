# Behaviour-based checkpoint selection and weight averaging for behaviour cloning (issue 7).
# Lessons it encodes (mini-AlphaStar 2026-11 evaluation, issue 7): validation action accuracy can run
# against behaviour, so checkpoints are compared by what they do when they play (win rate with a Wilson
# interval, idle share, damage dealt); averaging 2-3 adjacent epochs of one run can help.
"""Evaluate BC checkpoints on the simulator, and average checkpoints of one run.

    python algos/bc_select.py eval runs/RUN/epoch_*.pt --map 3m --episodes 128
    python algos/bc_select.py average runs/RUN/epoch_004.pt runs/RUN/epoch_005.pt --out runs/RUN/avg_4_5.pt

``eval`` prints one line per checkpoint: win rate and its Wilson 95% interval, idle share (stop among
living agent-steps; no-op is available only to dead SMAC agents), damage dealt per episode (enemy
health + shield lost, absolute HP), mean return and episode length. ``average`` writes the element-wise
mean of the checkpoints' floating-point tensors; checkpoints of different formats, configurations or
tensor shapes are refused with a ValueError naming the difference.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field

import torch
import tyro

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sc2_envs.demos import STOP, enemy_hp
from sc2_envs.sim.rng import eval_seed

try:
    from sc2_envs.stats import wilson_interval
except ImportError:  # the shared helper landed after this file; same formula (Wilson 1927)

    def wilson_interval(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
        """Wilson score interval of ``wins / n`` (Wilson, JASA 22, 1927)."""
        if n < 1 or not 0 <= wins <= n:
            raise ValueError(f"wilson_interval needs 0 <= wins <= n and n >= 1; got wins={wins!r}, n={n!r}")
        p = wins / n
        den = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / den
        half = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return max(0.0, centre - half), min(1.0, centre + half)


@torch.no_grad()
def evaluate_policy(policy, env, n_episodes: int, seed: int = 10_000, greedy: bool = False) -> dict:
    """Play ``policy`` (``models.ClassPolicy``) for ``n_episodes`` and measure its behaviour.

    Every env of ``env`` (``autoreset=True``) contributes its first ``ceil(n_episodes / B)`` episodes
    (a fixed quota per env, so short episodes are not favoured); steps of an env past its quota are
    not counted.

    Args:
        policy: a bound ``ClassPolicy``.
        env: batched simulator.
        n_episodes: episodes (``>= 1``).
        seed: evaluation seed: ``env.reset(seed=eval_seed(seed))``, streams disjoint from training's.
        greedy: argmax actions; default samples from the policy (as a cloned policy plays).

    Returns:
        dict: ``episodes``, ``wins``, ``win_rate``, ``win_ci`` (Wilson 95%), ``idle_share`` (stop among
        living agent-steps), ``action_shares`` (list over actions, living agent-steps),
        ``damage_per_episode`` (absolute HP), ``return_mean``, ``length_mean`` (env steps).
    """
    if n_episodes < 1:
        raise ValueError(f"n_episodes={n_episodes!r}; expected >= 1")
    B, A = env.num_envs, env.n_actions
    info = env.get_env_info()
    N = env.n_agents
    max_h, max_s = env.table.max_health[N:], env.table.max_shield[N:]
    per_env = math.ceil(n_episodes / B)
    out = env.reset(seed=eval_seed(seed))
    dev = env.device
    count = torch.zeros(B, dtype=torch.int64, device=dev)
    wins = torch.zeros((), device=dev)
    ret = torch.zeros(B, device=dev)
    dmg = torch.zeros(B, device=dev)
    length = torch.zeros(B, device=dev)
    tot_ret = torch.zeros((), device=dev)
    tot_dmg = torch.zeros((), device=dev)
    tot_len = torch.zeros((), device=dev)
    act_counts = torch.zeros(A, device=dev)
    while bool((count < per_env).any()):
        active = count < per_env
        avail = out["avail_actions"]
        actions, _ = policy.act(out["obs"], avail, greedy=greedy)
        alive = avail[..., 1] & active.unsqueeze(1)
        act_counts += torch.bincount(actions[alive], minlength=A).float()
        before = enemy_hp(out["state"], info, max_h, max_s)
        out = env.step(actions)
        dmg += (before - enemy_hp(out["final_state"], info, max_h, max_s)).clamp(min=0)
        ret += out["reward"]
        length += 1
        done = out["terminated"] | out["truncated"]
        take = done & active
        wins += (take & out["battle_won"]).float().sum()
        tot_ret += ret[take].sum()
        tot_dmg += dmg[take].sum()
        tot_len += length[take].sum()
        count += take.long()
        ret = torch.where(done, 0.0, ret)
        dmg = torch.where(done, 0.0, dmg)
        length = torch.where(done, 0.0, length)
    n = int(count.sum())
    w = int(wins)
    shares = (act_counts / act_counts.sum().clamp(min=1)).tolist()
    return {
        "episodes": n,
        "wins": w,
        "win_rate": w / n,
        "win_ci": wilson_interval(w, n),
        "idle_share": shares[STOP],
        "action_shares": shares,
        "damage_per_episode": float(tot_dmg) / n,
        "return_mean": float(tot_ret) / n,
        "length_mean": float(tot_len) / n,
    }


def evaluate_checkpoint(
    path: str,
    map_name: str | None = None,
    episodes: int = 64,
    num_envs: int = 32,
    seed: int = 10_000,
    greedy: bool = False,
    device: str = "cpu",
) -> dict:
    """Load a ``models`` checkpoint (``models.load_checkpoint``) and ``evaluate_policy`` it on ``map_name``
    (default: the map it was trained on)."""
    import sc2_envs
    from models import load_checkpoint

    meta = torch.load(path, map_location="cpu", weights_only=True)
    map_name = map_name or meta["config"]["map_name"]
    env = sc2_envs.make_batched(map_name, num_envs=num_envs, device=device, seed=seed, autoreset=True)
    policy, _, _ = load_checkpoint(path, env.get_env_info(), device=device, with_critic=False)
    policy.eval()
    return evaluate_policy(policy, env, episodes, seed=seed, greedy=greedy)


def behaviour_key(r: dict) -> tuple:
    """Sort key of behaviour selection (larger is better): win rate, then less idling, then more damage."""
    return (r["win_rate"], -r["idle_share"], r["damage_per_episode"])


def format_result(name: str, r: dict) -> str:
    """One table line of an ``evaluate_policy`` result."""
    lo, hi = r["win_ci"]
    return (
        f"{name}: win {r['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] ({r['wins']}/{r['episodes']}), idle {r['idle_share']:.3f}, "
        f"damage/ep {r['damage_per_episode']:.1f}, return {r['return_mean']:.2f}, length {r['length_mean']:.1f}"
    )


def _weights_part(ckpt: dict) -> list[str]:
    """Keys of a checkpoint dict that hold state dicts (SMAC ``actors``/``critic``; AlphaStar ``model``)."""
    return [k for k in ("actors", "critic", "model") if k in ckpt]


def average_checkpoints(paths: list[str], out: str | None = None) -> dict:
    """Element-wise mean of the floating-point tensors of checkpoints of one run.

    Args:
        paths: two or more checkpoint files of the same format and configuration (``models`` SMAC
            checkpoints or ``models.alphastar`` checkpoints).
        out: write the averaged checkpoint here (None: only return it). It keeps the first file's
            metadata and records ``averaged_from``.

    Returns:
        the averaged checkpoint dict.

    Raises:
        ValueError: fewer than two paths, different formats or configs, different tensor names or
            shapes, or a non-float tensor (e.g. a counter buffer) that differs between the files.
    """
    if len(paths) < 2:
        raise ValueError(f"average_checkpoints needs at least two checkpoints, got {len(paths)}: {paths}")
    ckpts = [torch.load(p, map_location="cpu", weights_only=True) for p in paths]
    first = ckpts[0]
    for p, c in zip(paths[1:], ckpts[1:]):
        if c.get("format") != first.get("format"):
            raise ValueError(f"{p} has format {c.get('format')!r}, {paths[0]} has {first.get('format')!r}")
        if c.get("config") != first.get("config"):
            diff = sorted(k for k in set(c["config"]) | set(first["config"]) if c["config"].get(k) != first["config"].get(k))
            raise ValueError(f"{p} and {paths[0]} have different configs (keys {diff}); average only checkpoints of one run")
    parts = _weights_part(first)
    if not parts:
        raise ValueError(f"{paths[0]} holds no state dict (expected 'actors'/'critic' or 'model')")
    avg = dict(first)
    for part in parts:
        sds = [c[part] for c in ckpts]
        for p, sd in zip(paths[1:], sds[1:]):
            if set(sd) != set(sds[0]):
                raise ValueError(f"{p}[{part!r}] has tensors {sorted(set(sd) ^ set(sds[0]))} that {paths[0]} lacks or has")
            for k, v in sd.items():
                if v.shape != sds[0][k].shape:
                    raise ValueError(
                        f"{p}[{part!r}][{k!r}] has shape {tuple(v.shape)}; {paths[0]} has {tuple(sds[0][k].shape)}"
                    )
        merged = {}
        for k, v in sds[0].items():
            if v.is_floating_point():
                merged[k] = torch.stack([sd[k].float() for sd in sds]).mean(0).to(v.dtype)
            else:
                for p, sd in zip(paths[1:], sds[1:]):
                    if not torch.equal(sd[k], v):
                        raise ValueError(f"non-float tensor {part}.{k} differs between {paths[0]} and {p}; cannot average")
                merged[k] = v
        avg[part] = merged
    avg["averaged_from"] = [str(p) for p in paths]
    if out is not None:
        torch.save(avg, out)
    return avg


@dataclass
class Eval:
    """Evaluate checkpoints on the simulator (one line each)."""

    checkpoints: tyro.conf.Positional[list[str]] = field(default_factory=list)
    """checkpoint files (``models`` format: HAPPO or BC on SMAC maps)"""
    map: str | None = None
    """map to play (default: the checkpoint's)"""
    episodes: int = 64
    """episodes per checkpoint"""
    num_envs: int = 32
    """parallel envs"""
    seed: int = 10_000
    """reset seed (the same for every checkpoint)"""
    greedy: bool = False
    """argmax actions instead of sampling"""


@dataclass
class Average:
    """Average checkpoints of one run."""

    checkpoints: tyro.conf.Positional[list[str]] = field(default_factory=list)
    """two or more checkpoint files"""
    out: str = "averaged.pt"
    """output file"""


def main() -> None:
    cmd = tyro.extras.subcommand_cli_from_dict({"eval": Eval, "average": Average})
    if isinstance(cmd, Average):
        average_checkpoints(cmd.checkpoints, cmd.out)
        print(f"wrote {cmd.out} = mean of {cmd.checkpoints}")
        return
    torch.set_num_threads(1)
    for p in cmd.checkpoints:
        r = evaluate_checkpoint(p, cmd.map, cmd.episodes, cmd.num_envs, cmd.seed, cmd.greedy)
        print(format_result(p, r), flush=True)


if __name__ == "__main__":
    main()
