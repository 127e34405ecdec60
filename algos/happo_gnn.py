# HAPPO (Kuba et al., ICLR 2022; Zhong et al., HARL, JMLR 2024) with one count-invariant attention actor per unit class.
# Algorithm facts: PKU-MARL/HARL happo.py, v_critic.py, valuenorm.py, on_policy_ha_runner.py; style: CleanRL ppo.py.
"""Train HAPPO agents on a SMAC map or SMACv2 scenario of the embedded simulator (or several).

    python algos/happo_gnn.py --map 2s3z
    python algos/happo_gnn.py --map 2s3z 3s5z --num-envs 256   # one policy for both team sizes

The agents of one unit class share an actor, so a class is one "agent" of HAPPO's sequential scheme.
Each iteration collects ``num_steps`` env steps from ``num_envs`` envs, computes GAE on the
centralized value (bootstrapping at time limits, not at battle ends), then updates the class actors
one after the other in a random order. A class's clipped surrogate is averaged over its alive
agent-steps and weighted per env step by the factor ``M``, the product of the new/old probability
ratios of the classes updated before it; after its update ``M`` is multiplied by the ratios of all
of its agents. The critic is updated last, on returns normalised by HARL's ``ValueNorm``
(``critic.value_norm``; the buffer and GAE hold denormalised values). Dead agents (only the no-op
available) count nowhere.
Within a class each agent's ratio is clipped on its own (its agents share one actor, as in MAPPO), so
the paper's monotonic-improvement argument holds between classes, not between agents of a class. The
paper writes the surrogate as ``min(r M', clip(r) M')`` with ``M' = M A``; ``M >= 0`` moves out of the
``min``, so ``M * min(r A, clip(r) A)`` below is the same objective.

Several maps (``--map A B``, whose entity widths agree) share the class actors and one class-factored
critic; each map keeps its own simulator, buffer, GAE, advantage normalisation and ``M``, and every
minibatch holds the same share of each map.

With ``--recurrent`` each class actor carries a GRU state per agent across env steps, zeroed at every episode
start. As in CleanRL's ``ppo_atari_lstm.py``, the states at the rollout's start are stored, the actors' minibatches
hold whole envs (all ``num_steps`` of each), and each class actor replays its agents' sequences from those states,
so that the first epoch's log-probs equal the rollout's. The critic stays feed-forward on the state.

The run harness (``sc2_envs.training.harness``) keeps the run folder, ``run_meta.json``, TensorBoard, evaluations,
checkpoints, ``--resume`` and signals.
"""

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models import RolloutMemory, build_multi_map_models
from models.common import masked_mean
from models.minibatches import (
    minibatch_indices,
    pass_rows_for,
    sequence_minibatch_indices,
    sequence_passes,
    split_rows_by_minibatch,
)
from sc2_envs.sim.rng import eval_seed
from sc2_envs.smac_actions import alive_mask
from sc2_envs.training.ally_dropout import drop_allies
from sc2_envs.training.cli import ally_dropout_for, check_training_args, cli_error
from sc2_envs.training.envs import make_env, map_seeds
from sc2_envs.training.harness import TrainingRun


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
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
    """a run folder (or its resume.pt) to continue, in the same folder; only --total-timesteps, --time-budget-s,
    --torch-threads, --pass-rows, --cuda and --track may change (bit for bit as if never stopped with the run's own values;
    another --torch-threads, --pass-rows or device continues it equal up to float rounding only)"""

    # Algorithm specific arguments
    map: tuple[str, ...] = ("2s3z",)
    """the SMAC map or SMACv2 scenario (sc2_envs.list_maps("all")), or several (`--map 2s3z 3s5z`) for multi-map training: one
    set of class actors and one critic for all of them, --num-envs split evenly (one batched simulator per map)"""
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
    # 64 x 40 env steps per update: more updates per env step, a 0.9 win rate on 2s3z in fewer env steps than
    # 128 x 40 or 256 x 40 at about the same env steps/s (docs/learning_speed.md)
    num_envs: int = 64
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
    """the number of mini-batches (of env steps) per epoch, for each class actor and the critic; it must divide num_envs x
    num_steps"""
    update_epochs: int = 5
    """the number of epochs (passes over the batch) to update each class actor and the critic"""
    norm_adv: bool = True
    """toggles advantage normalisation (per map, over all its alive agents, as HARL's `FP` state type)"""
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
    # 32, not 64: 1.67x the env steps/s on 2 cores, and on 2s3z nine seeds at 180 s of wall time won 0.90 / 0.88 (medians,
    # two evaluation seeds) against 64's 0.85 / 0.80 (docs/learning_speed.md); the shipped checkpoints are 64 wide
    hidden: int = 32
    """width of the actors and the critic (GNN: the token width); on SMACv2 pass 64, which won more on protoss_5_vs_5
    (docs/learning_speed.md); shipped checkpoints are 64 wide (--init-from needs --hidden 64)"""
    actor_layers: int = 1
    """attention blocks in each GNN actor"""
    recurrent: bool = False
    """if toggled, each GNN class actor passes its readout through a GRU cell whose state each agent carries across env
    steps (zeroed at every episode start); the actor update then runs on minibatches of whole envs (--num-minibatches
    must divide the envs of each map) and replays each env's sequence (CleanRL ppo_atari_lstm.py)"""
    eval_episodes: int = 32
    """greedy evaluation episodes per evaluation (one per env of a separate eval simulator)"""
    eval_interval: int = 4
    """iterations between evaluations (plus one at the end); the defaults evaluate every 4 x 64 x 40 = 10,240 env steps"""
    eval_maps: tuple[str, ...] = ()
    """maps never trained on, played zero-shot at every evaluation (`--eval-maps 3s5z 3s5z_vs_3s6z` on a 2s3z run):
    --eval-episodes greedy episodes each, logged as `charts/zero_shot_win_rate/<map>` and eval.csv columns; never used to pick
    `<exp_name>_best.pt`"""
    torch_threads: int = 0
    """torch CPU threads (0: torch's default, one per physical core); the simulator keeps this count"""
    pass_rows: int = 0
    """the most agent-steps (actors) or env steps (critic) in one forward/backward pass: a minibatch runs in passes with its
    gradient accumulated, the same update up to float rounding (0: 1024 on CPU, which bounds the memory of large minibatches;
    all on CUDA)"""
    time_budget_s: float = 0.0
    """stop training after this many wall-clock seconds of this process (0: no limit); the final evaluation still runs; checked
    at the end of each iteration, so a run overruns it by up to one iteration (rollout and update)"""
    ally_dropout: tuple[float, ...] = (0.0,)
    """probability, in [0, 1), that a training episode starts with one of its allies (drawn uniformly) removed: one value
    for every --map or one per map (`--ally-dropout 0 0.5` on `--map 3m 8m`), so that the actors meet battles in which they are
    outnumbered (`SMACSim.remove_allies`; --backend sim). Evaluations never remove allies. 0: off"""
    init_from: str = ""
    """a checkpoint (`<exp_name>.pt` of this script or hatrpo_gnn.py) whose actor and critic weights start this run (fresh
    optimisers, env steps counted from 0), e.g. to fine-tune with --ally-dropout; the classes, network sizes and critic must
    match this run's"""
    flush_denormal: bool = True
    """flush denormal floats to zero on the CPU (torch.set_flush_denormal): Adam's second-moment estimates of rarely-used
    weights decay into the denormal range, where sqrt and division run ~100x slower on x86"""

    # to be filled in runtime
    batch_size: int = 0
    """computed at runtime, do not set (refused): the batch size, --num-envs x --num-steps"""
    minibatch_size: int = 0
    """computed at runtime, do not set (refused): the mini-batch size in env steps, batch size / --num-minibatches"""
    num_iterations: int = 0
    """computed at runtime, do not set (refused): the iterations, --total-timesteps // batch size (a total below one batch is
    refused)"""


RESUME_CHANGEABLE = ("total_timesteps", "time_budget_s", "torch_threads", "pass_rows", "track", "cuda")
"""The flags a resumed run may change (``--resume``); every other flag keeps the run's saved value."""


def compute_gae(rewards, values, next_value, terminated, truncated, final_values, gamma, gae_lambda):
    """GAE over a rollout of ``T`` steps and ``B`` envs (all tensors ``[T, B]`` float, ``next_value [B]``).

    ``values`` are unnormalised ``V(s_t)``; ``next_value`` is ``V`` of the observation after the last
    step. Where an episode ends at step ``t`` the next value is not used: a termination (battle won,
    lost or drawn) has no future, while a truncation (time limit) bootstraps from the value of the
    final observation, ``final_values[t] = V(s_final)`` (CleanRL #198). HARL's ``use_proper_time_limits``
    tells the two apart too, but zeroes a truncated step's advantage instead (its return is ``V(s_t)``;
    ``on_policy_critic_buffer_ep.py``'s ``bad_masks``). Returns ``(advantages, returns)``, each ``[T, B]``.
    """
    T = rewards.shape[0]
    # done[t]: the action of step t ended the episode (CleanRL's dones[t + 1]), so values[t + 1], the next episode's
    # first value, is never used across it; a truncation's bootstrap gamma * V(s_final) is folded into its reward
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


def happo_actor_loss(dist, actions, behaviour_logprob, advantages, factor, clip_coef):
    """HAPPO's clipped surrogate of one class, weighted by ``M``, summed over alive agent-steps.

    Args:
        dist: the class actor's ``MaskedCategorical`` over ``P`` alive agent-steps of the class.
        actions, behaviour_logprob, advantages, factor: ``[P]``; ``factor`` is ``M`` of each agent-step's env step.
        clip_coef: the clipping range ``eps``.

    Returns:
        Sums over the ``P`` agent-steps (0-d): ``pg = -sum(M * min(r A, clip(r, 1-eps, 1+eps) A))`` and the
        entropy (with their graph), the approximate KL ``(r - 1) - log r`` and the clipped count (without).
        The minibatch's losses are these sums over its alive agent-steps divided by their count (HARL
        ``happo.py``'s masked means; ``M >= 0``, so this equals the paper's ``min(r M', clip(r) M')`` with
        ``M' = M A``), which lets a minibatch run in several passes whose gradients add up.
    """
    logratio = dist.log_prob(actions) - behaviour_logprob
    ratio = logratio.exp()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - logratio).sum()
        clipped = ((ratio - 1.0).abs() > clip_coef).to(ratio.dtype).sum()
    surr = torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * advantages)
    return -(factor * surr).sum(), dist.entropy().sum(), approx_kl, clipped


def happo_factor_update(factor, new_logprob, behaviour_logprob, rows, pos, n_c):
    """HAPPO's ``M <- M * prod_{agents i of the class} pi_new(a_i|o_i) / pi_old(a_i|o_i)`` per env step.

    ``factor [R]``; ``new_logprob``, ``behaviour_logprob`` ``[P]`` of the class's alive agent-steps, at env
    step ``rows [P]`` and position ``pos [P]`` among the class's ``n_c`` agents. A dead agent's ratio is 1.
    """
    log_ratio = torch.zeros(factor.shape[0], n_c, dtype=factor.dtype, device=factor.device)
    log_ratio[rows, pos] = new_logprob - behaviour_logprob
    return factor * torch.exp(log_ratio.sum(-1))


def value_loss(values, old_values, targets, clip_coef, clip_vloss, huber_delta):
    """HARL's value loss per sample: Huber (or 1/2 squared) error, clipped around the old values (all normalised)."""

    def err(v):
        return F.huber_loss(v, targets, reduction="none", delta=huber_delta) if huber_delta > 0 else 0.5 * (v - targets) ** 2

    loss = err(values)
    if clip_vloss:
        loss = torch.max(loss, err(old_values + (values - old_values).clamp(-clip_coef, clip_coef)))
    return loss


def critic_backward(critics, data, inds, args, rows_per_pass):
    """Backpropagate HARL's value loss of one minibatch spread over maps; returns the loss (0-d, detached).

    ``critics[k]``: the critic's view bound to map ``k``; ``data[k]``: map ``k``'s batch (``states [R_k, S_k]``,
    unnormalised ``values`` and ``returns`` ``[R_k]``); ``inds[k]``: its env steps in the minibatch
    (:func:`minibatch_indices`). The value normaliser is updated with the minibatch's returns first (HARL
    ``v_critic.py``); the loss is one mean over all the minibatch's samples, ``vf_coef`` times it is
    backpropagated in passes of at most ``rows_per_pass`` states of one map (a map's states go only
    through its own view, never stacked with another map's).
    """
    value_norm = critics[0].value_norm
    value_norm.update(torch.cat([data[k]["returns"][i] for k, i in enumerate(inds)]))
    n = sum(i.numel() for i in inds)
    total = torch.zeros((), device=data[0]["returns"].device)
    for k, i in enumerate(inds):
        for p in i.split(rows_per_pass):
            d = data[k]
            loss = value_loss(
                critics[k](d["states"][p]), value_norm.normalize(d["values"][p]), value_norm.normalize(d["returns"][p]),
                args.clip_coef, args.clip_vloss, args.huber_delta,
            ).sum()  # fmt: skip
            (args.vf_coef * loss / n).backward()
            total += loss.detach()
    return total / n


if __name__ == "__main__":
    run = TrainingRun.from_command_line(Args, __file__, RESUME_CHANGEABLE)
    args = run.args
    check_training_args(args)
    run.set_iterations()
    maps, K = list(args.map), len(args.map)  # K maps: each has its own simulator, buffer, GAE and M

    # TRY NOT TO MODIFY: seeding
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.set_flush_denormal(args.flush_denormal)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    # env setup (before the run folder: a run that cannot start leaves none behind): one simulator per map
    T, B = args.num_steps, args.num_envs
    Bm = B // K  # envs per map
    seeds = map_seeds(args.seed, K)
    try:
        envs = [make_env(args.backend, m, Bm, device, seeds[k]) for k, m in enumerate(maps)]
        n_eval = args.eval_episodes if args.backend == "sim" else 1
        eval_envs = [make_env(args.backend, m, n_eval, device, eval_seed(seeds[k])) for k, m in enumerate(maps)]
    except ImportError as e:  # sc2_envs.backends.SC2BackendUnavailable: SMAC, the game or its maps missing
        cli_error(f"--backend {args.backend}: {str(e).splitlines()[0]} Expected oxwhirl SMAC, StarCraft II and SMAC's maps "
                  "(see sc2_envs.backends.make_sc2_backend), or --backend sim")  # fmt: skip
    infos = [env.get_env_info() for env in envs]
    dropout = ally_dropout_for(args.ally_dropout, maps, args.backend, infos)
    try:  # one actor per class and one critic, with a view bound to each map
        policy, critic, pols, crits = build_multi_map_models(
            infos, args.actor, hidden=args.hidden, actor_layers=args.actor_layers, device=device, recurrent=args.recurrent
        )
    except ValueError as e:  # maps whose entity widths differ cannot share weights
        cli_error(f"--map {' '.join(maps)}: {e}")
    zero_shot = run.zero_shot_maps(policy, infos[0], device)  # --eval-maps
    run.init_weights(policy, critic)  # --init-from: start from a checkpoint's weights (no-op without it)
    classes = list(policy.classes)
    actor_optimizers = {c: torch.optim.Adam(policy.actors[c].parameters(), lr=args.learning_rate, eps=1e-5) for c in classes}
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate, eps=1e-5)
    value_norm = critic.value_norm  # the returns' running mean and std: the critic outputs normalised values
    rows_per_pass = pass_rows_for(args.pass_rows, device)
    # TRY NOT TO MODIFY: run folder, run_meta.json, TensorBoard (run.writer), wandb, eval.csv, the first screen
    run.start(
        device, policy, critic, optimizers={**actor_optimizers, "critic": critic_optimizer}, envs=envs, eval_policies=pols,
        eval_envs=eval_envs, seeds=seeds, zero_shot=zero_shot, dropout=dropout, name="HAPPO", infos=infos,
        extra_lines=[
            f"update: {args.update_epochs} epochs x {args.num_minibatches} minibatches of {args.minibatch_size} env steps"
            f"{' (actors: whole envs, recurrent)' if args.recurrent else ''}, "
            f"passes of <= {rows_per_pass if rows_per_pass < 1 << 62 else 'all'} rows | "
            f"torch threads {torch.get_num_threads()}",
        ],
    )  # fmt: skip

    # ALGO Logic: Storage setup (one rollout buffer per map: team sizes differ, states never mix): obs [T, Bm, N, O],
    # states [T, Bm, S], avail_actions [T, Bm, N, A], actions and logprobs [T, Bm, N], the rest [T, Bm] (one team;
    # episode_starts: the step's observation opens an episode, CleanRL ppo_atari_lstm.py's dones)
    bufs = []
    for info in infos:
        N, A, O, S = info["n_agents"], info["n_actions"], info["obs_shape"], info["state_shape"]
        shapes = {"obs": (N, O), "states": (S,), "avail_actions": (N, A), "actions": (N,), "logprobs": (N,)}
        dtypes = {"actions": torch.int64} | dict.fromkeys(
            ("avail_actions", "terminateds", "truncateds", "episode_starts"), torch.bool
        )
        bufs.append({
            key: torch.zeros((T, Bm, *shapes.get(key, ())), dtype=dtypes.get(key, torch.float32), device=device)
            for key in (*shapes, "rewards", "terminateds", "truncateds", "final_values", "values", "episode_starts")
        })  # fmt: skip
    # the actors' memory per map (--recurrent): each agent's GRU state [Bm, N, hidden], and whether the next
    # observation opens an episode [Bm]; both go into resume.pt
    memory = {
        "hidden": [pol.initial_hidden(Bm) if args.recurrent else None for pol in pols],
        "episode_start": [torch.ones(Bm, dtype=torch.bool, device=device) for _ in maps],
    }

    def actor_passes(s, positions, limit):  # a class's agent-steps in passes (recurrent: of whole env sequences)
        if not args.recurrent:
            return positions.split(limit)
        return sequence_passes(positions, s["rows"], Bm, limit)

    # TRY NOT TO MODIFY: start the game (or continue the resumed one where it stopped)
    global_step = run.global_step
    if run.resumed is None:
        started = torch.ones(Bm, dtype=torch.bool, device=device)
        next_obs = [drop_allies(env, env.reset(seed=seeds[k]), started, dropout[k]) for k, env in enumerate(envs)]
    else:
        next_obs = run.restore(memory)
    run.open_logs(next_obs, memory)

    iteration = run.start_iteration  # run.finish's value when a resumed run has no iteration left
    for iteration in range(run.start_iteration + 1, args.num_iterations + 1):
        run.begin_iteration()
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            for opt in actor_optimizers.values():
                opt.param_groups[0]["lr"] = frac * args.learning_rate
            critic_optimizer.param_groups[0]["lr"] = frac * args.critic_learning_rate
        initial_hidden = list(memory["hidden"])  # the GRU states the update replays the rollout from

        for step in range(T):
            global_step += B
            for k in range(K):
                buf, nobs = bufs[k], next_obs[k]
                buf["obs"][step], buf["states"][step] = nobs["obs"], nobs["state"]
                buf["avail_actions"][step] = nobs["avail_actions"]
                buf["episode_starts"][step] = memory["episode_start"][k]

                # ALGO LOGIC: action logic
                with torch.no_grad():
                    if args.recurrent:
                        action, logprob, memory["hidden"][k] = pols[k].act_recurrent(
                            nobs["obs"], nobs["avail_actions"], memory["hidden"][k], memory["episode_start"][k]
                        )
                    else:
                        action, logprob = pols[k].act(nobs["obs"], nobs["avail_actions"])
                    buf["values"][step] = value_norm.denormalize(crits[k](nobs["state"]))
                buf["actions"][step], buf["logprobs"][step] = action, logprob

                # TRY NOT TO MODIFY: execute the game and log data.
                with run.env_time():
                    nobs = next_obs[k] = envs[k].step(action)
                    # auto-reset: a finished env's obs open its next episode (its last state is nobs["final_state"])
                    drop_allies(envs[k], nobs, nobs["terminated"] | nobs["truncated"], dropout[k])
                memory["episode_start"][k] = nobs["terminated"] | nobs["truncated"]
                buf["rewards"][step] = nobs["reward"]
                buf["terminateds"][step], buf["truncateds"][step] = nobs["terminated"], nobs["truncated"]
                bootstrap = nobs["truncated"] & ~nobs["terminated"]
                buf["final_values"][step] = 0.0
                if bool(bootstrap.any()):
                    with torch.no_grad():
                        v_final = value_norm.denormalize(crits[k](nobs["final_state"]))
                    buf["final_values"][step] = torch.where(bootstrap, v_final, 0.0)
                run.record_step(k, nobs)  # episode returns, lengths and wins
        mean_return = run.log_episodes(global_step)

        # per map: bootstrap value if not done, GAE, then flatten over env steps (agents stay a dimension)
        data = []
        for k in range(K):
            buf, info = bufs[k], infos[k]
            with torch.no_grad():
                next_value = value_norm.denormalize(crits[k](next_obs[k]["state"]))
                advantages, returns = compute_gae(
                    buf["rewards"], buf["values"], next_value, buf["terminateds"], buf["truncateds"], buf["final_values"],
                    args.gamma, args.gae_lambda,
                )  # fmt: skip
            d = {
                key: buf[key].reshape(T * Bm, *buf[key].shape[2:])
                for key in ("obs", "states", "avail_actions", "actions", "logprobs")
            }
            d["returns"], d["values"] = returns.reshape(-1), buf["values"].reshape(-1)
            d["alive"] = alive_mask(d["avail_actions"]).float()  # SMAC: stop is available exactly to the living
            adv = advantages.reshape(-1, 1).expand(-1, info["n_agents"])
            if args.norm_adv:  # per map, over its alive agents: each map's advantages on one scale
                mean = masked_mean(adv, d["alive"])
                std = masked_mean((adv - mean) ** 2, d["alive"]).sqrt()
                adv = (adv - mean) / (std + 1e-5)
            d["advantages"] = adv
            data.append(d)
        sizes = [T * Bm] * K
        mb_size = T * Bm // args.num_minibatches  # env steps of each map per minibatch
        # what a recurrent actor replays its sequences from (None: feed-forward actors read one agent-step at a time)
        rollout_memory = [
            RolloutMemory(initial_hidden[k], bufs[k]["episode_starts"]) if args.recurrent else None for k in range(K)
        ]

        # ALGO LOGIC: HAPPO's sequential update of the class actors, each weighted by the factor M (per map's env step)
        factor = [torch.ones(T * Bm, device=device) for _ in maps]
        class_stats = {}
        order = list(range(len(classes))) if args.fixed_order else torch.randperm(len(classes)).tolist()
        for c in (classes[i] for i in order):
            # class_batch[k]: the class's alive agent-steps on map k (in SMACv2, of class c at that step)
            class_batch = {}
            for k in (k for k in range(K) if c in pols[k].class_agents):
                d = data[k]
                # rows: each agent-step's env step (to read its M); pos: the agent's place among the class's
                # agents (a healer's heal targets depend on it); flat: its index in the map's [T*Bm*N] batch
                rows, pos, flat = pols[k].class_rows(c, d["obs"], d["alive"])
                class_batch[k] = {"rows": rows, "pos": pos, "n_c": pols[k].agent_ids(c).numel()}
                for key in ("obs", "avail_actions", "actions", "logprobs", "advantages"):
                    class_batch[k][key] = d[key].reshape(-1, *d[key].shape[2:])[flat]
            if all(s["rows"].numel() == 0 for s in class_batch.values()):  # dead for the whole batch (HARL skips it)
                continue
            # pi_old of the ratio and of M's update below is the rollout's log-prob: HARL recomputes it before the
            # class's update, the same value, as the class's actor has not changed since the rollout
            totals, n_updates = torch.zeros(4, device=device), 0
            for _epoch in range(args.update_epochs):
                if args.recurrent:  # CleanRL ppo_atari_lstm.py: minibatches over envs, all T steps of each
                    mbs = sequence_minibatch_indices([Bm] * K, T, args.num_minibatches, device)
                else:
                    mbs = minibatch_indices(sizes, args.num_minibatches, device)
                split = {
                    k: split_rows_by_minibatch(s["rows"], [mb[k] for mb in mbs], sizes[k]) for k, s in class_batch.items()
                }
                for j in range(args.num_minibatches):
                    # the minibatch's agent-steps of every map in passes of at most pass_rows (one map each): the
                    # gradients of the passes add up to the whole minibatch's
                    passes = [(k, p) for k in class_batch for p in actor_passes(class_batch[k], split[k][j], rows_per_pass)]
                    n = sum(p.numel() for _, p in passes)
                    actor_optimizers[c].zero_grad()
                    sums = torch.zeros(4, device=device)
                    for k, i in passes:
                        s = class_batch[k]
                        dist = pols[k].class_dist_at(
                            c, s["obs"][i], s["avail_actions"][i], s["pos"][i], s["rows"][i], rollout_memory[k]
                        )
                        pg, ent, kl, clipped = happo_actor_loss(dist, s["actions"][i], s["logprobs"][i], s["advantages"][i],
                                                                factor[k][s["rows"][i]], args.clip_coef)  # fmt: skip
                        # CleanRL's loss (pg_loss - ent_coef * entropy_loss, no value term) as a mean over n agent-steps
                        ((pg - args.ent_coef * ent) / n).backward()
                        sums += torch.stack([pg.detach(), ent.detach(), kl, clipped])
                    if n == 0:  # no alive agent of the class in this minibatch: Adam still steps, with a zero
                        # gradient, as HARL steps every minibatch (its momentum moves the weights a little)
                        for p in policy.actors[c].parameters():
                            p.grad = torch.zeros_like(p)
                    nn.utils.clip_grad_norm_(policy.actors[c].parameters(), args.max_grad_norm)
                    actor_optimizers[c].step()
                    pg_loss, entropy_loss, approx_kl, clipfrac = sums / n if n else sums
                    totals += torch.stack([pg_loss, entropy_loss, approx_kl, clipfrac])
                    n_updates += 1
                if args.target_kl is not None and approx_kl > args.target_kl:
                    break
            with torch.no_grad():  # M times the class's new/old ratios, per map's env step
                for k, s in class_batch.items():
                    if s["rows"].numel() == 0:
                        continue
                    chunk = min(rows_per_pass, max(1, mb_size * s["n_c"]))  # a minibatch's agent-steps at most (memory)
                    chunks = actor_passes(s, torch.arange(s["rows"].numel(), device=device), chunk)
                    new_logprob = torch.zeros_like(s["logprobs"])
                    for i in chunks:
                        new_logprob[i] = (
                            pols[k]
                            .class_dist_at(c, s["obs"][i], s["avail_actions"][i], s["pos"][i], s["rows"][i], rollout_memory[k])
                            .log_prob(s["actions"][i])
                        )
                    factor[k] = happo_factor_update(factor[k], new_logprob, s["logprobs"], s["rows"], s["pos"], s["n_c"])
            for tag, total in zip(("policy_loss", "entropy", "approx_kl", "clipfrac"), totals, strict=True):
                class_stats.setdefault(tag, []).append(float(total) / n_updates)
                run.writer.add_scalar(f"losses/{tag}/{c}", class_stats[tag][-1], global_step)
        for tag, vals in class_stats.items():  # CleanRL's tags: the mean over the classes
            run.writer.add_scalar(f"losses/{tag}", sum(vals) / len(vals), global_step)
        all_factors = torch.cat(factor)
        run.writer.add_scalar("charts/happo_factor_mean", float(all_factors.mean()), global_step)
        run.writer.add_scalar("charts/happo_factor_std", float(all_factors.std()), global_step)

        # ALGO LOGIC: critic update (once, after all actors; HARL VCritic), each map's states through its own view
        for _epoch in range(args.update_epochs):
            for mb in minibatch_indices(sizes, args.num_minibatches, device):
                critic_optimizer.zero_grad()
                # folds the minibatch's returns into ValueNorm, then backpropagates vf_coef x the normalised value loss
                v_loss = critic_backward(crits, data, mb, args, rows_per_pass)
                nn.utils.clip_grad_norm_(critic.parameters(), args.max_grad_norm)
                critic_optimizer.step()

        y_pred, y_true = torch.cat([d["values"] for d in data]), torch.cat([d["returns"] for d in data])
        var_y = torch.var(y_true)
        explained_var = float("nan") if var_y == 0 else float(1 - torch.var(y_true - y_pred) / var_y)

        # TRY NOT TO MODIFY: record rewards for plotting purposes
        run.writer.add_scalar("charts/learning_rate", actor_optimizers[classes[0]].param_groups[0]["lr"], global_step)
        run.writer.add_scalar("losses/value_loss", float(v_loss), global_step)
        run.writer.add_scalar("losses/explained_variance", explained_var, global_step)
        if run.end_iteration(iteration, global_step, mean_return):  # evaluation, checkpoints, progress line
            break

    run.finish(iteration, global_step)
