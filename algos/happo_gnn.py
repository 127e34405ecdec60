# HAPPO (Kuba et al., ICLR 2022; HARL, JMLR 2024) with one count-invariant attention actor per unit class.
# Algorithm facts: PKU-MARL/HARL happo.py, v_critic.py, valuenorm.py, on_policy_ha_runner.py; style: CleanRL ppo.py.
"""Train HAPPO agents on a SMAC map of the embedded simulator.

    python algos/happo_gnn.py --map 2s3z
    python algos/happo_gnn.py --map 2s3z 3s5z --num-envs 256   # multi-map: one policy for both team sizes

Each iteration collects ``num_steps`` env steps from ``num_envs`` envs, computes GAE on the
centralized value (bootstrapping at time limits, not at battle ends), then updates the class actors
one after the other in a random order of classes. The agents of one class share an actor, so a
class is one "agent" of HAPPO's sequential scheme: its clipped surrogate is averaged over its alive
agents and weighted per env step by the factor ``M`` (the product of the new/old probability ratios
of the classes updated before it, detached); after its update ``M`` is multiplied by the ratios of
all of its agents. The critic is updated last. Dead agents (only no-op available) are masked out of
the advantage normalisation, the surrogate and the entropy. A class actor is only run on the agent-steps
that count (alive agents of its class; in SMACv2 scenarios, where any agent may be of any class, the
agents of that class at that step), gathered from the batch (``models.ClassPolicy.class_rows``), so the
sums are those of the masked form without its zero terms; the log-probs before a class's update are the
stored behaviour log-probs (its actor has not changed since the rollout; HARL evaluates them again).

Multi-map training (``--map A B ...``, maps whose entity widths agree, e.g. 2s3z + 3s5z or 3m + 8m):
``--num-envs`` is split evenly (it must be a multiple of the number of maps), each map runs its own
batched simulator and keeps its own rollout buffer, GAE and advantage normalisation (its alive
agents), since team sizes, obs/state widths and action counts differ. One actor per unit class
serves every map through per-map views sharing its weights (``models.ClassPolicy.view``); the
class's surrogate (and, in HATRPO, its KL and trust-region step) is one mean over the alive agents of
the class on all maps, the factor ``M`` is kept per map's env step, and the random class order is
drawn once per iteration over the union of the classes. The critic is one count-invariant,
class-factored GNN critic for all maps (``models.build_multi_map_models``): each map's states go
through that map's view only (never stacked with another map's), every minibatch holds the same
share of each map's batch, and the value loss is one mean over all of them. We chose it over one
critic head per map because it has one encoder per unit class whatever the team size, so each map's
data trains the weights that value every other map, the checkpoint's critic binds to any covered map
as the actors do, and there is one ``ValueNorm`` to keep (returns are on SMAC's common 0-20 scale);
a per-map head was not measured against it. The first lines printed give the maps, envs per map,
device and per-map sizes; TensorBoard has ``charts/episodic_return/<map>``,
``charts/train_win_rate/<map>``, ``charts/win_rate/<map>`` and ``charts/eval_return/<map>`` beside
the unsuffixed all-map tags (training: over all finished episodes; evaluation: the mean over the
maps of ``eval_episodes`` greedy episodes each), and ``eval.csv`` one ``win_rate/<map>`` and
``eval_return/<map>`` column per map. The checkpoints record every training map
(``config["train_maps"]``; ``models.checkpoint_maps``) and load on any map whose classes they cover
and whose entity widths match (``models.load_checkpoint``); the run folder is ``A+B__<exp_name>__...``.
With one map everything (outputs, checkpoint and resume format) is as before. ``charts/env_time_fraction`` (also in the progress line and the final line) is the share of
each iteration's wall time (rollout and update, evaluation excluded) spent in ``env.step``.

Zero-shot evaluation during training: ``--eval-maps 3s5z 3s5z_vs_3s6z`` (on a 2s3z run) plays those maps,
never trained on, with the same actors at every evaluation (``--eval-episodes`` greedy episodes each, on
streams disjoint from training and from the training maps' evaluations, ``runs.zero_shot_eval_seed``):
``charts/zero_shot_win_rate/<map>``, ``charts/zero_shot_eval_return/<map>`` and the eval.csv columns of the
same names. They show how transfer moves with the budget; they never pick ``<exp_name>_best.pt``.

Outnumbered battles (5m_vs_6m, 3s5z_vs_3s6z) are never seen when training on even maps. ``--ally-dropout P``
(one value, or one per ``--map``) starts each training episode with one ally, drawn uniformly, removed with
probability ``P`` (``SMACSim.remove_allies``: the unit starts dead, SMAC's layouts unchanged), so the actors
also play 7 against 8 on 8m (a draw that would leave only medivacs removes no one); evaluations never remove allies. ``--init-from <checkpoint.pt>`` starts from a
checkpoint's actor and critic weights (fresh optimisers, env steps from 0), e.g. to fine-tune a shipped
checkpoint with ``--ally-dropout`` (``checkpoints/README.md``, "Fine-tuned with ally dropout").

The first lines printed give the map, backend, envs, device, obs/state sizes, classes and parameter
counts; then a progress bar (on a terminal; otherwise one line per iteration) shows the mean
return of the training episodes finished so far (nothing before the first one), the last greedy win
rate and the env steps per second. Each run gets its own new folder ``runs/<run_name>/``
(``<map>__<exp_name>__<seed>__<unix time>``, with ``-2``, ``-3``, ... if taken; see
``sc2_envs.runs``): ``run_meta.json`` (full config, command line, git commit, package versions, and
``torch_threads_used``: the thread count in effect, torch's default with ``--torch-threads 0``),
TensorBoard events with CleanRL's tags plus ``charts/win_rate`` and per-class ``losses/*/<class>``,
``eval.csv`` (one row per evaluation of 32 greedy episodes) and, at every evaluation, the
checkpoints ``<exp_name>.pt`` (last) and ``<exp_name>_best.pt`` (best greedy win rate; see
``models.load_checkpoint``) and ``resume.pt``. Open them with ``tensorboard --logdir runs``.

Ctrl-C (SIGINT) or SIGTERM finishes the current iteration, evaluates, writes the checkpoints, closes
the logs, prints one line saying where everything is and exits with status 0; a second signal
aborts at once. ``--resume runs/<run_name>`` continues such a run in the same folder (optimisers,
learning-rate schedule, value normalisation, RNG states, the simulator's state and the counters),
so that its curves continue the old ones: stopped at an iteration boundary and resumed, a run ends
with the same parameters, bit for bit, as one that was never stopped. A stop between two scheduled
evaluations (``--eval-interval``) adds one evaluation at the stop: ``eval.csv`` and the TensorBoard
curves keep that extra point, and ``<exp_name>_best.pt`` is that evaluation's weights if it scored best
(the weights, ``<exp_name>.pt`` and every scheduled evaluation are unchanged). Reproducibility: on the
CPU, the same command and seed repeat every number bit for bit at the same torch thread count (recorded
as ``torch_threads_used`` in ``run_meta.json``); another thread count, ``--pass-rows`` or device rounds
the updates differently and the runs drift apart (the simulator itself gives the same battles at any
thread count).
"""

import csv
import os
import random
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
import tyro
from torch import nn
from torch.utils.tensorboard import SummaryWriter

from models import build_multi_map_models, describe_classes, save_checkpoint, zero_shot_views
from models.common import masked_mean
from sc2_envs import runs
from sc2_envs.evaluation import evaluate
from sc2_envs.sim.rng import eval_seed

ALGORITHM = os.path.basename(__file__)[: -len(".py")]  # recorded in every checkpoint (models.save_checkpoint)


@dataclass
class Args:
    exp_name: str = ALGORITHM
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment"""
    torch_deterministic: bool = True
    """if toggled, sets `torch.backends.cudnn.deterministic=True`"""
    cuda: bool = True
    """if toggled, cuda will be enabled when available (env and networks on the GPU)"""
    track: bool = False
    """if toggled, this experiment will be tracked with Weights and Biases"""
    wandb_project_name: str = "sc2-envs"
    """the wandb's project name"""
    wandb_entity: str | None = None
    """the entity (team) of wandb's project"""
    capture_video: bool = False
    """whether to save a GIF of one greedy evaluation episode per evaluation (videos/<run_name>/)"""
    save_model: bool = True
    """whether to save checkpoints at every evaluation: runs/<run_name>/<exp_name>.pt (last), <exp_name>_best.pt, resume.pt"""
    resume: str = ""
    """a run folder (or its resume.pt) to continue, in the same folder; only --total-timesteps, --time-budget-s, --torch-threads, --pass-rows, --cuda and --track may change
    (bit for bit as if never stopped with the run's own values; another --torch-threads, --pass-rows or device continues it equal up to float rounding only)"""

    # Algorithm specific arguments
    map: tuple[str, ...] = ("2s3z",)
    """the SMAC map or SMACv2 scenario (sc2_envs.list_maps("all")), or several (`--map 2s3z 3s5z`) for multi-map training: one set of class
    actors and one critic for all of them, --num-envs split evenly (one batched simulator per map)"""
    backend: str = "sim"
    """`sim` (embedded batched simulator) or `sc2` (real StarCraft II through SMAC; num_envs must be 1)"""
    actor: str = "gnn"
    """`gnn` (count-invariant attention actor per unit class) or `mlp` (baseline)"""
    total_timesteps: int = 2_000_000
    """total env steps (summed over the parallel envs)"""
    learning_rate: float = 5e-4
    """the learning rate of the actors"""
    critic_learning_rate: float = 5e-4
    """the learning rate of the critic"""
    num_envs: int = 256
    """the number of parallel environments"""
    num_steps: int = 40
    """the number of steps to run in each environment per policy rollout"""
    anneal_lr: bool = False
    """toggle learning rate annealing for the actors and the critic"""
    gamma: float = 0.99
    """the discount factor gamma"""
    gae_lambda: float = 0.95
    """the lambda for the general advantage estimation"""
    num_minibatches: int = 4
    """the number of mini-batches (of env steps) per epoch, for each class actor and the critic;
    it must divide num_envs x num_steps"""
    update_epochs: int = 5
    """the K epochs to update each class actor and the critic"""
    norm_adv: bool = True
    """toggles advantage normalisation (over the alive agents, as HARL)"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient (also clips the value update, as HARL)"""
    clip_vloss: bool = True
    """toggles whether or not to use a clipped loss for the value function"""
    ent_coef: float = 0.01
    """coefficient of the entropy (over available actions, alive agents)"""
    vf_coef: float = 1.0
    """coefficient of the value function loss"""
    huber_delta: float = 10.0
    """Huber loss delta of the value loss (HARL); 0 for squared error"""
    max_grad_norm: float = 10.0
    """the maximum norm for the gradient clipping"""
    target_kl: float | None = None
    """the target KL divergence threshold (per class, checked after each epoch)"""
    fixed_order: bool = False
    """update the classes in a fixed order instead of a random permutation per iteration"""
    hidden: int = 64
    """width of the networks"""
    actor_layers: int = 1
    """attention blocks in each GNN actor"""
    eval_episodes: int = 32
    """greedy evaluation episodes per evaluation (one per env of a separate eval simulator)"""
    eval_interval: int = 10
    """iterations between evaluations (plus one at the end)"""
    eval_maps: tuple[str, ...] = ()
    """maps never trained on, played zero-shot at every evaluation (`--eval-maps 3s5z 3s5z_vs_3s6z` on a 2s3z run):
    --eval-episodes greedy episodes each, logged as `charts/zero_shot_win_rate/<map>` and eval.csv columns; the actors
    must cover each map's unit classes; never used to pick `<exp_name>_best.pt`"""
    torch_threads: int = 0
    """torch CPU threads (0: torch's default, one per physical core); the simulator keeps this count"""
    pass_rows: int = 0
    """the most agent-steps (actors) or env steps (critic) in one forward/backward pass: a minibatch runs in
    passes with its gradient accumulated, the same update up to float rounding (0: 1024 on CPU, which bounds
    the memory of large minibatches, the whole minibatch on CUDA)"""
    time_budget_s: float = 0.0
    """stop training after this many wall-clock seconds of this process (0: no limit); the final evaluation still runs (an
    extra eval.csv row when the stop falls between scheduled evaluations)"""
    ally_dropout: tuple[float, ...] = (0.0,)
    """probability, in [0, 1), that a training episode starts with one of its allies (drawn uniformly) removed: one value
    for every --map or one per map (`--ally-dropout 0 0.5` on `--map 3m 8m`): team-size randomisation, so that the actors meet
    battles in which they are outnumbered (7 marines against 8) before zero-shot play on maps such as 5m_vs_6m
    (`SMACSim.remove_allies`; --backend sim). Evaluations never remove allies. 0: off"""
    init_from: str = ""
    """a checkpoint (`<exp_name>.pt` of this script or hatrpo_gnn.py) whose actor and critic weights start this run (fresh optimisers,
    env steps counted from 0): fine-tuning with another recipe, e.g. --ally-dropout; the classes, network sizes and
    critic must match this run's"""
    flush_denormal: bool = True
    """flush denormal floats to zero on the CPU (torch.set_flush_denormal): Adam's second-moment estimates of rarely-used
    weights decay into the denormal range, where sqrt and division run ~100x slower on x86"""

    # to be filled in runtime
    batch_size: int = 0
    """computed at runtime, do not set (refused): the batch size, --num-envs x --num-steps"""
    minibatch_size: int = 0
    """computed at runtime, do not set (refused): the mini-batch size in env steps, batch size / --num-minibatches"""
    num_iterations: int = 0
    """computed at runtime, do not set (refused): the iterations, --total-timesteps // batch size (a total below one batch is refused)"""


def make_env(backend: str, map_name: str, num_envs: int, device: torch.device, seed: int):
    """The batched env of the contract: the embedded simulator, or one real-SC2 env through SMAC."""
    if backend == "sim":
        import sc2_envs

        # the script's thread count (--torch-threads, set before), not the simulator's automatic one:
        # the update's matrix products run on every thread, and the env is a small share of the time
        return sc2_envs.make_batched(
            map_name, num_envs=num_envs, device=device, seed=seed, autoreset=True, num_threads=torch.get_num_threads()
        )
    if backend == "sc2":
        if num_envs != 1:
            raise ValueError(f"--backend sc2 runs one StarCraft II game: use --num-envs 1 (got {num_envs})")
        from sc2_envs.backends import make_sc2_backend

        return make_sc2_backend(map_name, seed=seed, device=device, autoreset=True)
    raise ValueError(f"--backend {backend!r}; expected 'sim' or 'sc2'")


def compute_gae(rewards, values, next_value, terminated, truncated, final_values, gamma, gae_lambda):
    """GAE over a rollout of ``T`` steps and ``B`` envs (all tensors ``[T, B]`` float, ``next_value [B]``).

    ``values`` are unnormalised ``V(s_t)``; ``next_value`` is ``V`` of the observation after the last
    step. Where an episode ends at step ``t`` the next value is not used: a termination (battle won,
    lost or drawn) has no future, while a truncation (time limit) bootstraps from the value of the
    final observation, ``final_values[t] = V(s_final)`` (HARL ``use_proper_time_limits``; CleanRL #198).
    Returns ``(advantages, returns)``, each ``[T, B]``.
    """
    T = rewards.shape[0]
    done = (terminated | truncated).float()
    rewards = rewards + gamma * final_values * (truncated & ~terminated).float()
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(next_value)
    for t in reversed(range(T)):
        nextvalues = next_value if t == T - 1 else values[t + 1]
        nextnonterminal = 1.0 - done[t]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
    return advantages, advantages + values


def happo_factor_update(factor, new_logprob, old_logprob, active):
    """HAPPO's ``M <- M * prod_{agents of the class} pi_new(a|o) / pi_old(a|o)`` (detached).

    ``factor [R]``, log-probs and ``active`` ``[R, n_c]``; dead agents (``active == 0``) contribute 1.
    """
    return (factor * torch.exp(((new_logprob - old_logprob) * active).sum(-1))).detach()


def happo_factor_update_rows(factor, new_logprob, old_logprob, flat, n_c):
    """:func:`happo_factor_update` from a class's gathered agent-steps (``models.ClassPolicy.class_rows``).

    ``factor [R]``; ``new_logprob``, ``old_logprob`` ``[P]`` of the class's active agent-steps;
    ``flat [P]`` their index ``row * n_c + position`` in the ``[R, n_c]`` block of the class. The
    log-ratios are put in that block (zeros elsewhere: the inactive agents contribute 1) and summed
    per env step, deterministically on every device (no atomic adds).
    """
    block = torch.zeros(factor.shape[0] * n_c, dtype=factor.dtype, device=factor.device)
    block[flat] = new_logprob - old_logprob
    return (factor * torch.exp(block.reshape(-1, n_c).sum(-1))).detach()


def split_rows_by_minibatch(rows, mb_inds, n_rows):
    """The gathered agent-steps of each minibatch of env steps.

    ``rows [P]`` int64: the env step of each agent-step; ``mb_inds``: the minibatches' env-step
    indices (one map's entries of :func:`minibatch_indices`, equal sizes, together a permutation of
    ``0..n_rows-1``). Returns one ``[P_j]`` int64 tensor of positions into ``rows`` per minibatch,
    in increasing order (so an agent-step is in minibatch ``j`` iff its env step is).
    """
    mb_of_row = torch.empty(n_rows, dtype=torch.int64, device=rows.device)
    mb_of_row[torch.cat(mb_inds)] = torch.arange(n_rows, device=rows.device) // mb_inds[0].numel()
    key = mb_of_row[rows]
    counts = torch.bincount(key, minlength=len(mb_inds)).tolist()
    return torch.argsort(key, stable=True).split(counts)


def happo_actor_loss(dist, actions, behaviour_logprob, advantages, factor, active, clip_coef):
    """HAPPO's clipped surrogate for one class, weighted by the factor M, over alive agents.

    ``dist``: the class's ``MaskedCategorical`` over ``[R, n_c]``; ``actions``, ``behaviour_logprob``,
    ``advantages``, ``active`` (1 alive, 0 dead): ``[R, n_c]``; ``factor [R]``. Returns
    ``(pg_loss, entropy, approx_kl, clipfrac)``; ``pg_loss = -mean_alive(M * min(r A, clip(r) A))``
    (HARL ``happo.py``; M >= 0, so this equals the paper's ``min(r M A, clip(r) M A)``).
    """
    return happo_actor_loss_maps([(dist, actions, behaviour_logprob, advantages, factor, active)], clip_coef)


def happo_actor_loss_maps(parts, clip_coef):
    """:func:`happo_actor_loss` of one class over the minibatch parts of several maps.

    ``parts``: one ``(dist, actions, behaviour_logprob, advantages, factor, active)`` tuple per map,
    shaped as in :func:`happo_actor_loss` with that map's ``R_k`` env steps and ``n_c,k`` agents of
    the class, or gathered agent-steps (``models.ClassPolicy.class_rows``): every tensor ``[P_k]``,
    ``factor`` then already per agent-step. Each map's tensors only meet its own (its dist is built from its own observations and
    avail masks); the means run over the alive agents of all parts together, so one agent-step
    weighs the same on every map, and with one part this is exactly :func:`happo_actor_loss`.
    """
    pg_sum, ent_sum, kl_sum, clip_sum, weight = happo_actor_loss_sums(parts, clip_coef)
    n = weight.clamp(min=1.0)  # masked_mean's denominator: 0 when every agent is dead
    return pg_sum / n, ent_sum / n, kl_sum / n, clip_sum / n


def happo_actor_loss_sums(parts, clip_coef):
    """The sums behind :func:`happo_actor_loss_maps`, so that a minibatch can run in several passes.

    ``parts`` as in :func:`happo_actor_loss_maps`. Returns five 0-d tensors: the weighted sums over
    the parts' agent-steps of ``-M * min(r A, clip(r) A)`` and of the entropy (both with their
    graph), of the approximate KL ``(r - 1) - log r`` and of the clipped indicator (no graph), and
    the weight ``sum(active)``. Dividing the first four by ``max(weight, 1)`` of the whole
    minibatch gives :func:`happo_actor_loss_maps`; summed over disjoint passes, the gradients of
    ``(pg_sum - c * ent_sum) / weight`` add up to the one-pass gradient (up to float rounding).
    """
    # behaviour log-probs are the rollout's constants, whatever graph the caller's tensor carries
    logratio = torch.cat([(d.log_prob(a) - b.detach()).reshape(-1) for d, a, b, *_ in parts])
    adv = torch.cat([x.reshape(-1) for _, _, _, x, _, _ in parts])
    factor = torch.cat([(f if f.dim() == x.dim() else f.unsqueeze(-1).expand_as(x)).reshape(-1) for _, _, _, x, f, _ in parts])
    active = torch.cat([x.reshape(-1) for *_, x in parts]).to(logratio.dtype)
    ratio = logratio.exp()
    with torch.no_grad():
        kl_sum = (((ratio - 1) - logratio) * active).sum()
        clip_sum = ((((ratio - 1.0).abs() > clip_coef).to(ratio.dtype)) * active).sum()
    surr = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * adv)
    pg_sum = -(factor * surr * active).sum()
    ent_sum = (torch.cat([d.entropy().reshape(-1) for d, *_ in parts]) * active).sum()
    return pg_sum, ent_sum, kl_sum, clip_sum, active.sum()


def pass_rows_for(pass_rows: int, device: torch.device) -> int:
    """The rows of one forward/backward pass (``Args.pass_rows``; 0: 1,024 on CPU, no limit on CUDA).

    Why 1,024 on CPU: glibc serves every allocation over its 32 MiB mmap threshold with fresh pages,
    so each large activation of a whole minibatch (7,680 agent-steps x 10 tokens x 128 floats =
    39 MiB on 2s3z) page-faults on first touch; in passes of 1,024 rows the tensors are reused from
    the heap. Measured on a 2-core CPU: a 7,680-row forward and backward of one actor took 305 ms in
    passes vs 418 ms in one (2 threads); in whole training runs, whose minibatches hold fewer alive
    agents, the difference was within noise (``benchmarks/train_sps.py``), and the passes bound the
    memory of a large minibatch. On CUDA one pass is faster.
    """
    if pass_rows > 0:
        return pass_rows
    return 1024 if device.type == "cpu" else 1 << 62


def value_loss_fn(values, old_values, targets, clip_coef, clip_vloss, huber_delta, reduction="mean"):
    """HARL's value loss: Huber (or 1/2 squared) error, clipped around the old values, mean (or, with
    ``reduction="sum"``, sum) over samples."""

    def err(v):
        return F.huber_loss(v, targets, reduction="none", delta=huber_delta) if huber_delta > 0 else 0.5 * (v - targets) ** 2

    loss = err(values)
    if clip_vloss:
        loss = torch.max(loss, err(old_values + (values - old_values).clamp(-clip_coef, clip_coef)))
    return loss.sum() if reduction == "sum" else loss.mean()


def map_seeds(seed: int, n_maps: int) -> list:
    """The seed of each map's training simulator (evaluation: ``eval_seed`` of it).

    One map: the run's int ``seed`` (env ``b`` draws from ``SeedSequence(seed, spawn_key=(b,))``, as
    before multi-map training existed). Several maps: map ``k`` gets ``SeedSequence(seed,
    spawn_key=(k,))``, so its env ``b`` has spawn key ``(k, b)``: no two maps, no single-map run and
    no evaluation (spawn keys starting with ``EVAL_SPAWN_KEY``) share a stream (``sc2_envs.sim.rng``).
    """
    if n_maps == 1:
        return [seed]
    return [np.random.SeedSequence(seed, spawn_key=(k,)) for k in range(n_maps)]


def minibatch_indices(sizes: list[int], num_minibatches: int, device) -> list[list[torch.Tensor]]:
    """One epoch's minibatches over the batches of several maps.

    Args:
        sizes: ``R_k``, the env steps of map ``k``'s batch; each divisible by ``num_minibatches``.
        num_minibatches: minibatches per epoch.

    Returns:
        ``num_minibatches`` lists of one int64 index tensor per map: minibatch ``j`` holds
        ``R_k / num_minibatches`` shuffled rows (``torch.randperm``) of every map's own batch, so
        each map keeps the same share in every minibatch and an index only ever addresses its own
        map's tensors. With one map: CleanRL's ``randperm(R).split(R // num_minibatches)``.
    """
    splits = [torch.randperm(n, device=device).split(n // num_minibatches) for n in sizes]
    return [list(mb) for mb in zip(*splits, strict=True)]


def critic_minibatch_loss(critics, b_states, b_returns, b_values, inds, clip_coef, clip_vloss, huber_delta):
    """HARL's value loss of one minibatch spread over several maps (one critic step).

    ``critics[k]``: the critic bound to map ``k`` (views sharing one network and ``ValueNorm``);
    ``b_states[k] [R_k, S_k]``, ``b_returns[k]``, ``b_values[k]`` ``[R_k]`` (unnormalised);
    ``inds[k]``: map ``k``'s rows of the minibatch (:func:`minibatch_indices`). Map ``k``'s states
    go only through ``critics[k]``, never stacked with another map's (their widths and layouts
    differ); the values, targets and the loss are then pooled, one mean over all samples. The value
    normaliser is updated with the minibatch's returns first (HARL ``v_critic.py``).
    """
    newvalue = torch.cat([critics[k](b_states[k][i]) for k, i in enumerate(inds)])
    returns = torch.cat([b_returns[k][i] for k, i in enumerate(inds)])
    old_values = torch.cat([b_values[k][i] for k, i in enumerate(inds)])
    value_norm = critics[0].value_norm
    value_norm.update(returns)
    targets = value_norm.normalize(returns)
    old_v = value_norm.normalize(old_values)
    return value_loss_fn(newvalue, old_v, targets, clip_coef, clip_vloss, huber_delta)


def critic_minibatch_backward(
    critics, b_states, b_returns, b_values, inds, clip_coef, clip_vloss, huber_delta, vf_coef, rows_per_pass
):
    """``(vf_coef * critic_minibatch_loss(...)).backward()`` in passes of at most ``rows_per_pass`` states.

    Arguments as in :func:`critic_minibatch_loss`, plus ``vf_coef`` and ``rows_per_pass``
    (:func:`pass_rows_for`). The value normaliser is updated once with the whole minibatch's
    returns, then each pass adds ``vf_coef * sum(loss) / n`` of its states to the gradients: the
    one-pass gradient up to float rounding. Returns the minibatch's loss, detached (0-d).
    """
    value_norm = critics[0].value_norm
    value_norm.update(torch.cat([b_returns[k][i] for k, i in enumerate(inds)]))
    n = sum(i.numel() for i in inds)
    total = torch.zeros((), device=b_returns[0].device)
    for k, i in enumerate(inds):
        for p in i.split(rows_per_pass):
            loss_sum = value_loss_fn(
                critics[k](b_states[k][p]),
                value_norm.normalize(b_values[k][p]),
                value_norm.normalize(b_returns[k][p]),
                clip_coef,
                clip_vloss,
                huber_delta,
                reduction="sum",
            )
            (vf_coef * loss_sum / n).backward()
            total += loss_sum.detach()
    return total / n


def args_record(args) -> dict:
    """``asdict(args)`` as saved in checkpoints and resume files: ``map`` is the map name (a str)
    for one map, as before multi-map training, and the list of names for several."""
    d = asdict(args)
    maps = list(d["map"])
    d["map"] = maps[0] if len(maps) == 1 else maps
    return d


RESUME_CHANGEABLE = ("total_timesteps", "time_budget_s", "torch_threads", "pass_rows", "track", "cuda")
"""The flags a resumed run may change (``--resume``); every other flag keeps the run's saved value."""


def check_args(args: Args) -> None:
    """Reject bad settings before anything is created; messages name the flag, value and expectation."""
    from sc2_envs import list_maps

    def need(ok: bool, flag: str, expected: str) -> None:
        if not ok:
            runs.cli_error(f"--{flag.replace('_', '-')} {getattr(args, flag)!r}: expected {expected}")

    runs.check_finite_flags(args)
    maps = list(args.map)
    if not maps:
        runs.cli_error("--map: expected at least one map name")
    bad = [m for m in maps if m not in list_maps("all")]
    if bad:
        shown = repr(maps[0]) if len(maps) == 1 else " ".join(maps)
        runs.cli_error(
            f"--map {shown}: expected one of " + ", ".join(list_maps("all")) + (f" (unknown: {bad})" if len(maps) > 1 else "")
        )
    if len(set(maps)) < len(maps):
        runs.cli_error(f"--map {' '.join(maps)}: expected distinct maps (each map gets its own simulator)")
    K = len(maps)
    need(args.backend in ("sim", "sc2"), "backend", "sim or sc2")
    need(
        args.backend == "sim" or args.num_envs == K,
        "num_envs",
        "1 with --backend sc2 (it runs one StarCraft II game)" if K == 1 else f"{K} with --backend sc2 (one game per map)",
    )
    need(args.actor in ("gnn", "mlp"), "actor", "gnn or mlp")
    need(
        runs.is_plain_name(args.exp_name),
        "exp_name",
        "a name without path separators (it names the run folder runs/<map>__<exp_name>__<seed>__<time>)",
    )
    for flag in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "eval_episodes", "eval_interval", "hidden"):
        if hasattr(args, flag):
            need(getattr(args, flag) >= 1, flag, "an integer >= 1")
    need(args.seed >= 0, "seed", "a non-negative integer")
    need(args.actor_layers >= 1, "actor_layers", "an integer >= 1 (attention blocks in each GNN actor)")
    need(args.torch_threads >= 0, "torch_threads", "an integer >= 0 (0: torch's default)")
    need(args.pass_rows >= 0, "pass_rows", "an integer >= 0 (0: automatic)")
    need(0.0 < args.gamma <= 1.0, "gamma", "a discount in (0, 1]")
    need(0.0 <= args.gae_lambda <= 1.0, "gae_lambda", "a value in [0, 1]")
    need(args.time_budget_s >= 0, "time_budget_s", "seconds >= 0 (0: no budget)")
    for flag in ("learning_rate", "critic_learning_rate", "clip_coef"):
        if hasattr(args, flag):
            need(getattr(args, flag) > 0, flag, "a value > 0")
    runs.check_loss_flags(args)
    need(
        args.num_envs % K == 0,
        "num_envs",
        f"a multiple of the number of maps ({K}): the envs are split evenly, one batched simulator per map",
    )
    batch = args.num_envs * args.num_steps
    if K == 1:
        need(
            args.num_minibatches <= batch and batch % args.num_minibatches == 0,
            "num_minibatches",
            f"a divisor of the batch of {batch} env steps (--num-envs x --num-steps), for equal minibatches",
        )
    else:
        per_map = batch // K
        need(
            args.num_minibatches <= per_map and per_map % args.num_minibatches == 0,
            "num_minibatches",
            f"a divisor of each map's batch of {per_map} env steps (--num-envs / {K} maps x --num-steps), so that "
            "every minibatch holds the same share of every map",
        )
    need(
        args.total_timesteps >= batch, "total_timesteps", f"at least one batch of {batch} env steps (--num-envs x --num-steps)"
    )
    runs.check_eval_maps(args.eval_maps, maps, args.backend, list_maps("all"))
    runs.check_ally_dropout(args.ally_dropout, maps, args.backend)


if __name__ == "__main__":
    cli = tyro.cli(runs.flowing_help(Args))
    runs.refuse_computed_flags(
        cli,
        ("batch_size", "minibatch_size", "num_iterations"),
        "--num-envs x --num-steps, --num-minibatches, --total-timesteps",
        runs.given_fields(Args),
    )
    resumed, run_dir = None, None
    if cli.resume:  # continue a run: its saved Args, with the few flags a continuation may change
        try:
            resumed, run_dir = runs.load_resume(cli.resume, script=os.path.basename(__file__))
            saved = dict(resumed["args"])
            saved["map"] = [saved["map"]] if isinstance(saved["map"], str) else list(saved["map"])
            saved.setdefault("flush_denormal", False)  # runs saved before the flag existed kept denormals
            args = runs.resume_args(saved, cli, Args(), RESUME_CHANGEABLE, runs.given_fields(Args))
            args.map, args.eval_maps = tuple(args.map), tuple(args.eval_maps)
        except (OSError, ValueError) as e:
            runs.cli_error(str(e))
        args.resume = cli.resume
    else:
        args = cli
    check_args(args)
    maps = list(args.map)
    K = len(maps)  # number of training maps; one map is the classic single-map run
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    args.num_iterations = max(1, args.total_timesteps // args.batch_size)
    if args.num_iterations * args.batch_size != args.total_timesteps:
        print(
            f"note: --total-timesteps {args.total_timesteps} is rounded down to whole iterations of {args.batch_size}: "
            f"{args.num_iterations * args.batch_size} env steps"
        )
    if resumed is not None and resumed["iteration"] > args.num_iterations:
        runs.cli_error(
            f"--total-timesteps {args.total_timesteps}: the resumed run is at {resumed['global_step']} env steps; "
            f"expected at least that many"
        )

    # TRY NOT TO MODIFY: seeding
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.set_flush_denormal(args.flush_denormal)
    allocator_line = runs.tune_allocator()

    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    # env setup (before the run folder: a run that cannot start leaves none behind): one simulator per map
    T, B = args.num_steps, args.num_envs
    Bm = B // K  # envs per map
    seeds = map_seeds(args.seed, K)
    try:
        envs = [make_env(args.backend, m, Bm, device, seeds[k]) for k, m in enumerate(maps)]
        eval_envs = [
            make_env(args.backend, m, args.eval_episodes if args.backend == "sim" else 1, device, eval_seed(seeds[k]))
            for k, m in enumerate(maps)
        ]
    except ImportError as e:  # sc2_envs.backends.SC2BackendUnavailable: SMAC, the game or its maps missing
        runs.cli_error(
            f"--backend {args.backend}: {str(e).splitlines()[0]} Expected oxwhirl SMAC, StarCraft II and SMAC's maps "
            "(see sc2_envs.backends.make_sc2_backend), or --backend sim"
        )
    infos = [e.get_env_info() for e in envs]
    env_info = infos[0]
    dropout = runs.ally_dropout_for(args.ally_dropout, maps, args.backend, infos)
    try:
        policy, critic, pols, crits = build_multi_map_models(
            infos, args.actor, hidden=args.hidden, actor_layers=args.actor_layers, device=device
        )
    except ValueError as e:  # maps whose entity widths differ cannot share weights
        runs.cli_error(f"--map {' '.join(maps)}: {e}")
    # --eval-maps: the same actors (views sharing their weights) on maps never trained on
    zs_envs = [
        make_env(args.backend, m, args.eval_episodes, device, runs.zero_shot_eval_seed(args.seed, 0, j))
        for j, m in enumerate(args.eval_maps)
    ]
    try:
        zs_pols = zero_shot_views(policy, env_info, [e.get_env_info() for e in zs_envs])
    except ValueError as e:
        runs.cli_error(f"--eval-maps {e} (the actors of {'+'.join(maps)}, {args.actor}, cannot play it)")
    init_ckpt = runs.load_init_weights(args.init_from, resumed is not None, policy, critic)
    lineage = runs.starting_lineage(args.init_from, init_ckpt, resumed)  # saved in every checkpoint of the run
    classes = list(policy.classes)
    actor_optimizers = {c: torch.optim.Adam(policy.actors[c].parameters(), lr=args.learning_rate, eps=1e-5) for c in classes}
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate, eps=1e-5)

    # one new folder per run (never reused), or the resumed run's own folder
    record = args_record(args)
    if run_dir is None:
        run_dir = runs.make_run_dir("runs", f"{'+'.join(maps)}__{args.exp_name}__{args.seed}__{int(time.time())}")
        runs.write_run_meta(
            run_dir,
            args,
            run_name=run_dir.name,
            script=os.path.basename(__file__),
            device=str(device),
            torch_threads_used=torch.get_num_threads(),
            allocator=allocator_line,
            lineage=lineage,  # the starting checkpoints, oldest first (models.lineage_after)
        )
    else:
        runs.note_resume(
            run_dir,
            from_global_step=resumed["global_step"],
            config=args,
            device=str(device),
            torch_threads_used=torch.get_num_threads(),
            allocator=allocator_line,
        )
    run_name = run_dir.name
    if args.track:
        import wandb

        wandb.init(
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            sync_tensorboard=True,
            config=record,
            name=run_name,
            id=run_name,
            resume="allow",
            save_code=True,
        )
    # a resumed run drops the events logged after its resume state (e.g. after a hard kill)
    writer = SummaryWriter(str(run_dir), purge_step=None if resumed is None else resumed["global_step"] + 1)
    if resumed is None:
        writer.add_text(
            "hyperparameters",
            "|param|value|\n|-|-|\n" + "\n".join(f"|{key}|{value}|" for key, value in {**vars(args), **record}.items()),
        )

    n_params = policy.n_params()
    if K == 1:
        N, A, O, S = env_info["n_agents"], env_info["n_actions"], env_info["obs_shape"], env_info["state_shape"]
        print(
            f"HAPPO ({args.actor}) on {maps[0]} | backend {args.backend} | {args.num_envs} envs x {args.num_steps} steps "
            f"= {args.batch_size} env steps/iteration, {runs.plural(args.num_iterations, 'iteration')} "
            f"({args.num_iterations * args.batch_size:,} env steps) | seed {args.seed} | device {device}"
        )
        print(
            f"obs {O}, state {S}, actions {A}, agents {N} ({describe_classes(env_info)}), "
            f"episode limit {env_info['episode_limit']} env steps"
        )
    else:
        print(
            f"HAPPO ({args.actor}) on {K} maps {', '.join(maps)} | backend {args.backend} | {args.num_envs} envs "
            f"({Bm} per map) x {args.num_steps} steps = {args.batch_size} env steps/iteration, "
            f"{runs.plural(args.num_iterations, 'iteration')} ({args.num_iterations * args.batch_size:,} env steps) | seed {args.seed} | "
            f"device {device} | one shared class-factored critic"
        )
        for m, info in zip(maps, infos, strict=True):
            print(
                f"  {m}: {Bm} envs, obs {info['obs_shape']}, state {info['state_shape']}, actions {info['n_actions']}, "
                f"agents {info['n_agents']} ({describe_classes(info)}), episode limit {info['episode_limit']} env steps"
            )
    for m, env_zs in zip(args.eval_maps, zs_envs, strict=True):
        info = env_zs.get_env_info()
        print(
            f"  zero-shot evaluation on {m} (not trained on): agents {info['n_agents']} ({describe_classes(info)}), "
            f"{args.eval_episodes} greedy episodes per evaluation"
        )
    print(
        "classes: "
        + ", ".join(f"{c} ({n_params[c]:,} params)" for c in classes)
        + f" | critic {sum(p.numel() for p in critic.parameters()):,} params"
    )
    rows_per_pass = pass_rows_for(args.pass_rows, device)
    print(
        f"update: {args.update_epochs} epochs x {args.num_minibatches} minibatches of {args.minibatch_size} env steps, "
        f"passes of <= {rows_per_pass if rows_per_pass < 1 << 62 else 'all'} rows | torch threads {torch.get_num_threads()}"
    )
    print(allocator_line)
    for line in runs.start_lines(maps, dropout, args.init_from, init_ckpt, lineage):
        print(line)
    print(f"logs: {run_dir} (tensorboard --logdir runs)", flush=True)

    # ALGO Logic: Storage setup (one rollout buffer per map: team sizes differ, states never mix)
    bufs = []
    for info in infos:
        N, A, O, S = info["n_agents"], info["n_actions"], info["obs_shape"], info["state_shape"]
        bufs.append(
            {
                "obs": torch.zeros((T, Bm, N, O), device=device),
                "states": torch.zeros((T, Bm, S), device=device),
                "avails": torch.zeros((T, Bm, N, A), dtype=torch.bool, device=device),
                "actions": torch.zeros((T, Bm, N), dtype=torch.int64, device=device),
                "logprobs": torch.zeros((T, Bm, N), device=device),
                "rewards": torch.zeros((T, Bm), device=device),
                "terminateds": torch.zeros((T, Bm), dtype=torch.bool, device=device),
                "truncateds": torch.zeros((T, Bm), dtype=torch.bool, device=device),
                "final_values": torch.zeros((T, Bm), device=device),
                "values": torch.zeros((T, Bm), device=device),
            }
        )

    def per_map(saved):
        """A resume-file entry as a per-map list (single-map files hold the bare value)."""
        return [saved] if K == 1 else list(saved)

    def packed(values):
        """A per-map list as stored in the resume file (the bare value for one map, as before)."""
        return values[0] if K == 1 else list(values)

    # TRY NOT TO MODIFY: start the game (or continue the resumed one where it stopped)
    global_step, start_iteration, elapsed_before = 0, 0, 0.0
    win_rate, best = float("nan"), None
    ep_return = [torch.zeros(Bm, device=device) for _ in maps]
    ep_length = [torch.zeros(Bm, device=device) for _ in maps]
    if resumed is None:
        next_obs = [
            runs.drop_allies(env, env.reset(seed=seeds[k]), torch.ones(Bm, dtype=torch.bool, device=device), dropout[k])
            for k, env in enumerate(envs)
        ]
    else:
        policy.load_state_dict(resumed["actors"])
        critic.load_state_dict(resumed["critic"])
        for c in classes:
            actor_optimizers[c].load_state_dict(resumed["optimizers"][c])
        critic_optimizer.load_state_dict(resumed["optimizers"]["critic"])
        if resumed["env"] is not None and all(hasattr(env, "load_state_dict") for env in envs):
            next_obs = []
            for k, env in enumerate(envs):  # the simulators continue every env bit for bit
                env.load_state_dict(per_map(resumed["env"])[k])
                next_obs.append({key: v.to(device) for key, v in per_map(resumed["next_obs"])[k].items()})
                ep_return[k].copy_(per_map(resumed["ep_return"])[k])
                ep_length[k].copy_(per_map(resumed["ep_length"])[k])
        else:  # a real game cannot be snapshot: its episodes in progress are lost, new ones start now
            print("the env state cannot be restored on this backend: new episodes start now")
            next_obs = [env.reset() for env in envs]
        global_step, start_iteration = int(resumed["global_step"]), int(resumed["iteration"])
        elapsed_before, win_rate = float(resumed["elapsed_s"]), float(resumed["win_rate"])
        best = None if resumed["best"] is None else tuple(resumed["best"])
        runs.set_rng_state(resumed["rng"])
        print(f"resumed from {run_dir / runs.RESUME_FILE} at iteration {start_iteration}, {global_step} env steps")
    session_start = time.time()
    start_time = session_start - elapsed_before  # wall-clock time and SPS continue across resumptions
    eval_path = run_dir / "eval.csv"
    if resumed is not None:
        runs.truncate_csv(eval_path, "global_step", global_step)
    new_csv = not eval_path.exists()
    eval_log = open(eval_path, "a", newline="")  # noqa: SIM115 -- open for the whole run
    eval_csv = csv.writer(eval_log)
    if new_csv:
        per_map_columns = [f"{col}/{m}" for m in maps for col in ("win_rate", "eval_return")] if K > 1 else []
        per_map_columns += [f"zero_shot_{col}/{m}" for m in args.eval_maps for col in ("win_rate", "eval_return")]
        eval_csv.writerow(["global_step", "wall_time_s", "win_rate", "eval_return", "iteration", *per_map_columns])
    progress = runs.Progress(args.num_iterations, args.batch_size, start_iteration, elapsed_before=elapsed_before)

    def save_model_file(path):  # save_checkpoint writes atomically
        extra = {"lineage": lineage} if lineage else None
        save_checkpoint(path, policy, critic, env_info, record, global_step, maps=maps, extra=extra, algorithm=ALGORITHM)

    def sync():
        if device.type == "cuda":  # kernels run asynchronously: time what the env has finished
            torch.cuda.synchronize(device)

    def run_eval(iteration):
        """Greedy evaluation on every training map (the all-map figure, which picks ``_best.pt``, is the mean
        over them), then on every ``--eval-maps`` map zero-shot (logged only)."""
        global best
        frames = [] if args.capture_video else None
        results = [
            evaluate(
                pols[k], eval_envs[k], args.eval_episodes, eval_seed(seeds[k], iteration), frames=frames if k == 0 else None
            )
            for k in range(K)
        ]
        wr = sum(r["win_rate"] for r in results) / K
        ret = sum(r["mean_return"] for r in results) / K
        writer.add_scalar("charts/win_rate", wr, global_step)
        writer.add_scalar("charts/eval_return", ret, global_step)
        per_map_values = []
        if K > 1:
            for m, r in zip(maps, results, strict=True):
                writer.add_scalar(f"charts/win_rate/{m}", r["win_rate"], global_step)
                writer.add_scalar(f"charts/eval_return/{m}", r["mean_return"], global_step)
                per_map_values += [r["win_rate"], r["mean_return"]]
        for j, (m, env_zs) in enumerate(zip(args.eval_maps, zs_envs, strict=True)):
            r = evaluate(zs_pols[j], env_zs, args.eval_episodes, runs.zero_shot_eval_seed(args.seed, iteration, j))
            writer.add_scalar(f"charts/zero_shot_win_rate/{m}", r["win_rate"], global_step)
            writer.add_scalar(f"charts/zero_shot_eval_return/{m}", r["mean_return"], global_step)
            per_map_values += [r["win_rate"], r["mean_return"]]
        eval_csv.writerow([global_step, round(time.time() - start_time, 2), wr, ret, iteration, *per_map_values])
        eval_log.flush()
        if frames:
            from sc2_envs.render import save_episode_video

            os.makedirs(f"videos/{run_name}", exist_ok=True)
            save_episode_video(frames, f"videos/{run_name}/step_{global_step}.gif")
        if args.save_model:
            save_model_file(run_dir / f"{args.exp_name}.pt")
            if best is None or (wr, ret) > best:
                best = (wr, ret)
                save_model_file(run_dir / f"{args.exp_name}_best.pt")
            runs.save_resume(
                run_dir / runs.RESUME_FILE,
                {
                    "args": record,
                    "lineage": lineage,
                    "iteration": iteration,
                    "global_step": global_step,
                    "elapsed_s": time.time() - start_time,
                    "win_rate": wr,
                    "best": None if best is None else list(best),
                    "actors": policy.state_dict(),
                    "critic": critic.state_dict(),
                    "optimizers": {
                        **{c: actor_optimizers[c].state_dict() for c in classes},
                        "critic": critic_optimizer.state_dict(),
                    },
                    "rng": runs.rng_state(),
                    "env": packed([env.state_dict() for env in envs])
                    if all(hasattr(env, "state_dict") for env in envs)
                    else None,
                    "next_obs": packed(next_obs),
                    "ep_return": packed(ep_return),
                    "ep_length": packed(ep_length),
                },
            )
        return wr

    stopper = runs.GracefulStop().install()  # SIGINT / SIGTERM: finish the iteration, then stop
    iteration = start_iteration
    env_shares = runs.EnvShares()  # the first iteration, and any with a kernel compile or cache load, kept apart
    for iteration in range(start_iteration + 1, args.num_iterations + 1):
        iter_start, env_time = time.perf_counter(), 0.0
        env_shares.start()
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            for opt in actor_optimizers.values():
                opt.param_groups[0]["lr"] = frac * args.learning_rate
            critic_optimizer.param_groups[0]["lr"] = frac * args.critic_learning_rate

        fin = [torch.zeros(4, device=device) for _ in maps]  # per map: return, length, won, count of finished episodes
        for step in range(T):
            global_step += B
            for k in range(K):
                buf, nobs = bufs[k], next_obs[k]
                buf["obs"][step], buf["states"][step], buf["avails"][step] = nobs["obs"], nobs["state"], nobs["avail_actions"]

                # ALGO LOGIC: action logic
                with torch.no_grad():
                    action, logprob = pols[k].act(nobs["obs"], nobs["avail_actions"])
                    buf["values"][step] = crits[k].value_norm.denormalize(crits[k](nobs["state"]))
                buf["actions"][step], buf["logprobs"][step] = action, logprob

                # TRY NOT TO MODIFY: execute the game and log data.
                sync()
                t_env = time.perf_counter()
                nobs = next_obs[k] = envs[k].step(action)
                runs.drop_allies(envs[k], nobs, nobs["terminated"] | nobs["truncated"], dropout[k])
                sync()
                env_time += time.perf_counter() - t_env
                buf["rewards"][step] = nobs["reward"]
                buf["terminateds"][step], buf["truncateds"][step] = nobs["terminated"], nobs["truncated"]
                bootstrap = nobs["truncated"] & ~nobs["terminated"]
                buf["final_values"][step] = 0.0
                if bool(bootstrap.any()):
                    with torch.no_grad():
                        v_final = crits[k].value_norm.denormalize(crits[k](nobs["final_state"]))
                    buf["final_values"][step] = torch.where(bootstrap, v_final, 0.0)
                ep_return[k] += nobs["reward"]
                ep_length[k] += 1
                done = (nobs["terminated"] | nobs["truncated"]).float()
                fin[k] += torch.stack(
                    [
                        (ep_return[k] * done).sum(),
                        (ep_length[k] * done).sum(),
                        (nobs["battle_won"].float() * done).sum(),
                        done.sum(),
                    ]
                )
                ep_return[k] *= 1.0 - done
                ep_length[k] *= 1.0 - done

        fin_all = torch.stack(fin).sum(0)
        n_fin = float(fin_all[3])
        if n_fin > 0:  # all maps: the mean over the episodes that finished, whichever map they were on
            writer.add_scalar("charts/episodic_return", float(fin_all[0]) / n_fin, global_step)
            writer.add_scalar("charts/episodic_length", float(fin_all[1]) / n_fin, global_step)
            writer.add_scalar("charts/train_win_rate", float(fin_all[2]) / n_fin, global_step)
        if K > 1:
            for m, f in zip(maps, fin, strict=True):
                if float(f[3]) > 0:
                    writer.add_scalar(f"charts/episodic_return/{m}", float(f[0] / f[3]), global_step)
                    writer.add_scalar(f"charts/episodic_length/{m}", float(f[1] / f[3]), global_step)
                    writer.add_scalar(f"charts/train_win_rate/{m}", float(f[2] / f[3]), global_step)

        # per map: bootstrap value if not done, GAE, then flatten over env steps (agents stay a dimension)
        mb_data = []
        for k in range(K):
            buf, info = bufs[k], infos[k]
            N, A, O, S = info["n_agents"], info["n_actions"], info["obs_shape"], info["state_shape"]
            with torch.no_grad():
                next_value = crits[k].value_norm.denormalize(crits[k](next_obs[k]["state"]))
                advantages, returns = compute_gae(
                    buf["rewards"],
                    buf["values"],
                    next_value,
                    buf["terminateds"],
                    buf["truncateds"],
                    buf["final_values"],
                    args.gamma,
                    args.gae_lambda,
                )
            d = {
                "obs": buf["obs"].reshape(T * Bm, N, O),
                "states": buf["states"].reshape(T * Bm, S),
                "avails": buf["avails"].reshape(T * Bm, N, A),
                "actions": buf["actions"].reshape(T * Bm, N),
                "logprobs": buf["logprobs"].reshape(T * Bm, N),
                "returns": returns.reshape(-1),
                "values": buf["values"].reshape(-1),
            }
            d["active"] = (~d["avails"][..., 0]).float()  # SMAC: only dead agents may (and must) take the no-op
            adv = advantages.reshape(-1, 1).expand(-1, N)
            if args.norm_adv:  # per map, over its alive agents: each map's advantages on one scale
                mean = masked_mean(adv, d["active"])
                std = masked_mean((adv - mean) ** 2, d["active"]).sqrt()
                adv = (adv - mean) / (std + 1e-5)
            d["adv"] = adv
            mb_data.append(d)
        sizes = [T * Bm] * K
        mb_size = T * Bm // args.num_minibatches  # rows of each map per minibatch

        # ALGO LOGIC: HAPPO sequential update of the class actors with the factor M (one M per map's env steps)
        factor = [torch.ones(T * Bm, device=device) for _ in maps]
        class_stats = {}
        order = list(range(len(classes))) if args.fixed_order else torch.randperm(len(classes)).tolist()
        for ci in order:
            c = classes[ci]
            on = [k for k in range(K) if c in pols[k].class_agents]  # the maps with agents of this class
            # The actor runs only on the active agent-steps of the class (alive, and in SMACv2 of
            # class c at that step): the others weigh 0 in every mean, so skipping them changes no term.
            cd = {}
            for k in on:
                d = mb_data[k]
                rows, pos, flat = pols[k].class_rows(c, d["obs"], d["active"])
                cd[k] = {
                    "rows": rows,
                    "pos": pos,
                    "block": rows * pols[k].agent_ids(c).numel() + pos,
                    "obs": d["obs"].reshape(-1, d["obs"].shape[-1])[flat],
                    "avails": d["avails"].reshape(-1, d["avails"].shape[-1])[flat],
                    **{key: d[key].reshape(-1)[flat] for key in ("actions", "logprobs", "adv")},
                }
            if sum(cd[k]["rows"].numel() for k in on) == 0:  # the whole class was dead for the whole batch (HARL skips it)
                continue
            # HARL evaluates the class's log-probs before its update; its parameters are still those
            # that acted in the rollout, so they are the behaviour log-probs already stored.
            pg_sum = ent_sum = kl_sum = clip_sum = 0.0
            n_updates = 0
            for _epoch in range(args.update_epochs):
                mbs = minibatch_indices(sizes, args.num_minibatches, device)
                split = {k: split_rows_by_minibatch(cd[k]["rows"], [mb[k] for mb in mbs], sizes[k]) for k in on}
                for j in range(args.num_minibatches):
                    # the minibatch's agent-steps of every map, in passes of at most pass_rows (one map
                    # each); the gradients of the passes add up to the whole minibatch's
                    passes = [(k, p) for k in on for p in split[k][j].split(rows_per_pass)]
                    n_rows = sum(p.numel() for _, p in passes)
                    actor_optimizers[c].zero_grad()
                    if n_rows:
                        sums = torch.zeros(4, device=device)
                        for k, i in passes:
                            x = cd[k]
                            part = (
                                pols[k].class_dist_at(c, x["obs"][i], x["avails"][i], x["pos"][i]),
                                x["actions"][i],
                                x["logprobs"][i],
                                x["adv"][i],
                                factor[k][x["rows"][i]],
                                torch.ones(i.numel(), device=device),
                            )
                            pg_s, ent_s, kl_s, clip_s, _ = happo_actor_loss_sums([part], args.clip_coef)
                            ((pg_s - args.ent_coef * ent_s) / n_rows).backward()
                            sums += torch.stack([pg_s.detach(), ent_s.detach(), kl_s, clip_s])
                        pg_loss, entropy_loss, approx_kl, clipfrac = sums / n_rows
                    else:  # no active agent of the class in this minibatch: a zero gradient (Adam still steps)
                        pg_loss = entropy_loss = approx_kl = clipfrac = torch.zeros((), device=device)
                        for p_ in policy.actors[c].parameters():
                            p_.grad = torch.zeros_like(p_)
                    nn.utils.clip_grad_norm_(policy.actors[c].parameters(), args.max_grad_norm)
                    actor_optimizers[c].step()
                    pg_sum, ent_sum = pg_sum + pg_loss.detach(), ent_sum + entropy_loss.detach()
                    kl_sum, clip_sum = kl_sum + approx_kl, clip_sum + clipfrac
                    n_updates += 1
                if args.target_kl is not None and approx_kl > args.target_kl:
                    break
            with torch.no_grad():
                for k in on:
                    x = cd[k]
                    if x["rows"].numel() == 0:  # no active agent of the class on this map: M unchanged
                        continue
                    chunk = min(rows_per_pass, max(1, mb_size * pols[k].agent_ids(c).numel()))
                    new_logp = torch.cat(
                        [
                            pols[k].class_dist_at(c, x["obs"][i], x["avails"][i], x["pos"][i]).log_prob(x["actions"][i])
                            for i in torch.arange(x["rows"].numel(), device=device).split(chunk)
                        ]
                    )
                    factor[k] = happo_factor_update_rows(
                        factor[k], new_logp, x["logprobs"], x["block"], pols[k].agent_ids(c).numel()
                    )
            for tag, total in (("policy_loss", pg_sum), ("entropy", ent_sum), ("approx_kl", kl_sum), ("clipfrac", clip_sum)):
                class_stats.setdefault(tag, []).append(float(total) / n_updates)
                writer.add_scalar(f"losses/{tag}/{c}", class_stats[tag][-1], global_step)
        for tag, vals in class_stats.items():  # CleanRL's tags: the mean over the classes
            writer.add_scalar(f"losses/{tag}", sum(vals) / len(vals), global_step)
        all_factors = torch.cat(factor)
        writer.add_scalar("charts/happo_factor_mean", float(all_factors.mean()), global_step)
        writer.add_scalar("charts/happo_factor_std", float(all_factors.std()), global_step)

        # ALGO LOGIC: critic update (once, after all actors; HARL VCritic), each map's states through its own view
        b_states = [d["states"] for d in mb_data]
        b_returns = [d["returns"] for d in mb_data]
        b_values = [d["values"] for d in mb_data]
        for _epoch in range(args.update_epochs):
            for mb_inds in minibatch_indices(sizes, args.num_minibatches, device):
                critic_optimizer.zero_grad()
                v_loss = critic_minibatch_backward(
                    crits,
                    b_states,
                    b_returns,
                    b_values,
                    mb_inds,
                    args.clip_coef,
                    args.clip_vloss,
                    args.huber_delta,
                    args.vf_coef,
                    rows_per_pass,
                )
                nn.utils.clip_grad_norm_(critic.parameters(), args.max_grad_norm)
                critic_optimizer.step()

        y_pred, y_true = torch.cat(b_values), torch.cat(b_returns)
        var_y = torch.var(y_true)
        explained_var = float("nan") if var_y == 0 else float(1 - torch.var(y_true - y_pred) / var_y)

        # TRY NOT TO MODIFY: record rewards for plotting purposes
        sps = int(global_step / (time.time() - start_time))
        env_share = env_time / max(time.perf_counter() - iter_start, 1e-9)  # rollout + update, before evaluation
        env_shown = env_shares.add(env_share)
        writer.add_scalar("charts/learning_rate", actor_optimizers[classes[0]].param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", float(v_loss.detach()), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", sps, global_step)
        writer.add_scalar("charts/env_time_fraction", env_share, global_step)
        out_of_time = args.time_budget_s > 0 and time.time() - session_start > args.time_budget_s
        stopping = stopper.requested or out_of_time
        if iteration % args.eval_interval == 0 or iteration == args.num_iterations or stopping:
            win_rate = run_eval(iteration)
        progress.update(
            iteration,
            global_step,
            float(fin_all[0]) / n_fin if n_fin > 0 else None,
            win_rate,
            sps,
            extra={"env": env_shown},
        )
        if stopping:
            break

    stopper.restore()
    progress.close()
    eval_log.close()
    writer.close()
    if iteration == start_iteration:
        how = f"nothing to do: the run already has {runs.plural(args.num_iterations, 'iteration')}"
    elif stopper.requested:
        how = f"stopped by {stopper.reason} after iteration {iteration}/{args.num_iterations}"
    elif iteration < args.num_iterations:
        how = (
            f"time budget of {args.time_budget_s:.0f} s (this process) reached after iteration "
            f"{iteration}/{args.num_iterations}"
        )
    else:
        how = f"finished {runs.plural(args.num_iterations, 'iteration')}"
    saved = (
        f"checkpoints {args.exp_name}.pt, {args.exp_name}_best.pt; "
        + runs.resume_hint(run_dir, iteration >= args.num_iterations, args.num_iterations * args.batch_size)
        if args.save_model
        else "no checkpoint (--no-save-model)"
    )
    env_note = env_shares.note()
    wall = runs.wall_time_note(time.time() - start_time, time.time() - session_start, resumed is not None)
    over = f"{args.eval_episodes} episodes" + (f" on each of {K} maps (mean)" if K > 1 else "")
    print(
        f"{how}: {global_step} env steps, {wall}{env_note}, greedy win rate {win_rate:.3f} over "
        f"{over} | run folder {run_dir}: eval.csv, TensorBoard events, {saved}",
        flush=True,
    )
