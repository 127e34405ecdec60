"""Peer simulators run beside ours: SMAClite (uoe-agents/smaclite) and JaxMARL's SMAX.

    python benchmarks/peers.py      # which peers import here, their versions, and why not

Used by ``benchmarks/fidelity_table.py`` (SMAClite's win rates and episode lengths beside ours) and
``benchmarks/env_throughput.py --peers`` (env steps/s of SMAX and SMAClite in the same interleaved
run as ours). Neither peer is a dependency of sc2-envs:

* SMAClite is not on PyPI. Install it from GitHub without its dependency pins (its ``setup.py`` pins
  ``Rtree==1.0.0``, which has no usable wheel for Python 3.11) and add its runtime dependencies from
  the ``peers`` extra: ``pip install --no-deps git+https://github.com/uoe-agents/smaclite@0d6abbea``.
  Alternatively point ``SMACLITE_PATH`` at a checkout (the folder holding the ``smaclite`` package);
  it is put first on ``sys.path``.
* SMAX comes with ``jaxmarl`` (PyPI; pinned in the ``peers`` extra with a CPU ``jax``). jaxmarl's
  dependency gymnax pins ``gymnasium<1.4``, so install the extra in its own virtual environment.

Facts about the peers (unit lists, time base, enemy AI) are from their sources: SMAClite
``smaclite/env/smaclite.py`` and ``smaclite/env/maps/smaclite_maps/*.json`` (commit 0d6abbea);
JaxMARL ``jaxmarl/environments/smax/{smax_env.py,heuristic_enemy_smax_env.py}`` (jaxmarl 0.2.0).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Any

import numpy as np

from sc2_envs.maps import get_map

SMACLITE_MAPS = (
    "10m_vs_11m",
    "27m_vs_30m",
    "2c_vs_64zg",
    "2s3z",
    "2s_vs_1sc",
    "3s5z",
    "3s5z_vs_3s6z",
    "3s_vs_5z",
    "bane_vs_bane",
    "corridor",
    "MMM",
    "MMM2",
)
"""SMAC maps SMAClite ships (its ``MapPreset``; same names as SMAC's)."""

SMAX_MAPS = ("3m", "8m", "25m", "2s3z", "3s5z", "5m_vs_6m", "10m_vs_11m", "27m_vs_30m", "3s5z_vs_3s6z", "3s_vs_5z", "6h_vs_8z")
"""SMAC maps SMAX has a scenario for (``jaxmarl.environments.smax.map_name_to_scenario``)."""

SMACLITE_N_ACTIONS_NO_ATTACK = 6
"""SMAClite's action layout is SMAC's: 0 no-op, 1 stop, 2-5 move N/S/E/W, 6+j attack (or heal) j."""


def import_smaclite() -> tuple[Any, str]:
    """Import SMAClite, honouring ``$SMACLITE_PATH``.

    Returns:
        ``(module, "")`` when ``smaclite`` imports, else ``(None, reason)`` with the reason it did not
        (not installed, or one of its runtime dependencies, scikit-learn or Rtree, is missing).
    """
    path = os.environ.get("SMACLITE_PATH")
    if path and path not in sys.path:
        if not os.path.isdir(os.path.join(path, "smaclite")):
            return None, f"SMACLITE_PATH={path!r} holds no smaclite package folder"
        sys.path.insert(0, path)
    try:
        return importlib.import_module("smaclite"), ""
    except ImportError as e:
        where = f" (SMACLITE_PATH={path})" if path else ""
        if (e.name or "").split(".")[0] == "smaclite":
            how = (
                "it is not on PyPI: pip install --no-deps git+https://github.com/uoe-agents/smaclite "
                "plus the 'peers' extra, or set SMACLITE_PATH to a checkout"
            )
        else:
            how = "a runtime dependency of SMAClite is missing: install the 'peers' extra"
        return None, f"SMAClite not importable{where}: {e}; {how}"


def import_smax() -> tuple[Any, str]:
    """Import JaxMARL's SMAX. Returns ``(jaxmarl module, "")`` or ``(None, reason)``."""
    try:
        import jax  # noqa: F401

        return importlib.import_module("jaxmarl"), ""
    except ImportError as e:
        return None, f"JaxMARL SMAX not importable: {e}; install the 'peers' extra (pip install 'sc2-envs[peers]')"


# --------------------------------------------------------------------------------------------------
# SMAClite


def make_smaclite(map_name: str, seed: int):
    """SMAClite's gym env for ``map_name`` (``gymnasium.make("smaclite/<map>-v0")``), NumPy RVO2 path.

    Raises:
        ValueError: ``map_name`` is not one of :data:`SMACLITE_MAPS`.
        ImportError: SMAClite is not importable (see :func:`import_smaclite`).
    """
    if map_name not in SMACLITE_MAPS:
        raise ValueError(f"SMAClite has no map {map_name!r}; it ships {', '.join(SMACLITE_MAPS)}")
    mod, reason = import_smaclite()
    if mod is None:
        raise ImportError(reason)
    import gymnasium as gym

    return gym.make(f"smaclite/{map_name}-v0", seed=seed, disable_env_checker=True)


def smaclite_random_actions(avail: list[np.ndarray], rng: np.random.Generator) -> list[int]:
    """One uniform draw per agent over its available actions (``avail[i]``: 0/1 of length n_actions)."""
    return [int(rng.choice(np.flatnonzero(a))) for a in avail]


class SMACliteHeuristic:
    """SMAC's scripted ally policy on a SMAClite env, the same rule as ``sc2_envs.policies.HeuristicPolicy``.

    Each live agent attacks the nearest live enemy (centre distance) and keeps it until it dies; when
    the attack is not available it steps toward the target along the larger axis (stop if that move is
    blocked). A healer heals the nearest damaged non-healer ally, else follows the nearest non-healer
    ally. Source: oxwhirl/smac ``starcraft2.py`` ``get_agent_action_heuristic`` (with ``heuristic_rest``).
    It reads SMAClite's unit records (``env.agents`` / ``env.enemies``: dicts id -> unit with ``pos``,
    ``hp``, ``max_hp``, ``combat_type``).
    """

    def __init__(self) -> None:
        self.target: dict[int, int] = {}

    def reset(self) -> None:
        """Forget the kept targets (call at each episode start)."""
        self.target = {}

    def __call__(self, env) -> list[int]:
        """Actions (Python ints, one per agent) for the env's current state; dead agents get the no-op 0."""
        from smaclite.env.units.combat_type import CombatType

        u = env.unwrapped
        avail = u.get_avail_actions()
        actions = []
        for i in range(u.n_agents):
            me = u.agents.get(i)
            if me is None:
                actions.append(0)
                continue
            if me.combat_type == CombatType.HEALING:
                friends = [a for a in u.agents.values() if a.combat_type != CombatType.HEALING]
                patients = [a for a in friends if a.hp < a.max_hp]
                pool = patients or friends
                if not pool:
                    actions.append(1)
                    continue
                goal = min(pool, key=lambda a: float(np.hypot(*(a.pos - me.pos))))
            else:
                t = self.target.get(i)
                if t is None or t not in u.enemies:
                    if not u.enemies:
                        actions.append(1)
                        continue
                    t = min(u.enemies, key=lambda j: float(np.hypot(*(u.enemies[j].pos - me.pos))))
                    self.target[i] = t
                goal = u.enemies[t]
            act = SMACLITE_N_ACTIONS_NO_ATTACK + goal.id_in_faction
            if avail[i][act]:
                actions.append(act)
                continue
            dx, dy = goal.pos - me.pos
            move = (4 if dx > 0 else 5) if abs(dx) >= abs(dy) else (2 if dy > 0 else 3)
            actions.append(move if avail[i][move] else 1)
        return actions


def smaclite_evaluate(map_name: str, policy: str, episodes: int, seed: int = 0) -> dict:
    """Win rate, time-outs and mean episode length of ``policy`` on SMAClite's ``map_name``.

    SMAClite has no episode limit of its own (``truncated`` is always False); SMAC's limit for the map
    (``sc2_envs.maps.get_map(map_name).episode_limit`` env steps) is imposed here, and an episode that
    reaches it without a battle end counts as a time-out (SMAC checks the battle end first). SMAClite
    has no spawn jitter: its groups spawn in a fixed grid, and the only randomness is the per-tick
    order in which units act (seeded through ``reset(seed=...)``), so its figures correspond to
    ``spawn_jitter=0``. Episode e resets with ``SeedSequence(seed, spawn_key=(e,))``.

    Args:
        map_name: one of :data:`SMACLITE_MAPS`.
        policy: ``"random"`` (uniform over available actions) or ``"heuristic"`` (:class:`SMACliteHeuristic`).
        episodes: number of episodes (>= 1).
        seed: run seed.

    Returns:
        dict with ``episodes``, ``wins``, ``timeouts``, ``mean_length`` (env steps), ``steps_per_s``
        (SMAClite env steps per wall second, policy included).

    Raises:
        ValueError: unknown policy or map, or ``episodes < 1``.
        ImportError: SMAClite is not importable.
    """
    if policy not in ("random", "heuristic"):
        raise ValueError(f"unknown policy {policy!r}; expected 'random' or 'heuristic'")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    limit = get_map(map_name).episode_limit
    env = make_smaclite(map_name, seed=seed)
    heuristic = SMACliteHeuristic()
    wins = timeouts = 0
    lengths = []
    steps, t0 = 0, time.perf_counter()
    for e in range(episodes):
        ss = np.random.SeedSequence(seed, spawn_key=(e,))
        env.reset(seed=int(ss.generate_state(1)[0]))
        rng = np.random.default_rng(ss.spawn(1)[0])
        heuristic.reset()
        length, done = 0, False
        while not done and length < limit:
            if policy == "heuristic":
                a = heuristic(env)
            else:
                a = smaclite_random_actions(env.unwrapped.get_avail_actions(), rng)
            _, _, done, _, info = env.step(a)
            length += 1
        wins += bool(done and info["battle_won"])
        timeouts += not done
        steps += length
        lengths.append(length)
    env.close()
    return dict(
        episodes=episodes,
        wins=wins,
        timeouts=timeouts,
        mean_length=sum(lengths) / episodes,
        steps_per_s=steps / (time.perf_counter() - t0),
    )


class SMACliteStepper:
    """SMAClite (B=1, its gym env) stepped with uniform random valid actions, auto-reset on battle end
    or SMAC's episode limit; the unit :func:`time_window` times (policy and resets counted, as ours)."""

    def __init__(self, map_name: str, seed: int = 0) -> None:
        self.env = make_smaclite(map_name, seed=seed)
        self.limit = get_map(map_name).episode_limit
        self.rng = np.random.default_rng(seed)
        self.env.reset(seed=seed)
        self.t = 0
        self.num_envs = 1

    def step(self, n: int) -> None:
        """Advance ``n`` env steps."""
        for _ in range(n):
            a = smaclite_random_actions(self.env.unwrapped.get_avail_actions(), self.rng)
            _, _, done, _, _ = self.env.step(a)
            self.t += 1
            if done or self.t >= self.limit:
                self.env.reset()
                self.t = 0

    def sync(self) -> None:
        """Nothing to wait for (synchronous NumPy)."""


# --------------------------------------------------------------------------------------------------
# SMAX


class SMAXStepper:
    """JaxMARL SMAX for ``map_name``, B envs under ``jax.jit(jax.vmap(...))`` on the default JAX device.

    The env is ``jaxmarl.make("HeuristicEnemySMAX", scenario=map_name_to_scenario(map_name))`` (its
    scripted enemy; SMAX's default episode limit of 100 steps; JaxMARL's ``step`` auto-resets done
    envs). Each env step draws one uniform random valid action per ally from ``get_avail_actions`` and
    steps all B envs in one jitted call, so a step costs one Python dispatch, as one
    ``SMACSim.step`` does. Compilation happens in the constructor (not timed).

    Raises:
        ValueError: ``map_name`` has no SMAX scenario (:data:`SMAX_MAPS`), or ``num_envs < 1``.
        ImportError: jaxmarl is not importable.
    """

    def __init__(self, map_name: str, num_envs: int, seed: int = 0) -> None:
        if map_name not in SMAX_MAPS:
            raise ValueError(f"SMAX has no scenario {map_name!r}; it has {', '.join(SMAX_MAPS)}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        jaxmarl, reason = import_smax()
        if jaxmarl is None:
            raise ImportError(reason)
        import jax
        import jax.numpy as jnp
        from jaxmarl.environments.smax import map_name_to_scenario

        env = jaxmarl.make("HeuristicEnemySMAX", scenario=map_name_to_scenario(map_name))
        agents = env.agents
        self.num_envs = num_envs

        def one_step(key, state):
            k_act, k_step = jax.random.split(key)
            avail = env.get_avail_actions(state)
            keys = jax.random.split(k_act, len(agents))
            actions = {
                a: jax.random.categorical(k, jnp.where(avail[a] > 0, 0.0, -jnp.inf)) for a, k in zip(agents, keys, strict=True)
            }
            _, state, _, _, _ = env.step(k_step, state, actions)
            return state

        vstep = jax.vmap(one_step)

        @jax.jit
        def step(key, state):
            key, sub = jax.random.split(key)
            return key, vstep(jax.random.split(sub, num_envs), state)

        key = jax.random.PRNGKey(seed)
        key, sub = jax.random.split(key)
        _, self.state = jax.jit(jax.vmap(env.reset))(jax.random.split(sub, num_envs))
        self._step, self.key = step, key
        self.step(2)  # compile
        self.sync()

    def step(self, n: int) -> None:
        """Advance ``n`` env steps of all B envs (asynchronous; :meth:`sync` waits)."""
        for _ in range(n):
            self.key, self.state = self._step(self.key, self.state)

    def sync(self) -> None:
        """Block until the queued steps are done."""
        import jax

        jax.block_until_ready(self.state)


def time_window(stepper, seconds: float, chunk: int = 10) -> float:
    """Env steps/s (steps x ``stepper.num_envs`` per wall second) of ``stepper.step`` over ``seconds``.

    Steps in chunks of ``chunk`` and synchronises after each chunk, so at least one chunk runs.
    """
    steps = 0
    stepper.sync()
    t0 = time.perf_counter()
    while True:
        stepper.step(chunk)
        stepper.sync()
        steps += chunk
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return steps * stepper.num_envs / dt


def main(argv: list[str] | None = None) -> int:
    """Print, for each peer, its version or why it does not import; exit 1 when one is missing."""
    import argparse

    argparse.ArgumentParser(
        description="Which peer simulators (SMAClite, JaxMARL SMAX) import here, for "
        "benchmarks/env_throughput.py --peers and benchmarks/fidelity_table.py."
    ).parse_args(argv)
    missing = 0
    for name, importer in (("SMAClite", import_smaclite), ("JaxMARL SMAX", import_smax)):
        mod, reason = importer()
        if mod is None:
            missing += 1
            print(f"{name}: {reason}")
        else:
            print(f"{name}: {getattr(mod, '__version__', 'version unknown')} at {os.path.dirname(mod.__file__)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
