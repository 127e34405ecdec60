# HATRPO (Kuba et al., ICLR 2022; HARL, JMLR 2024) with one count-invariant attention actor per unit class.
# Algorithm facts: PKU-MARL/HARL hatrpo.py / utils/trpo_util.py / on_policy_ha_runner.py; style: CleanRL ppo.py.
"""Train HATRPO agents on a SMAC map of the embedded simulator.

    python algos/hatrpo_gnn.py --map 2s3z

Each class actor takes one trust-region step per iteration: natural gradient of the M-weighted
surrogate by conjugate gradient with Fisher-vector products of the *true* masked categorical KL
(HARL's ``kl_approx`` in ``utils/trpo_util.py`` is a per-action proxy instead), then a backtracking line search that accepts
a step only if the KL stays below ``kl_threshold`` and the improvement is at least ``accept_ratio``
of the linear prediction.

Classes are updated one after the other in a random order with HAPPO's factor ``M`` (see
``happo_gnn.py``); the critic, value normalisation, evaluation and logs are the same as there
(``losses/kl/<class>``, ``losses/step_accepted/<class>`` report the line search).

Runs are kept as in ``happo_gnn.py``: a new folder ``runs/<run_name>/`` per run with
``run_meta.json``, TensorBoard events, ``eval.csv`` and, at every evaluation, ``<exp_name>.pt``
(last), ``<exp_name>_best.pt`` and ``resume.pt``. Ctrl-C (SIGINT) or SIGTERM finishes the current
iteration, evaluates, writes the checkpoints and exits with status 0 (a second signal aborts at
once); ``--resume runs/<run_name>`` continues the run in its folder, bit for bit as if it had not
stopped. The progress line leaves out the return until a training episode has finished and is one
line per iteration when stdout is not a terminal.
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
from torch.nn.attention import SDPBackend, sdpa_kernel
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
    """the number of mini-batches (of env steps) per critic epoch (the actors use the whole batch)"""
    update_epochs: int = 5
    """the K epochs to update the critic"""
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
    norm_adv: bool = True
    """toggles advantage normalisation (over the alive agents, as HARL)"""
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


def flat_grad(y, params, **kw):
    """Gradient of scalar ``y`` w.r.t. ``params`` as one flat vector (zeros for unused parameters)."""
    grads = torch.autograd.grad(y, params, allow_unused=True, **kw)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params, strict=False)])


def conjugate_gradient(Avp, b, nsteps=10, residual_tol=1e-10):
    """Approximately solve ``A x = b`` for symmetric positive-definite ``A`` given as ``Avp(v) = A v``."""
    x = torch.zeros_like(b)
    r, p = b.clone(), b.clone()
    rdotr = r @ r
    for _ in range(nsteps):
        Ap = Avp(p)
        alpha = rdotr / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        new_rdotr = r @ r
        if new_rdotr < residual_tol:
            break
        p = r + (new_rdotr / rdotr) * p
        rdotr = new_rdotr
    return x


def masked_kl_fvp(make_dist, old_dist, active, params, v, damping):
    """Fisher-vector product ``(H + damping I) v``, ``H`` the Hessian of the mean true KL(old || new) over alive agents.

    ``make_dist()`` builds the current ``MaskedCategorical`` (``[R, n_c]``) from ``params``; ``old_dist``
    is the same distribution detached, so ``H`` at the current parameters is the Fisher information.
    Masked actions contribute nothing (their probability is exactly 0).
    """
    # Double backward needs the composite (math) attention kernel: the fused SDPA kernels have no
    # second derivative (as HARL disables cuDNN for its GRU here).
    with sdpa_kernel(SDPBackend.MATH):
        kl = masked_mean(old_dist.kl(make_dist()), active)
        grad_kl = flat_grad(kl, params, create_graph=True)
        return flat_grad(grad_kl @ v, params) + damping * v


def trpo_step(policy, c, obs, avail, act, behaviour_logp, adv, factor, active, args):
    """One HATRPO step of class ``c``'s actor on the whole batch; returns logging stats and log-probs.

    Args (``R`` env steps, ``n_c`` agents of the class): ``obs [R, n_c, O]``, ``avail [R, n_c, A]``,
    ``act``, ``behaviour_logp``, ``adv``, ``active`` ``[R, n_c]``, ``factor [R]`` (HAPPO's M).
    Surrogate ``L = mean_alive(M * ratio * A)``; ``x = F^-1 g`` by CG with the Fisher-vector product
    of the mean true KL(old || new) over alive agents (plus damping); full step
    ``sqrt(2 kl_threshold / x^T F x) x``; backtracking line search (HARL ``hatrpo.py``).
    """
    actor = policy.actors[c]
    params = [p for p in actor.parameters()]
    old_params = torch.nn.utils.parameters_to_vector(params).detach().clone()
    with torch.no_grad():
        old_dist = policy.class_dist(c, obs, avail)
        old_logp = old_dist.log_prob(act)

    def surrogate_and_kl():
        dist = policy.class_dist(c, obs, avail)
        ratio = torch.exp(dist.log_prob(act) - behaviour_logp)
        surr = masked_mean(factor.unsqueeze(-1) * ratio * adv, active)
        return surr, masked_mean(old_dist.kl(dist), active), dist

    surr, _, _ = surrogate_and_kl()
    g = flat_grad(surr, params)

    def fvp(v):
        return masked_kl_fvp(lambda: policy.class_dist(c, obs, avail), old_dist, active, params, v, args.cg_damping)

    x = conjugate_gradient(fvp, g, args.cg_iters)
    shs = 0.5 * (x @ fvp(x))
    step_frac = torch.sqrt(args.kl_threshold / shs.clamp(min=1e-12)) if float(shs) > 0 else torch.zeros((), device=x.device)
    full_step = step_frac * x
    expected_improve = float(g @ full_step)
    surr_old = float(surr.detach())
    accepted, kl_val, improve, frac = False, 0.0, 0.0, 1.0
    with torch.no_grad():
        for _ in range(args.ls_step):
            torch.nn.utils.vector_to_parameters(old_params + frac * full_step, params)
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
            torch.nn.utils.vector_to_parameters(old_params, params)
            kl_val, improve = 0.0, 0.0
        new_logp = policy.class_dist(c, obs, avail).log_prob(act)
        entropy = masked_mean(policy.class_dist(c, obs, avail).entropy(), active)
    return {
        "policy_loss": -surr_old - improve,
        "kl": kl_val,
        "step_accepted": float(accepted),
        "step_fraction": frac if accepted else 0.0,
        "entropy": float(entropy),
        "old_logp": old_logp,
        "new_logp": new_logp,
    }


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
    need(args.map in list_maps(), "map", "one of " + ", ".join(list_maps()))
    need(args.actor in ("gnn", "mlp"), "actor", "gnn or mlp")
    for flag in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "eval_episodes", "eval_interval", "hidden"):
        if hasattr(args, flag):
            need(getattr(args, flag) >= 1, flag, "an integer >= 1")
    need(args.seed >= 0, "seed", "a non-negative integer")
    need(0.0 < args.gamma <= 1.0, "gamma", "a discount in (0, 1]")
    need(0.0 <= args.gae_lambda <= 1.0, "gae_lambda", "a value in [0, 1]")
    need(args.time_budget_s >= 0, "time_budget_s", "seconds >= 0 (0: no budget)")
    for flag in ("learning_rate", "critic_learning_rate", "clip_coef", "kl_threshold"):
        if hasattr(args, flag):
            need(getattr(args, flag) > 0, flag, "a value > 0")
    batch = args.num_envs * args.num_steps
    need(
        args.num_minibatches <= batch, "num_minibatches", f"at most the batch of {batch} env steps (--num-envs x --num-steps)"
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
        f"HATRPO ({args.actor}) on {args.map} | backend {args.backend} | {args.num_envs} envs x {args.num_steps} steps "
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
                    "optimizers": {"critic": critic_optimizer.state_dict()},
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

        # ALGO LOGIC: HATRPO sequential update of the class actors with the factor M
        factor = torch.ones(T * B, device=device)
        order = list(range(len(classes))) if args.fixed_order else torch.randperm(len(classes)).tolist()
        for ci in order:
            c = classes[ci]
            ids = policy.agent_ids(c)
            c_obs, c_avail, c_act = b_obs[:, ids], b_avails[:, ids], b_actions[:, ids]
            c_logp, c_active, c_adv = b_logprobs[:, ids], b_active[:, ids], b_adv[:, ids]
            if float(c_active.sum()) == 0:  # the whole class was dead for the whole batch (HARL skips it)
                continue
            stats = trpo_step(policy, c, c_obs, c_avail, c_act, c_logp, c_adv, factor, c_active, args)
            factor = happo_factor_update(factor, stats.pop("new_logp"), stats.pop("old_logp"), c_active)
            for k, v in stats.items():
                writer.add_scalar(f"losses/{k}/{c}", v, global_step)
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
        writer.add_scalar("charts/learning_rate", critic_optimizer.param_groups[0]["lr"], global_step)
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
        how = f"time budget of {args.time_budget_s:.0f} s reached after iteration {iteration}/{args.num_iterations}"
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
