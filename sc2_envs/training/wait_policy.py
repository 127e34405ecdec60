"""How idle OpenMP threads wait: the training scripts default to sleeping (``OMP_WAIT_POLICY=PASSIVE``).

torch's CPU wheels run their intra-op work (and MKL's) on GNU OpenMP. Between parallel regions its
idle threads spin for a while before they sleep (``OMP_WAIT_POLICY`` unset or ``ACTIVE``; libgomp's
``GOMP_SPINCOUNT``). On cores nobody else uses that costs nothing. On shared cores (a second seed
beside the run, another user's job) the spinning threads burn the time slices the working thread
needs, and every fork/join waits for a preempted spinner: on the 2-core machine, with other jobs
keeping its load average near 11, ``algos/happo_gnn.py --map 2s3z --num-envs 64`` ran at 13 env
steps/s with the default policy, 361 with ``PASSIVE`` and 171 with one torch thread
(docs/speed.md, "Threads under contention"; ``benchmarks/train_sps.py``).

libgomp reads the variable once, when torch loads it, so a script sets it before ``import torch``::

    import os

    os.environ["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY") or "PASSIVE"
    import torch

(a policy the user exported wins; an empty value counts as none). :func:`wait_policy_line` says on the first screen
which policy the run got. A library import never sets it: by then the user's program may have
loaded torch already.
"""

from __future__ import annotations

import os

import torch

WAIT_POLICY_VAR = "OMP_WAIT_POLICY"
"""The OpenMP environment variable (the OpenMP specification; libgomp's manual): ``PASSIVE`` (sleep) or ``ACTIVE`` (spin)."""

DEFAULT = "PASSIVE"
"""What the training scripts set when the user has not: idle threads sleep."""


SPIN_COUNT_VAR = "GOMP_SPINCOUNT"
"""libgomp's own variable: how many times an idle thread polls before it sleeps; it overrides the count
the wait policy implies (libgomp's manual, "GOMP_SPINCOUNT")."""


def wait_policy_line() -> str:
    """The first-screen line naming torch's thread count and the OpenMP wait policy in effect.

    The policy is read from the environment, which libgomp read when torch loaded: ``PASSIVE`` or
    ``ACTIVE`` in any case, with blanks around it, as libgomp parses it; any other value is named as
    one libgomp ignored (it printed "Invalid value" on stderr and kept its default); a ``GOMP_SPINCOUNT``
    is named with the policy, since it decides how long threads spin.

    Returns:
        e.g. ``"threads: torch 2, OpenMP wait policy PASSIVE (idle threads sleep; OMP_WAIT_POLICY=ACTIVE
        to spin)"``.
    """
    raw = os.environ.get(WAIT_POLICY_VAR)
    policy = (raw or "").strip().upper()
    if policy == "PASSIVE":
        how = f"PASSIVE (idle threads sleep; {WAIT_POLICY_VAR}=ACTIVE to spin)"
    elif policy == "ACTIVE":
        how = f"ACTIVE (idle threads spin: slow on shared cores; {WAIT_POLICY_VAR}=PASSIVE to sleep)"
    elif raw is None or not policy:
        how = f"libgomp's default (spin, then sleep; {WAIT_POLICY_VAR}=PASSIVE to sleep at once)"
    else:
        how = f"libgomp's default (spin, then sleep): it ignored {WAIT_POLICY_VAR}={raw!r}; expected PASSIVE or ACTIVE"
    spin = os.environ.get(SPIN_COUNT_VAR)
    if spin is not None and spin.strip():
        how += f"; {SPIN_COUNT_VAR}={spin.strip()} sets how long idle threads spin before they sleep"
    return f"threads: torch {torch.get_num_threads()}, OpenMP wait policy {how}"
