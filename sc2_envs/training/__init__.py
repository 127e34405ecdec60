"""What the algorithm files share: the run harness, checkpoints and lineage, the one evaluation loop.

* :mod:`sc2_envs.training.run`: the run folder, ``run_meta.json``, resume, signals, initial weights;
  :class:`~sc2_envs.training.harness.TrainingRun` puts them behind one object.
* :mod:`sc2_envs.training.checkpoints`: checkpoints that carry their configuration, and lineage.
* :mod:`sc2_envs.training.evaluation`: greedy evaluation episodes of a policy.
* :mod:`sc2_envs.training.envs`: the batched envs the HAPPO/HATRPO scripts step, and each map's seed.
* :mod:`sc2_envs.training.async_learner`: the asynchronous actor-learner's run (actor pool, event log,
  checkpoints, resume, signals); :mod:`~sc2_envs.training.async_learner_checks` its flag checks and
  :mod:`~sc2_envs.training.learner_models` its models for each game family.
* behaviour cloning (``algos/bc_reweight.py``), whose runs count epochs: :mod:`~sc2_envs.training.bc_epochs`
  (run folder, resume, TensorBoard, stop), :mod:`~sc2_envs.training.bc_selection` (``best.pt``, averaging),
  :mod:`~sc2_envs.training.bc_checks` (flags and data), :mod:`~sc2_envs.training.bc_data` (SMAC
  demonstrations split for training), :mod:`~sc2_envs.training.bc_labels` (target distribution, label
  shares), :mod:`~sc2_envs.training.bc_validation` (held-out figures).
* :mod:`sc2_envs.training.transfer_results`: zero-shot transfer rows (``algos/eval_transfer.py``) as CSV,
  Markdown and a bar chart.
* :mod:`sc2_envs.training.cli`, :mod:`~sc2_envs.training.progress`,
  :mod:`~sc2_envs.training.ally_dropout`, :mod:`~sc2_envs.training.demos`,
  :mod:`~sc2_envs.training.allocator`: flags, printed progress, team-size randomisation,
  demonstrations, glibc tuning.
"""

from sc2_envs.training.checkpoints import load_checkpoint, read_checkpoint, save_checkpoint
from sc2_envs.training.evaluation import evaluate

__all__ = ["evaluate", "load_checkpoint", "read_checkpoint", "save_checkpoint"]
