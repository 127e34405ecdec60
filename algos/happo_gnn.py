# HAPPO (Kuba et al., ICLR 2022; HARL, JMLR 2024) with one count-invariant attention actor per unit class.
# Algorithm facts: PKU-MARL/HARL happo.py, v_critic.py, valuenorm.py, on_policy_ha_runner.py; style: CleanRL ppo.py.
"""Train HAPPO agents on a SMAC map of the embedded simulator.

    python algos/happo_gnn.py --map 2s3z

Each iteration collects ``num_steps`` env steps from ``num_envs`` envs, computes GAE on the
centralized value (bootstrapping at time limits, not at battle ends), then updates the class actors
one after the other in a random order of classes. The agents of one class share an actor, so a
class is one "agent" of HAPPO's sequential scheme: its clipped surrogate is averaged over its alive
agents and weighted per env step by the factor ``M`` (the product of the new/old probability ratios
of the classes updated before it, detached); after its update ``M`` is multiplied by the ratios of
all of its agents. The critic is updated last. Dead agents (only no-op available) are masked out of
the advantage normalisation, the surrogate and the entropy.

The first lines printed give the map, backend, envs, device, obs/state sizes, classes and parameter
counts; then a progress bar (on a terminal; otherwise one line per iteration) shows the mean
return of the training episodes finished so far (nothing before the first one), the last greedy win
rate and the env steps per second. Each run gets its own new folder ``runs/<run_name>/``
(``<map>__<exp_name>__<seed>__<unix time>``, with ``-2``, ``-3``, ... if taken; see
``sc2_envs.runs``): ``run_meta.json`` (full config, command line, git commit, package versions),
TensorBoard events with CleanRL's tags plus ``charts/win_rate`` and per-class ``losses/*/<class>``,
``eval.csv`` (one row per evaluation of 32 greedy episodes) and, at every evaluation, the
checkpoints ``<exp_name>.pt`` (last) and ``<exp_name>_best.pt`` (best greedy win rate; see
``models.load_checkpoint``) and ``resume.pt``. Open them with ``tensorboard --logdir runs``.

Ctrl-C (SIGINT) or SIGTERM finishes the current iteration, evaluates, writes the checkpoints, closes
the logs, prints one line saying where everything is and exits with status 0; a second signal
aborts at once. ``--resume runs/<run_name>`` continues such a run in the same folder (optimisers,
learning-rate schedule, value normalisation, RNG states, the simulator's state and the counters),
so that its curves continue the old ones: stopped at an iteration boundary and resumed, a run ends
with the same parameters, bit for bit, as one that was never stopped.
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

from models import build_models, save_checkpoint
from models.common import masked_mean
from sc2_envs import runs
from sc2_envs.evaluation import evaluate
from sc2_envs.sim.rng import eval_seed


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
    """a run folder (or its resume.pt) to continue, in the same folder; only --total-timesteps, --time-budget-s, --torch-threads and --track may change"""

    # Algorithm specific arguments
    map: str = "2s3z"
    """the SMAC map (sc2_envs.list_maps())"""
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
    torch_threads: int = 1
    """torch CPU threads (0: torch's default; 1 avoids thread oversubscription with the small batched ops)"""
    time_budget_s: float = 0.0
    """stop training after this many wall-clock seconds of this process (0: no limit); the final evaluation still runs"""

    # to be filled in runtime
    batch_size: int = 0
    """the batch size (computed in runtime)"""
    minibatch_size: int = 0
    """the mini-batch size in env steps (computed in runtime)"""
    num_iterations: int = 0
    """the number of iterations (computed in runtime)"""


def make_env(backend: str, map_name: str, num_envs: int, device: torch.device, seed: int):
    """The batched env of the contract: the embedded simulator, or one real-SC2 env through SMAC."""
    if backend == "sim":
        import sc2_envs

        return sc2_envs.make_batched(map_name, num_envs=num_envs, device=device, seed=seed, autoreset=True)
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


def happo_actor_loss(dist, actions, behaviour_logprob, advantages, factor, active, clip_coef):
    """HAPPO's clipped surrogate for one class, weighted by the factor M, over alive agents.

    ``dist``: the class's ``MaskedCategorical`` over ``[R, n_c]``; ``actions``, ``behaviour_logprob``,
    ``advantages``, ``active`` (1 alive, 0 dead): ``[R, n_c]``; ``factor [R]``. Returns
    ``(pg_loss, entropy, approx_kl, clipfrac)``; ``pg_loss = -mean_alive(M * min(r A, clip(r) A))``
    (HARL ``happo.py``; M >= 0, so this equals the paper's ``min(r M A, clip(r) M A)``).
    """
    logratio = dist.log_prob(actions) - behaviour_logprob
    ratio = logratio.exp()
    with torch.no_grad():
        approx_kl = masked_mean((ratio - 1) - logratio, active)
        clipfrac = masked_mean(((ratio - 1.0).abs() > clip_coef).float(), active)
    surr = torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * advantages)
    pg_loss = -masked_mean(factor.unsqueeze(-1) * surr, active)
    return pg_loss, masked_mean(dist.entropy(), active), approx_kl, clipfrac


def value_loss_fn(values, old_values, targets, clip_coef, clip_vloss, huber_delta):
    """HARL's value loss: Huber (or 1/2 squared) error, clipped around the old values, mean over samples."""

    def err(v):
        return F.huber_loss(v, targets, reduction="none", delta=huber_delta) if huber_delta > 0 else 0.5 * (v - targets) ** 2

    loss = err(values)
    if clip_vloss:
        loss = torch.max(loss, err(old_values + (values - old_values).clamp(-clip_coef, clip_coef)))
    return loss.mean()


RESUME_CHANGEABLE = ("total_timesteps", "time_budget_s", "torch_threads", "track", "cuda")
"""The flags a resumed run may change (``--resume``); every other flag keeps the run's saved value."""


def check_args(args: Args) -> None:
    """Reject bad settings before anything is created; messages name the flag, value and expectation."""
    from sc2_envs import list_maps

    def need(ok: bool, flag: str, expected: str) -> None:
        if not ok:
            runs.cli_error(f"--{flag.replace('_', '-')} {getattr(args, flag)!r}: expected {expected}")

    need(args.backend in ("sim", "sc2"), "backend", "sim or sc2")
    need(args.backend == "sim" or args.num_envs == 1, "num_envs", "1 with --backend sc2 (it runs one StarCraft II game)")
    need(args.map in list_maps("all"), "map", "one of " + ", ".join(list_maps("all")))  # v1 maps and SMACv2 scenarios
    need(args.actor in ("gnn", "mlp"), "actor", "gnn or mlp")
    for flag in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "eval_episodes", "eval_interval", "hidden"):
        if hasattr(args, flag):
            need(getattr(args, flag) >= 1, flag, "an integer >= 1")
    need(args.seed >= 0, "seed", "a non-negative integer")
    need(0.0 < args.gamma <= 1.0, "gamma", "a discount in (0, 1]")
    need(0.0 <= args.gae_lambda <= 1.0, "gae_lambda", "a value in [0, 1]")
    need(args.time_budget_s >= 0, "time_budget_s", "seconds >= 0 (0: no budget)")
    for flag in ("learning_rate", "critic_learning_rate", "clip_coef"):
        if hasattr(args, flag):
            need(getattr(args, flag) > 0, flag, "a value > 0")
    batch = args.num_envs * args.num_steps
    need(
        args.num_minibatches <= batch and batch % args.num_minibatches == 0,
        "num_minibatches",
        f"a divisor of the batch of {batch} env steps (--num-envs x --num-steps), for equal minibatches",
    )
    need(
        args.total_timesteps >= batch, "total_timesteps", f"at least one batch of {batch} env steps (--num-envs x --num-steps)"
    )


if __name__ == "__main__":
    cli = tyro.cli(Args)
    resumed, run_dir = None, None
    if cli.resume:  # continue a run: its saved Args, with the few flags a continuation may change
        try:
            resumed, run_dir = runs.load_resume(cli.resume)
            args = runs.resume_args(resumed["args"], cli, Args(), RESUME_CHANGEABLE)
        except (OSError, ValueError) as e:
            runs.cli_error(str(e))
        args.resume = cli.resume
    else:
        args = cli
    check_args(args)
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    args.num_iterations = max(1, args.total_timesteps // args.batch_size)
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

    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    # env setup (before the run folder: a run that cannot start leaves none behind)
    try:
        envs = make_env(args.backend, args.map, args.num_envs, device, args.seed)
        eval_envs = make_env(
            args.backend, args.map, args.eval_episodes if args.backend == "sim" else 1, device, eval_seed(args.seed)
        )
    except ImportError as e:  # sc2_envs.backends.SC2BackendUnavailable: SMAC, the game or its maps missing
        runs.cli_error(
            f"--backend {args.backend}: {str(e).splitlines()[0]} Expected oxwhirl SMAC, StarCraft II and SMAC's maps "
            "(see sc2_envs.backends.make_sc2_backend), or --backend sim"
        )
    env_info = envs.get_env_info()
    N, A, O, S = env_info["n_agents"], env_info["n_actions"], env_info["obs_shape"], env_info["state_shape"]

    policy, critic = build_models(env_info, args.actor, hidden=args.hidden, actor_layers=args.actor_layers, device=device)
    classes = list(policy.classes)
    actor_optimizers = {c: torch.optim.Adam(policy.actors[c].parameters(), lr=args.learning_rate, eps=1e-5) for c in classes}
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate, eps=1e-5)

    # one new folder per run (never reused), or the resumed run's own folder
    if run_dir is None:
        run_dir = runs.make_run_dir("runs", f"{args.map}__{args.exp_name}__{args.seed}__{int(time.time())}")
        runs.write_run_meta(run_dir, args, run_name=run_dir.name, script=os.path.basename(__file__))
    else:
        runs.note_resume(run_dir, from_global_step=resumed["global_step"], config=args)
    run_name = run_dir.name
    if args.track:
        import wandb

        wandb.init(
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            sync_tensorboard=True,
            config=vars(args),
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
            "|param|value|\n|-|-|\n" + "\n".join(f"|{key}|{value}|" for key, value in vars(args).items()),
        )

    n_params = policy.n_params()
    print(
        f"HAPPO ({args.actor}) on {args.map} | backend {args.backend} | {args.num_envs} envs x {args.num_steps} steps "
        f"= {args.batch_size} env steps/iteration, {args.num_iterations} iterations | device {device}"
    )
    print(f"obs {O}, state {S}, actions {A}, agents {N}, episode limit {env_info['episode_limit']} env steps")
    print(
        "classes: "
        + ", ".join(f"{c} x{len(policy.class_agents[c])} ({n_params[c]:,} params)" for c in classes)
        + f" | critic {sum(p.numel() for p in critic.parameters()):,} params"
    )
    print(f"logs: {run_dir} (tensorboard --logdir runs)", flush=True)

    # ALGO Logic: Storage setup
    T, B = args.num_steps, args.num_envs
    obs = torch.zeros((T, B, N, O), device=device)
    states = torch.zeros((T, B, S), device=device)
    avails = torch.zeros((T, B, N, A), dtype=torch.bool, device=device)
    actions = torch.zeros((T, B, N), dtype=torch.int64, device=device)
    logprobs = torch.zeros((T, B, N), device=device)
    rewards = torch.zeros((T, B), device=device)
    terminateds = torch.zeros((T, B), dtype=torch.bool, device=device)
    truncateds = torch.zeros((T, B), dtype=torch.bool, device=device)
    final_values = torch.zeros((T, B), device=device)
    values = torch.zeros((T, B), device=device)

    # TRY NOT TO MODIFY: start the game (or continue the resumed one where it stopped)
    global_step, start_iteration, elapsed_before = 0, 0, 0.0
    win_rate, best = float("nan"), None
    ep_return = torch.zeros(B, device=device)
    ep_length = torch.zeros(B, device=device)
    if resumed is None:
        next_obs = envs.reset(seed=args.seed)
    else:
        policy.load_state_dict(resumed["actors"])
        critic.load_state_dict(resumed["critic"])
        for c in classes:
            actor_optimizers[c].load_state_dict(resumed["optimizers"][c])
        critic_optimizer.load_state_dict(resumed["optimizers"]["critic"])
        if resumed["env"] is not None and hasattr(envs, "load_state_dict"):
            envs.load_state_dict(resumed["env"])  # the simulator continues every env bit for bit
            next_obs = {k: v.to(device) for k, v in resumed["next_obs"].items()}
            ep_return.copy_(resumed["ep_return"])
            ep_length.copy_(resumed["ep_length"])
        else:  # a real game cannot be snapshot: its episodes in progress are lost, new ones start now
            print("the env state cannot be restored on this backend: new episodes start now")
            next_obs = envs.reset()
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
        eval_csv.writerow(["global_step", "wall_time_s", "win_rate", "eval_return", "iteration"])
    progress = runs.Progress(args.num_iterations, args.batch_size, start_iteration)

    def save_model_file(path):
        tmp = f"{path}.tmp"
        save_checkpoint(tmp, policy, critic, env_info, asdict(args), global_step)
        os.replace(tmp, path)

    def run_eval(iteration):
        global best
        frames = [] if args.capture_video else None
        res = evaluate(policy, eval_envs, args.eval_episodes, eval_seed(args.seed, iteration), frames=frames)
        wr, ret = res["win_rate"], res["mean_return"]
        writer.add_scalar("charts/win_rate", wr, global_step)
        writer.add_scalar("charts/eval_return", ret, global_step)
        eval_csv.writerow([global_step, round(time.time() - start_time, 2), wr, ret, iteration])
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
                    "args": asdict(args),
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
                    "env": envs.state_dict() if hasattr(envs, "state_dict") else None,
                    "next_obs": next_obs,
                    "ep_return": ep_return,
                    "ep_length": ep_length,
                },
            )
        return wr

    stopper = runs.GracefulStop().install()  # SIGINT / SIGTERM: finish the iteration, then stop
    iteration = start_iteration
    for iteration in range(start_iteration + 1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            for opt in actor_optimizers.values():
                opt.param_groups[0]["lr"] = frac * args.learning_rate
            critic_optimizer.param_groups[0]["lr"] = frac * args.critic_learning_rate

        fin_return = torch.zeros((), device=device)
        fin_length = torch.zeros((), device=device)
        fin_won = torch.zeros((), device=device)
        fin_count = torch.zeros((), device=device)
        for step in range(T):
            global_step += B
            obs[step], states[step], avails[step] = next_obs["obs"], next_obs["state"], next_obs["avail_actions"]

            # ALGO LOGIC: action logic
            with torch.no_grad():
                action, logprob = policy.act(next_obs["obs"], next_obs["avail_actions"])
                values[step] = critic.value_norm.denormalize(critic(next_obs["state"]))
            actions[step], logprobs[step] = action, logprob

            # TRY NOT TO MODIFY: execute the game and log data.
            next_obs = envs.step(action)
            rewards[step] = next_obs["reward"]
            terminateds[step], truncateds[step] = next_obs["terminated"], next_obs["truncated"]
            bootstrap = next_obs["truncated"] & ~next_obs["terminated"]
            final_values[step] = 0.0
            if bool(bootstrap.any()):
                with torch.no_grad():
                    v_final = critic.value_norm.denormalize(critic(next_obs["final_state"]))
                final_values[step] = torch.where(bootstrap, v_final, 0.0)
            ep_return += next_obs["reward"]
            ep_length += 1
            done = (next_obs["terminated"] | next_obs["truncated"]).float()
            fin_return += (ep_return * done).sum()
            fin_length += (ep_length * done).sum()
            fin_won += (next_obs["battle_won"].float() * done).sum()
            fin_count += done.sum()
            ep_return *= 1.0 - done
            ep_length *= 1.0 - done

        n_fin = float(fin_count)
        if n_fin > 0:
            writer.add_scalar("charts/episodic_return", float(fin_return) / n_fin, global_step)
            writer.add_scalar("charts/episodic_length", float(fin_length) / n_fin, global_step)
            writer.add_scalar("charts/train_win_rate", float(fin_won) / n_fin, global_step)

        # bootstrap value if not done
        with torch.no_grad():
            next_value = critic.value_norm.denormalize(critic(next_obs["state"]))
            advantages, returns = compute_gae(
                rewards, values, next_value, terminateds, truncateds, final_values, args.gamma, args.gae_lambda
            )

        # flatten the batch over env steps; agents stay a separate dimension
        b_obs, b_states, b_avails = obs.reshape(T * B, N, O), states.reshape(T * B, S), avails.reshape(T * B, N, A)
        b_actions, b_logprobs = actions.reshape(T * B, N), logprobs.reshape(T * B, N)
        b_returns, b_values = returns.reshape(-1), values.reshape(-1)
        b_active = (~b_avails[..., 0]).float()  # SMAC: only dead agents may (and must) take the no-op
        b_adv = advantages.reshape(-1, 1).expand(-1, N)
        if args.norm_adv:
            mean = masked_mean(b_adv, b_active)
            std = masked_mean((b_adv - mean) ** 2, b_active).sqrt()
            b_adv = (b_adv - mean) / (std + 1e-5)

        # ALGO LOGIC: HAPPO sequential update of the class actors with the factor M
        factor = torch.ones(T * B, device=device)
        class_stats = {}
        order = list(range(len(classes))) if args.fixed_order else torch.randperm(len(classes)).tolist()
        for ci in order:
            c = classes[ci]
            ids = policy.agent_ids(c)
            c_obs, c_avail, c_act = b_obs[:, ids], b_avails[:, ids], b_actions[:, ids]
            c_logp, c_active, c_adv = b_logprobs[:, ids], b_active[:, ids], b_adv[:, ids]
            c_active = c_active * policy.class_mask(c, c_obs)  # SMACv2: agents of class c in each sample
            if float(c_active.sum()) == 0:  # the whole class was dead for the whole batch (HARL skips it)
                continue
            with torch.no_grad():
                old_logp = torch.cat(
                    [
                        policy.class_dist(c, c_obs[mb], c_avail[mb]).log_prob(c_act[mb])
                        for mb in torch.arange(T * B, device=device).split(args.minibatch_size)
                    ]
                )
            pg_sum = ent_sum = kl_sum = clip_sum = 0.0
            n_updates = 0
            for _epoch in range(args.update_epochs):
                b_inds = torch.randperm(T * B, device=device)
                for mb_inds in b_inds.split(args.minibatch_size):
                    dist = policy.class_dist(c, c_obs[mb_inds], c_avail[mb_inds])
                    pg_loss, entropy_loss, approx_kl, clipfrac = happo_actor_loss(
                        dist,
                        c_act[mb_inds],
                        c_logp[mb_inds],
                        c_adv[mb_inds],
                        factor[mb_inds],
                        c_active[mb_inds],
                        args.clip_coef,
                    )
                    loss = pg_loss - args.ent_coef * entropy_loss
                    actor_optimizers[c].zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(policy.actors[c].parameters(), args.max_grad_norm)
                    actor_optimizers[c].step()
                    pg_sum, ent_sum = pg_sum + pg_loss.detach(), ent_sum + entropy_loss.detach()
                    kl_sum, clip_sum = kl_sum + approx_kl, clip_sum + clipfrac
                    n_updates += 1
                if args.target_kl is not None and approx_kl > args.target_kl:
                    break
            with torch.no_grad():
                new_logp = torch.cat(
                    [
                        policy.class_dist(c, c_obs[mb], c_avail[mb]).log_prob(c_act[mb])
                        for mb in torch.arange(T * B, device=device).split(args.minibatch_size)
                    ]
                )
            factor = happo_factor_update(factor, new_logp, old_logp, c_active)
            for tag, total in (("policy_loss", pg_sum), ("entropy", ent_sum), ("approx_kl", kl_sum), ("clipfrac", clip_sum)):
                class_stats.setdefault(tag, []).append(float(total) / n_updates)
                writer.add_scalar(f"losses/{tag}/{c}", class_stats[tag][-1], global_step)
        for tag, vals in class_stats.items():  # CleanRL's tags: the mean over the classes
            writer.add_scalar(f"losses/{tag}", sum(vals) / len(vals), global_step)
        writer.add_scalar("charts/happo_factor_mean", float(factor.mean()), global_step)
        writer.add_scalar("charts/happo_factor_std", float(factor.std()), global_step)

        # ALGO LOGIC: critic update (once, after all actors; HARL VCritic)
        for _epoch in range(args.update_epochs):
            b_inds = torch.randperm(T * B, device=device)
            for mb_inds in b_inds.split(args.minibatch_size):
                newvalue = critic(b_states[mb_inds])
                critic.value_norm.update(b_returns[mb_inds])
                targets = critic.value_norm.normalize(b_returns[mb_inds])
                old_v = critic.value_norm.normalize(b_values[mb_inds])
                v_loss = value_loss_fn(newvalue, old_v, targets, args.clip_coef, args.clip_vloss, args.huber_delta)
                critic_optimizer.zero_grad()
                (v_loss * args.vf_coef).backward()
                nn.utils.clip_grad_norm_(critic.parameters(), args.max_grad_norm)
                critic_optimizer.step()

        y_pred, y_true = b_values, b_returns
        var_y = torch.var(y_true)
        explained_var = float("nan") if var_y == 0 else float(1 - torch.var(y_true - y_pred) / var_y)

        # TRY NOT TO MODIFY: record rewards for plotting purposes
        sps = int(global_step / (time.time() - start_time))
        writer.add_scalar("charts/learning_rate", actor_optimizers[classes[0]].param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", float(v_loss.detach()), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", sps, global_step)
        out_of_time = args.time_budget_s > 0 and time.time() - session_start > args.time_budget_s
        stopping = stopper.requested or out_of_time
        if iteration % args.eval_interval == 0 or iteration == args.num_iterations or stopping:
            win_rate = run_eval(iteration)
        progress.update(iteration, global_step, float(fin_return) / n_fin if n_fin > 0 else None, win_rate, sps)
        if stopping:
            break

    stopper.restore()
    progress.close()
    eval_log.close()
    writer.close()
    if iteration == start_iteration:
        how = f"nothing to do: the run already has {args.num_iterations} iterations"
    elif stopper.requested:
        how = f"stopped by {stopper.reason} after iteration {iteration}/{args.num_iterations}"
    elif iteration < args.num_iterations:
        how = (
            f"time budget of {args.time_budget_s:.0f} s (this process) reached after iteration "
            f"{iteration}/{args.num_iterations}"
        )
    else:
        how = f"finished {args.num_iterations} iterations"
    saved = (
        f"checkpoints {args.exp_name}.pt, {args.exp_name}_best.pt; continue with --resume {run_dir}"
        if args.save_model
        else "no checkpoint (--no-save-model)"
    )
    print(
        f"{how}: {global_step} env steps, {time.time() - start_time:.0f} s, greedy win rate {win_rate:.3f} over "
        f"{args.eval_episodes} episodes | run folder {run_dir}: eval.csv, TensorBoard events, {saved}",
        flush=True,
    )
