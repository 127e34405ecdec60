"""Networks for the SMAC agents: entity parsing, count-invariant GNN actors and critics, MLP baselines.

See ``models.entities`` (observation/state layout -> entity sets), ``models.gnn`` (attention actor
per unit class, class-factored critic), ``models.mlp`` (baseline), ``models.common`` (masked
categorical, value normaliser) and ``models.policy`` (per-class routing). Checkpoints live in
``sc2_envs.training.checkpoints``; their names stay importable from here (``models.load_checkpoint``).
"""

from models.common import MASKED_LOGIT, MaskedCategorical, ValueNorm, layer_init
from models.entities import (
    Entities,
    ObsParser,
    StateEntities,
    StateParser,
    heal_target_rows,
)
from models.gnn import GNNActor, GNNCritic
from models.mlp import MLPActor, MLPCritic
from models.policy import (
    ACTOR_TYPES,
    CentralCritic,
    ClassPolicy,
    RolloutMemory,
    build_critic,
    build_models,
    build_multi_map_models,
    describe_classes,
    type_vocab_union,
    unit_classes,
    zero_shot_views,
)

__all__ = [
    "ACTOR_TYPES",
    "MASKED_LOGIT",
    "CentralCritic",
    "ClassPolicy",
    "Entities",
    "GNNActor",
    "GNNCritic",
    "MLPActor",
    "MLPCritic",
    "MaskedCategorical",
    "RolloutMemory",
    "ObsParser",
    "StateEntities",
    "StateParser",
    "ValueNorm",
    "average_checkpoints",
    "build_critic",
    "build_models",
    "build_multi_map_models",
    "type_vocab_union",
    "checkpoint_maps",
    "heal_target_rows",
    "layer_init",
    "load_checkpoint",
    "env_steps",
    "read_checkpoint",
    "training_amount",
    "trained_by",
    "trainer_text",
    "save_checkpoint",
    "describe_classes",
    "init_weights",
    "ancestors",
    "ancestry_text",
    "lineage_after",
    "unit_classes",
    "zero_shot_views",
]

CHECKPOINT_NAMES = (
    "ancestors",
    "ancestry_text",
    "average_checkpoints",
    "checkpoint_maps",
    "env_steps",
    "init_weights",
    "lineage_after",
    "load_checkpoint",
    "read_checkpoint",
    "save_checkpoint",
    "trained_by",
    "trainer_text",
    "training_amount",
)
"""Names of ``sc2_envs.training.checkpoints`` that ``models`` also serves (its public API before they moved)."""


def __getattr__(name: str):
    # resolved on first use, so that importing the networks never imports the training package
    if name in CHECKPOINT_NAMES:
        from sc2_envs.training import checkpoints

        return getattr(checkpoints, name)
    raise AttributeError(f"module 'models' has no attribute {name!r}")
