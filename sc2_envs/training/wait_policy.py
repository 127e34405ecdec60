"""How long idle OpenMP threads spin: the training scripts default to ``GOMP_SPINCOUNT=1000``.

torch's CPU wheels run their intra-op work (and MKL's) on GNU OpenMP. Between parallel regions an idle
thread polls for work before it sleeps: libgomp's default is 300,000 polls (about 3 ms; its manual,
"GOMP_SPINCOUNT"), ``OMP_WAIT_POLICY=PASSIVE`` sleeps at once, ``ACTIVE`` spins for minutes. On cores
nobody else uses a spin costs nothing and makes the next fork/join fast. On shared cores (a second seed
beside the run, another user's job) the spinning threads burn the time slices the working thread needs,
and every fork/join waits for a preempted spinner.

Measured with ``benchmarks/train_sps.py`` on 2s3z (docs/speed.md, "Threads under contention"), env
steps/s relative to ``PASSIVE``:

=====================  ==========================  ==============================
spin                   idle 2 cores (256 envs)      load average 7-13 (64 envs)
=====================  ==========================  ==============================
0 (``PASSIVE``)        1.00x                        1.00x
1,000 (~10 us)         1.31x                        0.90x
10,000 (~0.1 ms)       not measured                 0.29x
300,000 (default)      1.33x                        ~0.04x (13 vs 361)
=====================  ==========================  ==============================

A thousand polls keep nearly all of the idle speed and nearly all of the shared-core speed, so the
scripts set ``GOMP_SPINCOUNT=1000`` unless the user set ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``.
libgomp reads them once, when torch loads it, so a script sets them before ``import torch``::

    import os

    if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
        os.environ["GOMP_SPINCOUNT"] = "1000"
    import torch

:func:`wait_policy_line` says on the first screen what the run got. A library import never sets them:
by then the user's program may have loaded torch already.
"""

from __future__ import annotations

import os

import torch

WAIT_POLICY_VAR = "OMP_WAIT_POLICY"
"""The OpenMP environment variable (the OpenMP specification; libgomp's manual): ``PASSIVE`` or ``ACTIVE``."""

SPIN_COUNT_VAR = "GOMP_SPINCOUNT"
"""libgomp's own variable: how many times an idle thread polls before it sleeps; it overrides the count
the wait policy implies (libgomp's manual, "GOMP_SPINCOUNT")."""

DEFAULT_SPIN_COUNT = "1000"
"""What the training scripts set when the user set neither variable (measured; see the module docstring)."""


def wait_policy_line() -> str:
    """The first-screen line naming torch's thread count and how idle OpenMP threads wait.

    Read from the environment, which libgomp read when torch loaded: ``OMP_WAIT_POLICY`` as libgomp
    parses it (``PASSIVE`` / ``ACTIVE`` in any case, blanks around it); any other value is named as one
    libgomp ignored (it printed "Invalid value" on stderr); a ``GOMP_SPINCOUNT`` is named, since it
    decides how long threads spin whatever the policy.

    Returns:
        e.g. ``"threads: torch 2, idle OpenMP threads spin GOMP_SPINCOUNT=1000 polls, then sleep
        (OMP_WAIT_POLICY=PASSIVE to sleep at once)"``.
    """
    raw = os.environ.get(WAIT_POLICY_VAR)
    policy = (raw or "").strip().upper()
    spin = (os.environ.get(SPIN_COUNT_VAR) or "").strip()
    if spin:
        how = f"spin {SPIN_COUNT_VAR}={spin} polls, then sleep"
    elif policy == "PASSIVE":
        how = "sleep at once"
    elif policy == "ACTIVE":
        how = "spin (ACTIVE: slow on shared cores)"
    else:
        how = "spin libgomp's default ~3 ms, then sleep (slow on shared cores)"
    if policy and policy not in ("PASSIVE", "ACTIVE"):
        how += f"; libgomp ignored {WAIT_POLICY_VAR}={raw!r} (expected PASSIVE or ACTIVE)"
    elif policy:
        how += f" ({WAIT_POLICY_VAR}={policy})"
    else:
        how += f" ({WAIT_POLICY_VAR}=PASSIVE to sleep at once)"
    return f"threads: torch {torch.get_num_threads()}, idle OpenMP threads {how}"
