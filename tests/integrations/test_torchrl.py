"""TorchRL ``PettingZooWrapper`` (``sc2_envs.adapters.torchrl``): death, truncation and masks.

Needs the ``torchrl`` extra.
"""

import re

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl", exc_type=ImportError, reason="needs torchrl (pip install 'sc2-envs[torchrl]')")

from tensordict import TensorDict
from torchrl.envs import PettingZooWrapper
from torchrl.envs.utils import check_env_specs

from sc2_envs.adapters.pettingzoo_views import FlatObservation
from sc2_envs.adapters.torchrl import make_torchrl_env
from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

# TorchRL warns for any PettingZoo other than the 1.24.3 it was tested with; these tests are the check.
pytestmark = pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested using version")


def seeded_rollout(env, seed: int, steps: int, policy):
    """``env.rollout`` from an episode reset with ``seed`` (TorchRL's own reset passes no seed)."""
    return env.rollout(steps, policy=policy, auto_reset=False, tensordict=env.reset(seed=seed), break_when_any_done=True)


def passive(td: TensorDict) -> TensorDict:
    """Stop for agents that may stop (living), else no-op (dead)."""
    mask = td["agent", "action_mask"]
    td["agent", "action"] = torch.where(mask[:, 1], 1, 0)
    return td


def test_specs():
    env = make_torchrl_env("3m", seed=0)
    check_env_specs(env)
    assert env.observation_spec["agent", "action_mask"].shape == (3, 9)
    assert env.observation_spec["state"].shape == (env._env.unwrapped.sim.state_size,)


@pytest.mark.parametrize("bad", ["yes", "no", 1.5, 1, 0, None], ids=repr)
def test_return_state_must_be_a_bool(bad):
    # found by a reviewer: any value was passed on and read by its truth value ("no" added the state)
    with pytest.raises(TypeError, match=rf"return_state must be a bool \(True: .*\), got {re.escape(repr(bad))}$"):
        make_torchrl_env("3m", return_state=bad)


@pytest.mark.parametrize("bad", ["gpu", 5.5, "cpu:1", "meta"], ids=repr)
def test_a_bad_device_is_named(bad):
    # noticed in a review: torch's own errors ("Expected one of cpu, cuda, ... at start of device string")
    # did not say which argument was wrong
    with pytest.raises(ValueError, match=rf"device.*{re.escape(repr(bad))}"):
        make_torchrl_env("3m", device=bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_without_cuda_says_so():
    with pytest.raises(ValueError, match=r"device 'cuda' needs CUDA.*use device='cpu'"):
        make_torchrl_env("3m", device="cuda")


def test_return_state_false_leaves_the_state_out():
    env = make_torchrl_env("3m", return_state=np.bool_(False), seed=0)
    assert "state" not in env.observation_spec.keys()
    assert "state" in make_torchrl_env("3m", return_state=True, seed=0).observation_spec.keys()


def test_first_death_does_not_end_episode():
    env = make_torchrl_env("3m")
    td = seeded_rollout(env, 0, 100, passive)
    assert td.shape == (21,)  # 3m, seed 0, passive: first death at step 11, battle lost at step 21
    alive = td["next", "agent", "info", "agent_alive"].bool()
    first = int((~alive).any(-1).nonzero()[0])
    assert first == 10
    assert not td["next", "done"][:-1].any() and td["next", "done"][-1].all()
    assert td["next", "terminated"][-1].all() and not td["next", "truncated"][-1].any()
    dead = int((~alive[first]).nonzero()[0])
    # The dead agent stays: zero observation, only no-op allowed, not done until the battle ends.
    assert td["next", "agent", "action_mask"][first, dead].tolist() == [True] + [False] * 8
    assert (td["next", "agent", "observation"][first, dead] == 0).all()
    assert not td["next", "agent", "done"][first, dead].any()
    assert (td["agent", "action"][first + 1 :, dead] == 0).all()


def test_remove_mode_needs_done_on_any_false():
    """PettingZoo-style removal through TorchRL: with ``done_on_any=False`` the episode lasts to the battle's
    end and the removed agent is masked out; TorchRL's default for parallel envs (``any``) ends it at the first
    death, which is why the adapter sets ``done_on_any=False``."""
    import torchrl
    from packaging.version import Version

    from sc2_envs.adapters.torchrl import REMOVE_MIN_TORCHRL

    if Version(torchrl.__version__) < Version(REMOVE_MIN_TORCHRL):
        with pytest.raises(ValueError, match="3702"):
            make_torchrl_env("3m", dead_agents="remove")
        pytest.skip(f"torchrl {torchrl.__version__} < {REMOVE_MIN_TORCHRL}: remove mode refused (pytorch/rl #3702)")
    env = make_torchrl_env("3m", dead_agents="remove")
    td = seeded_rollout(env, 0, 100, passive)
    assert td.shape == (21,)
    assert td["next", "agent", "mask"][10].sum() == 2 and td["next", "agent", "mask"][9].all()
    default = PettingZooWrapper(FlatObservation(SC2ParallelEnv("3m", dead_agents="remove")), use_mask=True)
    assert default.done_on_any
    assert seeded_rollout(default, 0, 100, passive).shape == (11,)


def test_truncation_survives(short_3m):
    env = make_torchrl_env(short_3m)
    td = seeded_rollout(env, 0, 100, passive)
    assert td.shape == (6,)
    assert td["next", "truncated"][-1].all() and not td["next", "terminated"][-1].any()
    assert td["next", "agent", "truncated"][-1].all()
    assert not td["next", "truncated"][:-1].any()
    # ("next", ...) holds the final observation of the battle (TorchRL resets in a separate step)
    assert td["next", "agent", "observation"][-1].abs().sum() > 0


def test_masked_policy_samples_valid_actions():
    """The env raises ValueError on an unavailable action, so a masked categorical policy that completes
    200 steps never sampled one; a uniform unmasked draw would fail within the first steps."""
    from tensordict.nn import TensorDictModule
    from torchrl.modules import MaskedCategorical, ProbabilisticActor

    env = make_torchrl_env("3m", seed=1)
    logits = TensorDictModule(
        lambda obs: torch.zeros(*obs.shape[:-1], 9), in_keys=[("agent", "observation")], out_keys=[("agent", "logits")]
    )
    actor = ProbabilisticActor(
        logits,
        in_keys={"logits": ("agent", "logits"), "mask": ("agent", "action_mask")},
        out_keys=[("agent", "action")],
        distribution_class=MaskedCategorical,
    )
    torch.manual_seed(0)
    td = env.rollout(200, policy=actor, break_when_any_done=False)
    assert td.shape == (200,)
    taken = td["agent", "action_mask"].gather(-1, td["agent", "action"].unsqueeze(-1))
    assert taken.all()


def test_torchrls_own_wrapper_runs_the_default_env_without_flags():
    """TorchRL's ``PettingZooWrapper`` on ``sc2_envs.parallel_env("3m")`` as it comes."""
    import sc2_envs

    env = PettingZooWrapper(sc2_envs.parallel_env("3m"), use_mask=True, done_on_any=False, categorical_actions=True)
    check_env_specs(env)
    td = seeded_rollout(env, 0, 200, passive)  # passive: the enemies win, agents die one after another
    done = td["next", "done"].reshape(-1)
    assert done[-1] and not done[:-1].any(), "one episode end, when the battle ends (not at the first death)"
    alive = td["next", "agent", "info", "agent_alive"].bool()
    present = td["next", "agent", "mask"].bool()
    assert (~alive).any(-1).sum() >= 2, "agents died before the end"
    # a dead agent is masked out from the step after its death (it left env.agents)
    assert (present[1:] <= alive[:-1]).all() and not present[-1].all()
    # SMAC's mask reaches TorchRL's action_mask: a present (living) agent may stop and may not no-op
    mask, here = td["agent", "action_mask"], td["agent", "mask"].bool()
    assert mask[..., 1][here].all() and not mask[..., 0][here].any()


def test_torchrls_own_wrapper_runs_a_smacv2_scenario():
    """TorchRL's ``PettingZooWrapper`` with the flags of the issue, on ``protoss_5_vs_5`` as it comes: it
    builds specs from the infos, so each value must be numeric (``unit_kind`` is the type's index in
    ``get_env_info()["kinds"]``; a type name raised ``TypeError: new(): invalid data type 'str'``)."""
    import sc2_envs

    par = sc2_envs.parallel_env("protoss_5_vs_5")
    env = PettingZooWrapper(par, use_mask=True, done_on_any=False, return_state=True)
    check_env_specs(env)
    td = seeded_rollout(env, 0, 300, passive)
    assert td["next", "done"][-1].all() and not td["next", "done"][:-1].any()
    kinds = par.get_env_info()["kinds"]
    first = td["next", "agent", "info", "unit_kind"][0].long().tolist()
    assert [kinds[k] for k in first] == [par.agent_unit_types[f"agent_{i}"] for i in range(5)]
    assert td["state"].shape == (td.shape[0], par.state_space.shape[0])


def test_make_torchrl_env_runs_a_smacv2_scenario():
    env = make_torchrl_env("terran_5_vs_5", seed=0)
    check_env_specs(env)
    td = seeded_rollout(env, 0, 300, passive)
    assert td["next", "done"][-1].all() and td.shape[0] <= 200
    assert td["next", "agent", "info", "unit_kind"].shape == (td.shape[0], 5)
