# HATRPO (Kuba et al., ICLR 2022; Zhong et al., HARL, JMLR 2024) with one count-invariant attention actor per unit class.
# Algorithm facts: PKU-MARL/HARL hatrpo.py / utils/trpo_util.py / on_policy_ha_runner.py; style: CleanRL ppo.py.
"""Train HATRPO agents on a SMAC map or SMACv2 scenario of the embedded simulator (or several).

    python algos/hatrpo_gnn.py --map 2s3z
    python algos/hatrpo_gnn.py --map 2s3z 3s5z --num-envs 256   # one policy for both team sizes

This file is ``happo_gnn.py`` with the class actors' update replaced by HATRPO's trust-region step: each
class actor takes one step per iteration, the natural gradient of the M-weighted surrogate by conjugate
gradient with Fisher-vector products of the *true* masked categorical KL (HARL's ``kl_approx`` in
``utils/trpo_util.py`` is a per-action proxy instead), then a backtracking line search that accepts a step
only if the KL stays below ``kl_threshold`` and the improvement is at least ``accept_ratio`` of the linear
prediction. Classes are updated in a random order with HAPPO's factor ``M``; rollout, GAE, critic, multi-map
training and the run harness are those of ``happo_gnn.py`` (``losses/kl/<class>``,
``losses/step_accepted/<class>`` report the line search), except that a critic minibatch runs in one pass
(``critic_loss``; no ``--pass-rows``), denormals are not flushed (no ``--flush-denormal``) and the default
batch is 256 envs x 40 steps, evaluated every iteration. The numerics the step is built from (flat
gradients, conjugate gradient, the Fisher-vector product) are in ``models/trust_region.py``.
"""

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import random
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models import build_multi_map_models
from models.common import masked_mean
from models.minibatches import minibatch_indices
from models.trust_region import agent_steps, conjugate_gradient, flat_grad, kl_fisher, set_flat_params
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
    --torch-threads, --cuda and --track may change (bit for bit as if never stopped with the run's own values; another
    --torch-threads or device continues it equal up to float rounding only)"""

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
    critic_learning_rate: float = 5e-4
    """the learning rate of the critic"""
    num_envs: int = 256
    """the number of parallel environments"""
    num_steps: int = 40
    """the number of steps to run in each environment per policy rollout"""
    anneal_lr: bool = False
    """toggle learning rate annealing for the critic (the actors take trust-region steps, with no learning rate)"""
    gamma: float = 0.99
    """the discount factor gamma"""
    gae_lambda: float = 0.95
    """the lambda for the general advantage estimation"""
    num_minibatches: int = 4
    """the number of mini-batches (of env steps) per critic epoch (the actors use the whole batch);
    it must divide num_envs x num_steps"""
    update_epochs: int = 5
    """the number of epochs (passes over the batch) to update the critic"""
    kl_threshold: float = 0.01
    """the trust region: maximum mean KL(old || new) per class actor step (HARL 3s5z)"""
    ls_step: int = 10
    """line search trials"""
    accept_ratio: float = 0.5
    """minimum ratio of actual to expected improvement for a line-search step"""
    backtrack_coeff: float = 0.5
    """step shrink factor per line-search trial (HARL 3s5z)"""
    cg_iters: int = 10
    """conjugate gradient iterations"""
    cg_damping: float = 0.1
    """damping added to the Fisher-vector product"""
    fisher_product: Literal["gauss-newton", "double-backward"] = "gauss-newton"
    """how the Fisher-vector products are computed (the same matrix up to float rounding): the
    Gauss-Newton form J^T M J v, or the KL's double backward as HARL does (about 1.5-2x slower per
    product, 1.4x per whole run on 2s3z; benchmarks/train_sps.py --script hatrpo_gnn.py)"""
    norm_adv: bool = True
    """toggles advantage normalisation (per map, over all its alive agents, as HARL's `FP` state type)"""
    clip_coef: float = 0.2
    """clips the value update around the old values (HARL; no policy clipping in TRPO)"""
    clip_vloss: bool = True
    """toggles whether or not to use a clipped loss for the value function"""
    vf_coef: float = 1.0
    """coefficient of the value function loss"""
    huber_delta: float = 10.0
    """Huber loss delta of the value loss (HARL); 0 for squared error"""
    max_grad_norm: float = 10.0
    """the maximum norm for the gradient clipping"""
    fixed_order: bool = False
    """update the classes in a fixed order instead of a random permutation per iteration"""
    hidden: int = 64
    """width of the networks"""
    actor_layers: int = 1
    """attention blocks in each GNN actor"""
    eval_episodes: int = 32
    """greedy evaluation episodes per evaluation (one per env of a separate eval simulator)"""
    eval_interval: int = 1
    """iterations between evaluations (plus one at the end); the defaults evaluate every 256 x 40 = 10,240 env steps"""
    eval_maps: tuple[str, ...] = ()
    """maps never trained on, played zero-shot at every evaluation (`--eval-maps 3s5z 3s5z_vs_3s6z` on a 2s3z run):
    --eval-episodes greedy episodes each, logged as `charts/zero_shot_win_rate/<map>` and eval.csv columns; the actors
    must cover each map's unit classes; never used to pick `<exp_name>_best.pt`"""
    torch_threads: int = 0
    """torch CPU threads (0: torch's default, one per physical core); the simulator keeps this count"""
    time_budget_s: float = 0.0
    """stop training after this many wall-clock seconds of this process (0: no limit); the final evaluation still runs (an
    extra eval.csv row when the stop falls between scheduled evaluations); checked
    at the end of each iteration, so a run overruns it by up to one iteration (rollout and update)"""
    ally_dropout: tuple[float, ...] = (0.0,)
    """probability, in [0, 1), that a training episode starts with one of its allies (drawn uniformly) removed: one value
    for every --map or one per map (`--ally-dropout 0 0.5` on `--map 3m 8m`), so that the actors meet battles in which they are
    outnumbered (`SMACSim.remove_allies`; --backend sim). Evaluations never remove allies. 0: off"""
    init_from: str = ""
    """a checkpoint (`<exp_name>.pt` of this script or happo_gnn.py) whose actor and critic weights start this run (fresh
    optimisers, env steps counted from 0), e.g. to fine-tune with --ally-dropout; the classes, network sizes and critic must
    match this run's"""

    # to be filled in runtime
    batch_size: int = 0
    """computed at runtime, do not set (refused): the batch size, --num-envs x --num-steps"""
    minibatch_size: int = 0
    """computed at runtime, do not set (refused): the mini-batch size in env steps, batch size / --num-minibatches"""
    num_iterations: int = 0
    """computed at runtime, do not set (refused): the iterations, --total-timesteps // batch size (a total below one batch is
    refused)"""


RESUME_CHANGEABLE = ("total_timesteps", "time_budget_s", "torch_threads", "track", "cuda")
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


def trpo_step(pols, c, obs, avail, act, behaviour_logp, adv, factor, pos, args):
    """One HATRPO step of class ``c``'s actor on the whole batch; returns logging stats and log-probs.

    Every argument but ``c`` and ``args`` is a list with one entry per map: ``pols[k]``, the policy view bound
    to map ``k`` (all share class ``c``'s actor), and the class's alive agent-steps there (``ClassPolicy.class_rows``):
    ``obs [P_k, O]``, ``avail [P_k, A]``, ``act``, ``behaviour_logp``, ``adv``, ``factor`` (HAPPO's M of each
    agent-step's env step) and ``pos`` (the agent's position among the class's agents) ``[P_k]``.

    Surrogate ``L = mean(M * ratio * A)`` over all agent-steps of all maps; ``x = F^-1 g`` by conjugate
    gradient with the Fisher-vector product of the mean true KL(old || new) (:func:`kl_fisher`, plus damping);
    full step ``sqrt(2 kl_threshold / x^T F x) x``; backtracking line search (HARL ``hatrpo.py``).
    """
    # Behaviour log-probs are the rollout's constants: a caller's tensor that still carries the
    # actor's graph would cancel the surrogate's gradient (d/dθ exp(logp_θ - logp_θ) = 0).
    behaviour_logp = [b.detach() for b in behaviour_logp]
    params = list(pols[0].actors[c].parameters())
    old_params = torch.nn.utils.parameters_to_vector(params).detach().clone()

    def dists():
        return [p.class_dist_at(c, o, a, i) for p, o, a, i in zip(pols, obs, avail, pos, strict=True)]

    with torch.no_grad():
        old_dist = dists()
        old_logp = [d.log_prob(a) for d, a in zip(old_dist, act, strict=True)]
    n = agent_steps(old_dist)

    def surrogate_and_kl():
        ds = dists()
        terms = torch.cat(
            [
                (f * torch.exp(d.log_prob(a) - b) * ad)
                for d, a, b, ad, f in zip(ds, act, behaviour_logp, adv, factor, strict=True)
            ]
        )
        kl = torch.cat([o.kl(d) for o, d in zip(old_dist, ds, strict=True)])
        return terms.sum() / n, kl.sum() / n, ds

    surr, _, _ = surrogate_and_kl()
    g = flat_grad(surr, params)

    fvp = kl_fisher(dists, old_dist, params, args.cg_damping, args.fisher_product == "gauss-newton")
    x = conjugate_gradient(fvp, g, args.cg_iters)
    shs = 0.5 * (x @ fvp(x))
    step_frac = torch.sqrt(args.kl_threshold / shs.clamp(min=1e-12)) if float(shs) > 0 else torch.zeros((), device=x.device)
    full_step = step_frac * x
    expected_improve = float(g @ full_step)
    surr_old = float(surr.detach())
    accepted, kl_val, improve, frac = False, 0.0, 0.0, 1.0
    with torch.no_grad():
        for _ in range(args.ls_step):
            set_flat_params(params, old_params + frac * full_step)
            new_surr, kl, _ = surrogate_and_kl()
            improve, kl_val = float(new_surr) - surr_old, float(kl)
            if (
                kl_val < args.kl_threshold
                and expected_improve > 0
                and improve / expected_improve > args.accept_ratio
                and improve > 0
            ):
                accepted = True
                break
            expected_improve *= args.backtrack_coeff
            frac *= args.backtrack_coeff
        if not accepted:
            set_flat_params(params, old_params)
            kl_val, improve = 0.0, 0.0
        new_dist = dists()
        new_logp = [d.log_prob(a) for d, a in zip(new_dist, act, strict=True)]
        entropy = torch.cat([d.entropy() for d in new_dist]).sum() / n
    return {
        "policy_loss": -surr_old - improve,
        "kl": kl_val,
        "step_accepted": float(accepted),
        "step_fraction": frac if accepted else 0.0,
        "entropy": float(entropy),
        "old_logp": old_logp,
        "new_logp": new_logp,
    }


def critic_loss(critics, data, inds, args):
    """HARL's value loss of one minibatch spread over maps: one mean over all its samples (one critic step).

    ``critics[k]``: the critic's view bound to map ``k``; ``data[k]``: map ``k``'s batch (``states [R_k, S_k]``,
    unnormalised ``values`` and ``returns`` ``[R_k]``); ``inds[k]``: its env steps in the minibatch. A map's
    states go only through its own view; the value normaliser is updated with the minibatch's returns
    first (HARL ``v_critic.py``).
    """
    newvalue = torch.cat([critics[k](data[k]["states"][i]) for k, i in enumerate(inds)])
    returns = torch.cat([data[k]["returns"][i] for k, i in enumerate(inds)])
    old_values = torch.cat([data[k]["values"][i] for k, i in enumerate(inds)])
    value_norm = critics[0].value_norm
    value_norm.update(returns)
    targets, old_v = value_norm.normalize(returns), value_norm.normalize(old_values)
    return value_loss(newvalue, old_v, targets, args.clip_coef, args.clip_vloss, args.huber_delta).mean()


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
            infos, args.actor, hidden=args.hidden, actor_layers=args.actor_layers, device=device
        )
    except ValueError as e:  # maps whose entity widths differ cannot share weights
        cli_error(f"--map {' '.join(maps)}: {e}")
    zero_shot = run.zero_shot_maps(policy, infos[0], device)  # --eval-maps
    run.init_weights(policy, critic)  # --init-from: start from a checkpoint's weights (no-op without it)
    classes = list(policy.classes)
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate, eps=1e-5)
    value_norm = critic.value_norm  # the returns' running mean and std: the critic outputs normalised values
    # TRY NOT TO MODIFY: run folder, run_meta.json, TensorBoard (run.writer), wandb, eval.csv, the first screen
    run.start(
        device, policy, critic, optimizers={"critic": critic_optimizer}, envs=envs, eval_policies=pols,
        eval_envs=eval_envs, seeds=seeds, zero_shot=zero_shot, dropout=dropout, name="HATRPO", infos=infos,
        extra_lines=[
            f"update: one trust-region step per class (KL <= {args.kl_threshold}, {args.cg_iters} CG iterations with "
            f"{args.fisher_product} Fisher products, {args.ls_step} line-search trials), critic {args.update_epochs} epochs x "
            f"{args.num_minibatches} minibatches | torch threads {torch.get_num_threads()}",
        ],
    )  # fmt: skip

    # ALGO Logic: Storage setup (one rollout buffer per map: team sizes differ, states never mix): obs [T, Bm, N, O],
    # states [T, Bm, S], avail_actions [T, Bm, N, A], actions and logprobs [T, Bm, N], the rest [T, Bm] (one team)
    bufs = []
    for info in infos:
        N, A, O, S = info["n_agents"], info["n_actions"], info["obs_shape"], info["state_shape"]
        shapes = {"obs": (N, O), "states": (S,), "avail_actions": (N, A), "actions": (N,), "logprobs": (N,)}
        dtypes = {"avail_actions": torch.bool, "actions": torch.int64, "terminateds": torch.bool, "truncateds": torch.bool}
        bufs.append({
            key: torch.zeros((T, Bm, *shapes.get(key, ())), dtype=dtypes.get(key, torch.float32), device=device)
            for key in (*shapes, "rewards", "terminateds", "truncateds", "final_values", "values")
        })  # fmt: skip

    # TRY NOT TO MODIFY: start the game (or continue the resumed one where it stopped)
    global_step = run.global_step
    if run.resumed is None:
        started = torch.ones(Bm, dtype=torch.bool, device=device)
        next_obs = [drop_allies(env, env.reset(seed=seeds[k]), started, dropout[k]) for k, env in enumerate(envs)]
    else:
        next_obs = run.restore()
    run.open_logs(next_obs)

    iteration = run.start_iteration  # run.finish's value when a resumed run has no iteration left
    for iteration in range(run.start_iteration + 1, args.num_iterations + 1):
        run.begin_iteration()
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            critic_optimizer.param_groups[0]["lr"] = frac * args.critic_learning_rate

        for step in range(T):
            global_step += B
            for k in range(K):
                buf, nobs = bufs[k], next_obs[k]
                buf["obs"][step], buf["states"][step] = nobs["obs"], nobs["state"]
                buf["avail_actions"][step] = nobs["avail_actions"]

                # ALGO LOGIC: action logic
                with torch.no_grad():
                    action, logprob = pols[k].act(nobs["obs"], nobs["avail_actions"])
                    buf["values"][step] = value_norm.denormalize(crits[k](nobs["state"]))
                buf["actions"][step], buf["logprobs"][step] = action, logprob

                # TRY NOT TO MODIFY: execute the game and log data.
                with run.env_time():
                    nobs = next_obs[k] = envs[k].step(action)
                    # auto-reset: a finished env's obs open its next episode (its last state is nobs["final_state"])
                    drop_allies(envs[k], nobs, nobs["terminated"] | nobs["truncated"], dropout[k])
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

        # ALGO LOGIC: HATRPO's sequential update: one trust-region step per class actor, weighted by the factor M
        factor = [torch.ones(T * Bm, device=device) for _ in maps]
        order = list(range(len(classes))) if args.fixed_order else torch.randperm(len(classes)).tolist()
        for c in (classes[i] for i in order):
            # class_batch[k]: the class's alive agent-steps on map k (in SMACv2, of class c at that step)
            class_batch = {}
            for k in (k for k in range(K) if c in pols[k].class_agents):
                d = data[k]
                # rows: each agent-step's env step (to read its M); pos: the agent's place among the class's
                # agents (a healer's heal targets depend on it); flat: its index in the map's [T*Bm*N] batch
                rows, pos, flat = pols[k].class_rows(c, d["obs"], d["alive"])
                if rows.numel() == 0:  # a map where the class was dead for the whole batch adds nothing
                    continue
                class_batch[k] = {"rows": rows, "pos": pos, "n_c": pols[k].agent_ids(c).numel()}
                for key in ("obs", "avail_actions", "actions", "logprobs", "advantages"):
                    class_batch[k][key] = d[key].reshape(-1, *d[key].shape[2:])[flat]
            if not class_batch:  # the class was dead for the whole batch
                continue
            stats = trpo_step(
                [pols[k] for k in class_batch], c,
                *([s[key] for s in class_batch.values()]
                  for key in ("obs", "avail_actions", "actions", "logprobs", "advantages")),
                [factor[k][s["rows"]] for k, s in class_batch.items()], [s["pos"] for s in class_batch.values()], args,
            )  # fmt: skip
            old_logp, new_logp = stats.pop("old_logp"), stats.pop("new_logp")
            for j, (k, s) in enumerate(class_batch.items()):  # M times the class's new/old ratios, per map's env step
                factor[k] = happo_factor_update(factor[k], new_logp[j], old_logp[j], s["rows"], s["pos"], s["n_c"])
            for key, v in stats.items():
                run.writer.add_scalar(f"losses/{key}/{c}", v, global_step)
        all_factors = torch.cat(factor)
        run.writer.add_scalar("charts/happo_factor_mean", float(all_factors.mean()), global_step)
        run.writer.add_scalar("charts/happo_factor_std", float(all_factors.std()), global_step)

        # ALGO LOGIC: critic update (once, after all actors; HARL VCritic), each map's states through its own view
        for _epoch in range(args.update_epochs):
            for mb in minibatch_indices(sizes, args.num_minibatches, device):
                v_loss = critic_loss(crits, data, mb, args)
                critic_optimizer.zero_grad()
                (v_loss * args.vf_coef).backward()
                nn.utils.clip_grad_norm_(critic.parameters(), args.max_grad_norm)
                critic_optimizer.step()

        y_pred, y_true = torch.cat([d["values"] for d in data]), torch.cat([d["returns"] for d in data])
        var_y = torch.var(y_true)
        explained_var = float("nan") if var_y == 0 else float(1 - torch.var(y_true - y_pred) / var_y)

        # TRY NOT TO MODIFY: record rewards for plotting purposes
        run.writer.add_scalar("charts/learning_rate", critic_optimizer.param_groups[0]["lr"], global_step)
        run.writer.add_scalar("losses/value_loss", float(v_loss.detach()), global_step)
        run.writer.add_scalar("losses/explained_variance", explained_var, global_step)
        if run.end_iteration(iteration, global_step, mean_return):  # evaluation, checkpoints, progress line
            break

    run.finish(iteration, global_step)
