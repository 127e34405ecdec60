"""Would running the GNN actor's per-token layers on visible tokens only speed up training? Measured.

A class actor (``models.gnn.GNNActor``) runs its encoders, attention projections and feed-forward on
every entity token, including masked ones (allies and enemies that are dead or out of sight), whose
outputs reach no available action. The alternative measured here packs the visible tokens, runs
those layers on them only and scatters them back around the attention itself; the logits of
available actions are the same (checked below). Observations come from real 2s3z battles played
by the shipped checkpoint (its class actors and their masks, so the visible share is what training
sees), cut into passes of ``--rows`` agent-steps as the training script's update does. Dense and
packed forward + backward passes alternate for ``--rounds`` rounds; the medians and their ratio are
printed::

    python benchmarks/gnn_token_packing.py --rows 1024 --threads 1 --rounds 5
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
import tyro

import sc2_envs
from models import load_checkpoint
from models.entities import N_ACTIONS_NO_ATTACK
from models.gnn import GNNActor, masked_mean_pool
from sc2_envs.runs import plural

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Args:
    checkpoint: str = "checkpoints/2s3z_gnn.pt"
    """the policy that plays the battles (its map, its class actors); a relative path not found from the
    current folder is read from the repository's root"""
    rows: int = 1024
    """agent-steps per forward + backward pass (the training script's ``--pass-rows`` default)"""
    threads: int = 1
    """torch threads"""
    rounds: int = 5
    """dense / packed alternations; medians are printed"""
    reps: int = 10
    """passes per timing window"""
    seed: int = 0


def _scatter(packed: torch.Tensor, idx: torch.Tensor, n: int) -> torch.Tensor:
    return packed.new_zeros(n, packed.shape[-1]).index_copy(0, idx, packed)


def packed_forward(actor: GNNActor, ent) -> torch.Tensor:
    """``actor(ent)`` with every per-token layer run on the visible tokens only (non-healer actors).

    The masked tokens are zero rows around the attention (they are masked keys there) and after it;
    their logits differ from the dense forward, and are those of unavailable actions.
    """
    R, Na = ent.own.shape[0], ent.allies.shape[-2]

    def encode(mlp, x, m):
        i = m.reshape(-1).nonzero().squeeze(1)
        return _scatter(mlp(x.reshape(-1, x.shape[-1]).index_select(0, i)), i, m.numel()).reshape(*m.shape, -1)

    tokens = torch.cat(
        [
            actor.own_enc(ent.own).unsqueeze(1),
            encode(actor.ally_enc, ent.allies, ent.ally_mask),
            encode(actor.enemy_enc, ent.enemies, ent.enemy_mask),
        ],
        1,
    )
    valid = torch.cat([torch.ones(R, 1, dtype=torch.bool), ent.ally_mask, ent.enemy_mask], 1)
    T, H = tokens.shape[1], tokens.shape[2]
    idx = valid.reshape(-1).nonzero().squeeze(1)
    for b in actor.blocks:
        xp = tokens.reshape(-1, H).index_select(0, idx)
        qkv = _scatter(b.qkv(b.ln1(xp)), idx, R * T).reshape(R, T, 3 * H)
        q, k, v = (t.reshape(R, T, b.heads, H // b.heads).transpose(1, 2) for t in qkv.chunk(3, -1))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=valid[:, None, None, :])
        xp = xp + b.proj(a.transpose(1, 2).reshape(R * T, H).index_select(0, idx))
        xp = xp + b.ff(b.ln2(xp))
        tokens = _scatter(xp, idx, R * T).reshape(R, T, H)
    tokens = actor.ln(tokens)
    z = actor.readout(torch.cat([tokens[:, 0], masked_mean_pool(tokens, valid)], -1))
    pair = torch.relu(actor.pair_agent(z).unsqueeze(1) + actor.pair_entity(tokens[:, 1 + Na :]))
    return torch.cat([actor.non_target_head(z), actor.pair_out(pair).squeeze(-1)], -1)


def battle_rows(args: Args) -> tuple[str, GNNActor, torch.Tensor, torch.Tensor]:
    """Observations ``[rows, obs_size]`` and available actions of the living agents of the largest
    non-healer class, from 64 envs of the checkpoint's map played by the checkpoint (sampled actions)."""
    path = Path(args.checkpoint)
    if not path.is_absolute() and not path.is_file():
        path = REPO / path
    meta = torch.load(path, map_location="cpu", weights_only=True)["config"]
    env = sc2_envs.make_batched(meta["map_name"], num_envs=64, seed=args.seed, num_threads=args.threads)
    policy, _, _ = load_checkpoint(str(path), env.get_env_info(), with_critic=False)
    c = max((c for c in policy.class_agents if not policy.actors[c].healer), key=lambda c: len(policy.class_agents[c]))
    ids = torch.as_tensor(policy.class_agents[c])
    torch.manual_seed(args.seed)
    out, obs, avail = env.reset(), [], []
    while sum(len(o) for o in obs) < args.rows:
        o, a = out["obs"].index_select(1, ids), out["avail_actions"].index_select(1, ids)
        live = a[..., 0] == 0  # SMAC: no-op is available to dead agents only
        obs.append(o[live])
        avail.append(a[live])
        with torch.no_grad():
            actions, _ = policy.act(out["obs"], out["avail_actions"])
        out = env.step(actions)
    return c, policy, torch.cat(obs)[: args.rows], torch.cat(avail)[: args.rows]


def main(args: Args) -> None:
    for name in ("rows", "threads", "rounds", "reps"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name} {getattr(args, name)}: expected an integer >= 1")
    torch.set_num_threads(args.threads)
    c, policy, obs, avail = battle_rows(args)
    actor, ent = policy.actors[c], policy.parser(obs)
    valid = torch.cat([torch.ones(len(obs), 1, dtype=torch.bool), ent.ally_mask, ent.enemy_mask], 1)
    print(
        f"gnn_token_packing: {Path(args.checkpoint).name}, class {c}, {len(obs)} agent-steps per pass, "
        f"{valid.shape[1]} tokens each, {valid.float().mean():.3f} visible | {plural(args.threads, 'torch thread')}, "
        f"{plural(args.rounds, 'round')} x {plural(args.reps, 'pass', 'passes')}",
        flush=True,
    )
    n_targets = avail.shape[1] - N_ACTIONS_NO_ATTACK
    assert actor(ent).shape[1] == N_ACTIONS_NO_ATTACK + n_targets
    dense, packed = actor(ent), packed_forward(actor, ent)
    print(f"max |dense - packed| over available logits: {(dense - packed)[avail].abs().max().item():.2e}")

    def window(fn) -> float:
        t = time.perf_counter()
        for _ in range(args.reps):
            actor.zero_grad(set_to_none=True)
            fn(actor, ent).masked_fill(~avail, 0.0).square().sum().backward()
        return (time.perf_counter() - t) / args.reps * 1e3

    window(GNNActor.__call__), window(packed_forward)  # warm-up
    times: dict[str, list[float]] = {"dense": [], "packed": []}
    for _ in range(args.rounds):
        times["dense"].append(window(GNNActor.__call__))
        times["packed"].append(window(packed_forward))
    d, p = statistics.median(times["dense"]), statistics.median(times["packed"])
    print(f"forward + backward, median ms per pass: dense {d:.1f}, packed {p:.1f}; packed is {d / p:.2f}x the dense speed")


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    main(tyro.cli(flowing_help(Args)))
