"""MLP actor and critic: the baseline that reads the flat SMAC vectors (HARL's MLPBase + head).

They depend on the map's ``obs_shape`` / ``state_shape`` / ``n_actions``, so, unlike the GNN
models, their weights do not transfer between maps with different team sizes.
"""

from __future__ import annotations

import torch
from torch import nn

from models.common import layer_init, mlp


class MLPActor(nn.Module):
    """Flat observation ``[R, obs_size]`` -> unmasked logits ``[R, n_actions]``.

    Input LayerNorm (HARL ``use_feature_normalization``), ``n_hidden`` x (Linear, ReLU, LayerNorm),
    output layer with orthogonal gain 0.01 (CleanRL / HARL actor head).
    """

    def __init__(self, obs_size: int, n_actions: int, hidden: int = 64, n_hidden: int = 2):
        super().__init__()
        self.obs_size, self.n_actions = obs_size, n_actions
        self.net = nn.Sequential(nn.LayerNorm(obs_size), mlp(obs_size, hidden, n_actions, n_hidden, out_std=0.01))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class MLPCritic(nn.Module):
    """Flat global state ``[*, state_size]`` -> value ``[*]`` (output gain 1.0, CleanRL critic head)."""

    def __init__(self, state_size: int, hidden: int = 64, n_hidden: int = 2):
        super().__init__()
        self.state_size = state_size
        self.net = nn.Sequential(nn.LayerNorm(state_size), mlp(state_size, hidden, 1, n_hidden, out_std=1.0))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state).squeeze(-1)


__all__ = ["MLPActor", "MLPCritic", "layer_init"]
