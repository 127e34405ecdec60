"""Record demonstrations on SMAC maps of the batched simulator (for behaviour cloning).

A demonstrator (any callable ``out -> actions``: SMAC's heuristic, a trained policy) plays
``B`` environments of ``sc2_envs.make_batched``; every env step of every recorded episode becomes
one row of an ``.npz`` shard. Besides the actions the simulator *executed*, each row holds the
*label* a dataset derived from replays would give that frame, so the no-op distortion of
replay-derived behaviour-cloning data can be reproduced on a map where behaviour is measurable.

Label model (``SamplingConfig``), reproducing what fixed-stride sampling of a replay does:

* A replay records *commands*, not states: a unit keeps its order until a new command comes, and
  a frame without a command is labelled ``no_op`` (docs/full_game.md, "every_k" sampling; in the
  mini-AlphaStar Simple64 set 81% of fixed-stride frames are ``no_op``, as measured by
  ``benchmarks/replay_action_stats.py``).
* ``stride = k``: the demonstrator issues commands only every ``k`` env steps (``t % k == 0``,
  ``t`` = env steps since the episode start) and holds its last command in between (the simulator
  re-executes it, as SC2 would keep the order). Frames between decisions are labelled *idle*.
  When a held command becomes unavailable (target dead or out of range), the unit's order has
  ended, so the demonstrator decides again at that frame (``forced_decision``) -- a player reacts.
* ``repeat_as_idle``: a decision equal to the command the agent already holds is no new command
  in a replay, so it is labelled idle too (SMAC's heuristic re-issues the same attack every step).
* *Idle* is SMAC's stop (action 1) for a living agent and no-op (action 0) for a dead one: SMAC
  makes no-op available only to dead agents, so stop is the living agent's "do nothing" label
  that is always in ``avail_actions``.

``stride = 1`` and ``repeat_as_idle = False`` give clean labels (label == executed action).

On-disk layout of ``out_dir`` (``record_demos``):

``meta.json``
    ``format`` ("sc2_envs.demos/1"), map name, ``env_info`` (``SMACSim.get_env_info()``), the
    ``SamplingConfig``, demonstrator description, seed, episode count, win count, per-shard rows
    and episodes, label and executed-action counts over living agents.
``shard_00000.npz`` ... (``np.savez_compressed``; T rows = env steps, whole episodes per shard,
episodes contiguous and in step order)

================== ================ =======================================================
array              shape, dtype     meaning
================== ================ =======================================================
obs                (T, N, O) f32    SMAC observation before the step
state              (T, S) f32       SMAC global state before the step
avail_actions      (T, N, A) bool   SMAC available actions before the step
actions            (T, N) int16     label (see the label model)
executed_actions   (T, N) int16     action the simulator executed
decision           (T, N) bool      the demonstrator issued a command at this frame
reward             (T,) f32         SMAC reward of the step (scaled, as the env returns it)
terminated         (T,) bool        the episode ended in this step (won, lost or drawn)
truncated          (T,) bool        the episode hit its time limit in this step
battle_won         (T,) bool        the battle was won in this step
damage_dealt       (T,) f32         enemy health + shield lost in this step (absolute HP)
episode            (T,) int32       episode id (0-based, unique over the recording)
t                  (T,) int32       env steps since the episode start
================== ================ =======================================================

The episode of ``episode == e`` ends at its last row (``terminated | truncated``). Env ``b`` records
its first ``q_b = n // B (+1 for b < n % B)`` episodes (``sc2_envs.training.evaluation.episode_quota``: a
fixed quota per env, so short episodes are not over-represented, and ``n`` episodes in total);
steps of an env after its quota are not recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from sc2_envs.smac_actions import NO_OP, STOP, alive_mask
from sc2_envs.training.evaluation import enemy_hp, enemy_maxima, episode_quota

FORMAT = "sc2_envs.demos/1"

ARRAY_KEYS = (
    "obs",
    "state",
    "avail_actions",
    "actions",
    "executed_actions",
    "decision",
    "reward",
    "terminated",
    "truncated",
    "battle_won",
    "damage_dealt",
    "episode",
    "t",
)


@dataclass(frozen=True)
class SamplingConfig:
    """How labels are derived from the demonstrator's commands (see the module docstring).

    Attributes:
        stride: env steps between the demonstrator's decisions (``>= 1``; 1 env step = 8 game loops).
        repeat_as_idle: label a decision that repeats the held command as idle (stop / no-op).
    """

    stride: int = 1
    repeat_as_idle: bool = False

    def __post_init__(self):
        if not isinstance(self.stride, int) or isinstance(self.stride, bool) or self.stride < 1:
            raise ValueError(f"stride={self.stride!r}; expected a positive int number of env steps")


def heuristic_demonstrator(env) -> Callable[[dict], torch.Tensor]:
    """SMAC's heuristic (``sc2_envs.policies.HeuristicPolicy``) as a demonstrator ``out -> [B, N]`` actions."""
    from sc2_envs.policies import HeuristicPolicy

    pol = HeuristicPolicy(env)
    return lambda out: pol(out["avail_actions"])


def policy_demonstrator(policy, greedy: bool = True) -> Callable[[dict], torch.Tensor]:
    """A trained policy as a demonstrator ``out -> [B, N]`` int64 actions.

    Args:
        policy: any object with ``act(obs [B, N, O], avail [B, N, A] bool, greedy) -> (actions, logprobs)``
            bound to the env it will act in, e.g. ``models.load_checkpoint(path, env.get_env_info())[0]``; or a
            recurrent policy (``policy.recurrent``, ``models.ClassPolicy.act_recurrent``), whose hidden state
            the demonstrator carries from call to call: it must see every env step of an autoreset env, from
            the reset's ``out`` on (an episode starts there and after every ``terminated`` or ``truncated``).
        greedy: argmax actions instead of samples.
    """
    if not getattr(policy, "recurrent", False):

        @torch.no_grad()
        def act(out):
            return policy.act(out["obs"], out["avail_actions"], greedy=greedy)[0]

        return act
    memory = {}

    @torch.no_grad()
    def act_recurrent(out):
        obs = out["obs"]
        if "terminated" in out:  # a step's out: an episode starts where the last one ended (autoreset)
            start = out["terminated"] | out["truncated"]
        else:  # a reset's out: every env starts one
            start = torch.ones(obs.shape[0], dtype=torch.bool, device=obs.device)
        hidden = memory["hidden"] if "hidden" in memory else policy.initial_hidden(obs.shape[0])
        actions, _, memory["hidden"] = policy.act_recurrent(obs, out["avail_actions"], hidden, start, greedy=greedy)
        return actions

    return act_recurrent


@dataclass
class DemoSummary:
    """What ``record_demos`` wrote.

    Attributes:
        episodes, wins: recorded episodes and won battles among them.
        rows: env-step rows written; shards: shard files.
        label_counts, executed_counts: ``[A]`` counts over living agent-frames.
        idle_label_share: share of living agent-frames labelled stop.
    """

    episodes: int
    wins: int
    rows: int
    shards: int
    label_counts: list
    executed_counts: list
    idle_label_share: float

    def report(self) -> str:
        """One line per figure."""
        return (
            f"episodes {self.episodes}, wins {self.wins} ({self.wins / max(self.episodes, 1):.3f}), rows {self.rows}, "
            f"shards {self.shards}\nlabel counts (living agents) {self.label_counts}\n"
            f"executed counts (living agents) {self.executed_counts}\nidle (stop) label share {self.idle_label_share:.3f}"
        )


def decide_labels(
    proposal: torch.Tensor,
    held: torch.Tensor,
    steps: torch.Tensor,
    avail: torch.Tensor,
    sampling: SamplingConfig,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One env step of the label model (module docstring): what runs, and what a replay would record.

    Args:
        proposal: ``[B, N]`` int64, the demonstrator's action this step.
        held: ``[B, N]`` int64, the command each agent holds (-1: none since its episode began).
        steps: ``[B]`` int64, env steps since each episode began.
        avail: ``[B, N, A]`` bool ``avail_actions``.
        sampling: the label model.

    Returns:
        ``(executed, label, command)``, each ``[B, N]``: the int64 action the simulator runs (the
        proposal at a decision frame, else the held command while it stays available, else idle), the
        int64 label a replay would give the frame, and the bool mask of frames that carry a new command.

    Raises:
        ValueError: an executed action that is not in ``avail_actions`` (names env, agent and the mask).
    """
    B, N = proposal.shape
    alive = alive_mask(avail)
    held_ok = (held >= 0) & torch.gather(avail, 2, held.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    scheduled = (steps % sampling.stride == 0).unsqueeze(1).expand(B, N)
    decision = (scheduled | ~held_ok) & alive
    idle = torch.where(alive, STOP, NO_OP)
    executed = torch.where(decision, proposal, torch.where(held_ok & alive, held, idle))
    ok = torch.gather(avail, 2, executed.unsqueeze(-1)).squeeze(-1)
    if not bool(ok.all()):
        b, n = (int(i) for i in (~ok).nonzero()[0])
        raise ValueError(
            f"demonstrator chose unavailable action {int(executed[b, n])} for env {b}, agent {n}; "
            f"avail_actions={avail[b, n].int().tolist()}"
        )
    command = decision & ~(sampling.repeat_as_idle & (proposal == held))
    return executed, torch.where(command, executed, idle), command


class _ShardWriter:
    """Collects finished episodes and writes them as ``shard_<NNNNN>.npz`` files of whole episodes."""

    def __init__(self, out: Path, episodes_per_shard: int):
        self.out, self.episodes_per_shard = out, episodes_per_shard
        self.pending: list[dict] = []  # finished episodes (dicts of stacked arrays) not yet written
        self.shards: list[dict] = []  # meta.json's per-shard entries
        self.rows = 0

    def add(self, episode: dict) -> None:
        self.pending.append(episode)
        if len(self.pending) >= self.episodes_per_shard:
            self.flush()

    def flush(self) -> None:
        """Write every pending episode (a final shard may hold fewer than ``episodes_per_shard``)."""
        while self.pending:
            chunk, self.pending = self.pending[: self.episodes_per_shard], self.pending[self.episodes_per_shard :]
            merged = {k: np.concatenate([c[k] for c in chunk]) for k in ARRAY_KEYS}
            name = f"shard_{len(self.shards):05d}.npz"
            np.savez_compressed(self.out / name, **merged)
            self.shards.append({"file": name, "rows": len(merged["t"]), "episodes": len(chunk)})
            self.rows += len(merged["t"])


def _check_recording_target(env, n_episodes: int, episodes_per_shard: int, out_dir: str | Path) -> Path:
    if n_episodes < 1 or episodes_per_shard < 1:
        raise ValueError(f"n_episodes={n_episodes!r} and episodes_per_shard={episodes_per_shard!r} must be >= 1")
    if not getattr(env, "autoreset", False):
        raise ValueError("record_demos needs an env built with autoreset=True")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "meta.json").exists() or any(out.glob("shard_*.npz")):
        raise ValueError(f"{out} already holds a recording (meta.json / shard_*.npz); choose an empty folder")
    return out


@torch.no_grad()
def record_demos(
    env,
    demonstrator: Callable[[dict], torch.Tensor],
    n_episodes: int,
    out_dir: str | Path,
    sampling: SamplingConfig = SamplingConfig(),
    seed: int = 0,
    episodes_per_shard: int = 200,
    description: str = "",
    log=print,
) -> DemoSummary:
    """Roll out ``demonstrator`` in ``env`` and write ``n_episodes`` episodes as npz shards.

    Args:
        env: a batched simulator with ``autoreset=True`` (``sc2_envs.make_batched``).
        demonstrator: ``out -> actions [B, N] int64``; ``out`` is the dict of ``env.reset``/``env.step``
            (``obs``, ``state``, ``avail_actions``). It is called every env step (stateful policies such
            as the heuristic keep their bookkeeping), but its output is used only at decision frames.
        n_episodes: episodes to record (``>= 1``); env ``b`` records its first ``q_b`` (``episode_quota``).
        out_dir: output folder (created; existing shards of an earlier recording are an error).
        sampling: label model.
        seed: ``env.reset(seed)`` (env ``b`` gets child ``b`` of ``SeedSequence(seed)``; see ``sim.rng``).
        episodes_per_shard: episodes per npz file.
        description: stored in ``meta.json`` (e.g. "heuristic").
        log: called with the final report.

    Returns:
        ``DemoSummary``.

    Raises:
        ValueError: ``n_episodes`` or ``episodes_per_shard`` < 1, ``env.autoreset`` off, an existing
            recording in ``out_dir``, or a demonstrator action that is unavailable.
    """
    out = _check_recording_target(env, n_episodes, episodes_per_shard, out_dir)
    B, N, A = env.num_envs, env.n_agents, env.n_actions
    info = env.get_env_info()
    dev = env.device
    quota = episode_quota(n_episodes, B, dev)

    o = env.reset(seed=seed)
    held = torch.full((B, N), -1, dtype=torch.int64, device=dev)
    steps = torch.zeros(B, dtype=torch.int64, device=dev)
    done_count = torch.zeros(B, dtype=torch.int64, device=dev)
    buffers: list[list[dict]] = [[] for _ in range(B)]  # current episode rows per env (numpy)
    writer = _ShardWriter(out, episodes_per_shard)
    label_counts = np.zeros(A, np.int64)
    exec_counts = np.zeros(A, np.int64)
    wins, ep_id = 0, 0
    while bool((done_count < quota).any()):
        avail = o["avail_actions"]
        executed, label, command = decide_labels(demonstrator(o).to(dev, torch.int64), held, steps, avail, sampling)
        max_h, max_s = enemy_maxima(env)  # this episode's roster (SMACv2 redraws it at each reset)
        hp_before = enemy_hp(o["state"], info, max_h, max_s)
        nxt = env.step(executed)
        damage = (hp_before - enemy_hp(nxt["final_state"], info, max_h, max_s)).clamp(min=0)
        ended = nxt["terminated"] | nxt["truncated"]
        cpu = {
            "obs": o["obs"].cpu().numpy(),
            "state": o["state"].cpu().numpy(),
            "avail_actions": avail.cpu().numpy(),
            "actions": label.to(torch.int16).cpu().numpy(),
            "executed_actions": executed.to(torch.int16).cpu().numpy(),
            "decision": command.cpu().numpy(),
            "reward": nxt["reward"].cpu().numpy(),
            "terminated": nxt["terminated"].cpu().numpy(),
            "truncated": nxt["truncated"].cpu().numpy(),
            "battle_won": nxt["battle_won"].cpu().numpy(),
            "damage_dealt": damage.cpu().numpy(),
            "t": steps.to(torch.int32).cpu().numpy(),
        }
        alive_np, ended_np = alive_mask(avail).cpu().numpy(), ended.cpu().numpy()
        for b in np.flatnonzero((done_count < quota).cpu().numpy()):
            buffers[b].append({k: v[b] for k, v in cpu.items()})
            np.add.at(label_counts, cpu["actions"][b][alive_np[b]], 1)
            np.add.at(exec_counts, cpu["executed_actions"][b][alive_np[b]], 1)
            if ended_np[b]:
                ep = {k: np.stack([r[k] for r in buffers[b]]) for k in buffers[b][0]}
                ep["episode"] = np.full(len(buffers[b]), ep_id, np.int32)
                ep_id += 1
                wins += int(ep["battle_won"][-1])
                writer.add(ep)
                buffers[b] = []
        held = torch.where(ended.unsqueeze(1), torch.full_like(held, -1), executed)
        steps = torch.where(ended, torch.zeros_like(steps), steps + 1)
        done_count += ended.long()
        o = nxt
    writer.flush()
    summary = DemoSummary(
        episodes=ep_id,
        wins=wins,
        rows=writer.rows,
        shards=len(writer.shards),
        label_counts=label_counts.tolist(),
        executed_counts=exec_counts.tolist(),
        idle_label_share=float(label_counts[STOP] / max(int(label_counts.sum()), 1)),
    )
    meta = {
        "format": FORMAT,
        "map_name": env.map_name,
        "env_info": info,
        "sampling": asdict(sampling),
        "demonstrator": description,
        "seed": seed,
        "num_envs": B,
        "episodes": ep_id,
        "wins": wins,
        "rows": writer.rows,
        "shards": writer.shards,
        "label_counts": summary.label_counts,
        "executed_counts": summary.executed_counts,
        "idle_label_share": summary.idle_label_share,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    log(summary.report())
    return summary


@dataclass
class DemoDataset:
    """A loaded recording: the concatenated arrays of the chosen shards plus their provenance.

    Attributes:
        arrays: ``ARRAY_KEYS`` -> concatenated arrays (shapes as in the module docstring).
        meta: ``meta.json``.
        files: ``[(shard path, rows, episodes)]`` actually loaded.
    """

    arrays: dict
    meta: dict
    files: list

    @property
    def rows(self) -> int:
        return len(self.arrays["t"])

    @property
    def episodes(self) -> int:
        return len(np.unique(self.arrays["episode"]))

    def describe(self) -> str:
        """Files, rows and episodes per file, totals, and the label model (for the first screen of a run)."""
        lines = [
            (
                f"demonstrations: {self.meta['map_name']}, demonstrator {self.meta.get('demonstrator')!r}, "
                f"sampling {self.meta['sampling']}"
            )
        ]
        for path, rows, eps in self.files:
            lines.append(f"  {path}: {rows} frames, {eps} episodes")
        lines.append(
            f"  total: {len(self.files)} files, {self.rows} frames, {self.episodes} episodes "
            f"(recording holds {self.meta['rows']} frames, {self.meta['episodes']} episodes)"
        )
        return "\n".join(lines)


def load_demos(path: str | Path, max_files: int | None = None) -> DemoDataset:
    """Load a recording written by ``record_demos``.

    Args:
        path: the recording folder.
        max_files: load only the first shards (None: all). The caller must show ``describe()``.

    Raises:
        FileNotFoundError: no ``meta.json`` or a shard listed there is missing.
        ValueError: unknown format.
    """
    root = Path(path)
    meta_path = root / "meta.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{root} has no meta.json; expected a folder written by sc2_envs.training.demos.record_demos")
    meta = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{meta_path}: format {meta.get('format')!r}; expected {FORMAT!r}")
    shards = meta["shards"] if max_files is None else meta["shards"][:max_files]
    parts, files = [], []
    for s in shards:
        p = root / s["file"]
        if not p.exists():
            raise FileNotFoundError(f"shard {p} listed in meta.json is missing")
        with np.load(p) as z:
            parts.append({k: z[k] for k in ARRAY_KEYS})
        files.append((str(p), s["rows"], s["episodes"]))
    if not parts:
        raise ValueError(f"{root}: no shards selected (max_files={max_files!r}, recording has {len(meta['shards'])})")
    arrays = {k: np.concatenate([q[k] for q in parts]) for k in ARRAY_KEYS}
    return DemoDataset(arrays=arrays, meta=meta, files=files)


def main(argv=None) -> int:
    """``python -m sc2_envs.training.demos --map 3m --episodes 200 --out demos/3m_k4 --stride 4 --repeat-as-idle``."""
    import argparse

    import sc2_envs

    p = argparse.ArgumentParser(
        prog="python -m sc2_envs.training.demos", description="Record SMAC demonstrations (npz shards)."
    )
    p.add_argument("--map", default="3m")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--num-envs", type=int, default=32)
    p.add_argument("--out", required=True)
    p.add_argument(
        "--policy",
        default="heuristic",
        choices=["heuristic"],
        help="SMAC's heuristic; a checkpoint records with: python algos/bc_select.py record CKPT --out DIR",
    )
    p.add_argument("--stride", type=int, default=1, help="env steps between the demonstrator's decisions")
    p.add_argument("--repeat-as-idle", action="store_true", help="label repeated commands as idle (stop)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--episodes-per-shard", type=int, default=200)
    a = p.parse_args(argv)
    env = sc2_envs.make_batched(a.map, num_envs=a.num_envs, seed=a.seed, autoreset=True)
    print(
        f"demos: {a.episodes} episodes of {a.map} by the {a.policy} demonstrator | {a.num_envs} envs, device "
        f"{env.device}, seed {a.seed} | stride {a.stride} env steps, repeat-as-idle {a.repeat_as_idle} | "
        f"{a.episodes_per_shard} episodes per shard -> {a.out}",
        flush=True,
    )
    demo = heuristic_demonstrator(env)
    record_demos(
        env,
        demo,
        a.episodes,
        a.out,
        SamplingConfig(a.stride, a.repeat_as_idle),
        seed=a.seed,
        episodes_per_shard=a.episodes_per_shard,
        description=a.policy,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
