"""BenchMARL task (``sc2_envs.adapters.benchmarl``): specs, fixed agent group, win-rate logging, MAPPO runs.

Needs ``benchmarl`` (1.5.2 pins ``torchrl<0.12``, so it lives in its own environment; see
docs/integrations.md).
"""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip(
    "benchmarl", exc_type=ImportError, reason="needs benchmarl (pip install benchmarl 'torch==2.13.0', own venv)"
)

from sc2_envs.adapters.benchmarl import SC2SmacClass, SC2SmacTask
from sc2_envs.maps import list_maps

pytestmark = pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested using version")


def test_one_member_per_map():
    assert sorted(SC2SmacClass(m, {}).map_name for m in SC2SmacTask.__members__) == sorted(list_maps())


def test_task_specs_and_win_rate():
    task = SC2SmacTask.SMAC_3M.get_task(config={})
    env = task.get_env_fun(num_envs=1, continuous_actions=False, seed=0, device="cpu")()
    assert task.group_map(env) == {"agent": ["agent_0", "agent_1", "agent_2"]}
    assert task.max_steps(env) == 60
    assert list(task.observation_spec(env).keys(True, True)) == [("agent", "observation")]
    assert list(task.action_mask_spec(env).keys(True, True)) == [("agent", "action_mask")]
    assert list(task.state_spec(env).keys()) == ["state"]
    td = env.rollout(100, break_when_any_done=True)  # random actions within the action spec's mask
    assert td["next", "done"][-1].all() and not td["next", "done"][:-1].any()
    logged = SC2SmacClass.log_info(td)
    assert logged["collection/info/win_rate"] == float(td["next", "agent", "info", "battle_won"][-1, 0])


def test_mappo_runs(tmp_path):
    path = Path(__file__).resolve().parents[2] / "examples" / "torchrl_benchmarl.py"
    spec = importlib.util.spec_from_file_location("torchrl_benchmarl_example", path)
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # dataclasses look their module up there
    spec.loader.exec_module(example)
    torch.manual_seed(0)
    args = example.Args(
        max_frames=200,
        frames_per_batch=100,
        minibatch_size=100,
        minibatch_iters=1,
        eval_interval=200,
        eval_episodes=1,
        loops_per_tick=8,
        save_folder=str(tmp_path),
    )
    experiment = example.make_experiment(args)
    experiment.run()
    assert experiment.total_frames == 200
