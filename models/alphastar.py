"""A mini-AlphaStar-scale policy over the full-game features of ``sc2_envs.full_game.spec``.

Architecture after mini-AlphaStar v1.09 (``ProjectType.MiniStar``,
github.com/liuruoze/mini-AlphaStar), which scales down AlphaStar (Vinyals et al.,
Nature 2019, supplementary "Architecture"):

* **Entity encoder**: each entity row (``spec.ENTITY_FEATURES`` columns, raw values) is one-hot /
  binary encoded as in mini-AS ``entity_encoder.py`` (unit type, alliance, x/y bits,
  sqrt-bucketed health/shield/energy, order ids, ...), projected to ``entity_dim`` and passed
  through a post-LN transformer with a key-padding mask; outputs per-entity embeddings and their
  masked mean.
* **Spatial encoder**: entity embeddings are scattered onto the minimap grid (summed per cell; mini-AS
  keeps 4 slots per cell and sums them) and stacked with the encoded minimap planes
  (``spec.MINIMAP_FEATURES``; none for the replay dataset), then 1x1 conv, three 4x4 stride-2
  convs, ``n_resblocks`` residual blocks (the ``map_skip`` outputs) and a linear layer.
* **Scalar encoder**: agent statistics (log1p), races, game-loop bits, upgrades, unit counts
  (sqrt), units/buildings present, build order (transformer), last action type / delay / queued
  and (live) the action-type mask; gives ``embedded_scalar`` and ``scalar_context``.
* **Core**: an LSTM over time on ``[embedded_scalar, embedded_entity, embedded_spatial]``.
* **Heads** (autoregressive embedding ``ae``): action_type (residual MLP + GLU on the scalar
  context), delay, queued, selected_units (pointer network with an end-of-selection token,
  picked units removed, ``ae`` updated per pick), target_unit (pointer), target_location
  (FiLM-conditioned residual blocks on ``map_skip`` + transposed convs to the raw grid), and
  mini-AS's five value baselines (win/loss and four pseudo-reward baselines).

Deviations from mini-AS, all because this project's features differ: the per-action "unit types
that may execute" priors (DI-star ``ACTIONS_STAT``) are replaced by a learned embedding of the
action type; resblocks of the action-type head are LayerNorm MLP blocks; the entity input width is
that of this project's columns (``entity_input_width``).

Sizes come from ``AlphaStarConfig``; ``AlphaStarConfig.mini()`` is the mini-AS preset
(about 2.7M parameters with the live feature set, like mini-AS's 2,664,028), ``tiny()`` is for
tests. Index conventions follow the replay dataset (``sc2_envs.replays.extract``): entity rows
``< entity_count`` are real; ``selected_units`` uses index ``E`` (= ``max_entities``) as
end-of-selection; ``target_location`` is ``row * R + col`` on the raw grid of resolution ``R``.
"""

from __future__ import annotations

import copy
import math
import numbers
import os
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from models.common import MASKED_LOGIT, masked_ce
from sc2_envs.full_game import spec

HEADS = spec.ACTION_HEADS
CHECKPOINT_FORMAT = "sc2_envs.alphastar/1"

# Entity column encodings: (kind, size). onehot: integer value -> one-hot of ``size`` classes;
# sqrt: one-hot of floor(sqrt(min(v, cap))) with cap = size; bits: 8-bit binary; value: the value
# itself; ratio handled separately; none: used only through another column.
_ENTITY_ENCODING = {
    "unit_type": ("onehot", None),  # vocabulary size from the config
    "alliance": ("onehot", 5),
    "owner": ("onehot", 17),
    "x": ("bits", 8),
    "y": ("bits", 8),
    "build_progress": ("value", 1),
    "health": ("sqrt", 1500),
    "health_max": ("none", 0),
    "shield": ("sqrt", 1000),
    "shield_max": ("none", 0),
    "energy": ("sqrt", 200),
    "energy_max": ("none", 0),
    "display_type": ("onehot", 5),
    "cloak": ("onehot", 5),
    "is_powered": ("onehot", 2),
    "is_hallucination": ("onehot", 2),
    "is_active": ("onehot", 2),
    "is_on_screen": ("onehot", 2),
    "is_flying": ("onehot", 2),
    "is_burrowed": ("onehot", 2),
    "is_selected": ("onehot", 2),
    "mineral_contents": ("bucket100", 19),
    "vespene_contents": ("bucket100", 26),
    "cargo_space_taken": ("onehot", 9),
    "cargo_space_max": ("onehot", 9),
    "assigned_harvesters": ("capped", 25),
    "ideal_harvesters": ("capped", 17),
    "weapon_cooldown": ("capped", 32),
    "order_length": ("capped", 9),
    "order_id_0": ("onehot", None),  # number of raw functions
    "order_id_1": ("onehot", None),
    "order_progress_0": ("progress", 11),
    "order_progress_1": ("progress", 11),
    "buff_id_0": ("capped", 300),
    "buff_id_1": ("capped", 300),
    "attack_upgrade_level": ("onehot", 4),
    "armor_upgrade_level": ("onehot", 4),
    "shield_upgrade_level": ("onehot", 4),
}
_RATIOS = (("health", "health_max"), ("shield", "shield_max"), ("energy", "energy_max"))

# Minimap plane encodings (pysc2 feature-layer scales).
_PLANE_ENCODING = {
    "height_map": ("value255", 1),
    "visibility_map": ("onehot", 4),
    "creep": ("onehot", 2),
    "camera": ("onehot", 2),
    "player_relative": ("onehot", 5),
    "alerts": ("onehot", 2),
    "pathable": ("onehot", 2),
    "buildable": ("onehot", 2),
}

_STAT_SCALARS = spec.PLAYER_COMMON_FIELDS
_TIME_BITS = 32


@dataclass(frozen=True)
class AlphaStarConfig:
    """Sizes and input columns of ``AlphaStarPolicy``.

    Attributes:
        entity_features, scalar_features, minimap_features: input column names (subsets of
            ``spec.ENTITY_FEATURES`` / ``spec.SCALAR_FEATURES`` / ``spec.MINIMAP_FEATURES``;
            ``replay()`` uses the replay-observable ones and no minimap).
        use_action_type_mask: the observation carries ``action_type_mask [.., F]`` (live env): it is
            a scalar input and masks the action-type logits.
        max_entities: entity rows E; max_selected: pointer steps K (picks, the last may be EOF).
        raw_resolution: raw grid R of entity x/y and target_location; minimap_size: minimap side
            (must equal R: the location head up-samples the spatial skip to the minimap grid).
        n_functions, n_unit_types, n_upgrades: vocabulary sizes (564, 375, 89).
        entity_dim, entity_layers, entity_heads, entity_ffn: entity transformer.
        scatter_channels, spatial_channels (3 down-sampling convs), n_resblocks, spatial_dim.
        scalar_dim, context_dim: ``embedded_scalar`` / ``scalar_context`` widths.
        lstm_hidden, lstm_layers: core. ae_dim: autoregressive embedding.
        action_type_hidden, action_type_resblocks, head_hidden: heads. key_dim: pointer keys.
        location_channels, location_resblocks: location head.
        baselines: value heads (mini-AS's five: win/loss and the pseudo-reward baselines build_order,
            built_units, upgrades, effects); each reads ``[lstm_out, embedded_scalar, scalar_context,
            build-order embedding]`` -> ``baseline_hidden`` -> ``baseline_resblocks`` residual blocks of inner
            width ``baseline_ffn`` -> 1, squashed to (-1, 1). Behaviour cloning does not train them.
        build_order_dim, build_order_layers: build-order transformer (output width 20 x dim).
    """

    entity_features: tuple = spec.ENTITY_FEATURES
    scalar_features: tuple = spec.SCALAR_FEATURES
    minimap_features: tuple = spec.MINIMAP_FEATURES
    use_action_type_mask: bool = True
    max_entities: int = 512
    max_selected: int = 12
    raw_resolution: int = 64
    minimap_size: int = 64
    n_functions: int = 564
    n_unit_types: int = 375
    n_upgrades: int = 89
    entity_dim: int = 64
    entity_layers: int = 3
    entity_heads: int = 2
    entity_ffn: int = 256
    scatter_channels: int = 16
    spatial_channels: tuple = (48, 32, 32)
    n_resblocks: int = 4
    spatial_dim: int = 64
    scalar_dim: int = 128
    context_dim: int = 128
    lstm_hidden: int = 128
    lstm_layers: int = 1
    ae_dim: int = 256
    action_type_hidden: int = 64
    action_type_resblocks: int = 4
    head_hidden: int = 64
    key_dim: int = 16
    location_channels: int = 32
    location_resblocks: int = 4
    baselines: tuple = ("winloss", "build_order", "built_units", "upgrades", "effects")
    baseline_hidden: int = 64
    baseline_ffn: int = 256
    baseline_resblocks: int = 4
    build_order_dim: int = 16
    build_order_layers: int = 3

    def __post_init__(self):
        for name, allowed in (
            ("entity_features", spec.ENTITY_FEATURES),
            ("scalar_features", spec.SCALAR_FEATURES),
            ("minimap_features", spec.MINIMAP_FEATURES),
        ):
            bad = [c for c in getattr(self, name) if c not in allowed]
            if bad:
                raise ValueError(f"{name} has unknown columns {bad}; expected names from {allowed}")
        if self.raw_resolution != self.minimap_size:
            raise ValueError(
                f"raw_resolution={self.raw_resolution} must equal minimap_size={self.minimap_size} "
                "(the location head decodes on the minimap grid)"
            )
        if self.minimap_size % 8 or self.minimap_size < 16:
            raise ValueError(f"minimap_size={self.minimap_size}; expected a multiple of 8, >= 16 (3 stride-2 convs)")
        if self.raw_resolution > 256:
            raise ValueError(f"raw_resolution={self.raw_resolution}; x/y are 8-bit encoded, expected <= 256")
        if self.max_selected < 1 or self.max_entities < 1:
            raise ValueError(f"max_selected={self.max_selected}, max_entities={self.max_entities}; expected >= 1")

    @classmethod
    def mini(cls, **kw) -> AlphaStarConfig:
        """The mini-AlphaStar preset (mini-AS v1.09 sizes, live feature set)."""
        return cls(**kw)

    @classmethod
    def replay(cls, base: AlphaStarConfig | None = None, **kw) -> AlphaStarConfig:
        """``base`` (default ``mini()``) restricted to the replay-observable columns, without minimap or mask."""
        base = base or cls.mini()
        return replace(
            base,
            entity_features=spec.REPLAY_ENTITY_FEATURES,
            scalar_features=spec.REPLAY_SCALAR_FEATURES,
            minimap_features=(),
            use_action_type_mask=False,
            **kw,
        )

    @classmethod
    def for_replays(cls, preset: str, max_entities: int, raw_resolution: int, max_selected: int) -> AlphaStarConfig:
        """Preset ``preset`` on a replay dataset's columns (:meth:`replay`) and sizes.

        Args:
            preset: ``"mini"`` (:meth:`mini`) or ``"tiny"`` (:meth:`tiny`).
            max_entities, raw_resolution: the dataset's entity rows and raw grid side (the minimap side too).
            max_selected: the dataset's selection length; the pointer steps are the preset's, at most this.

        Raises:
            ValueError: another preset, or sizes the model refuses (:meth:`__post_init__`).
        """
        presets = {"mini": cls.mini, "tiny": cls.tiny}
        if preset not in presets:
            raise ValueError(f"AlphaStarConfig preset {preset!r}; expected one of {sorted(presets)}")
        base = presets[preset]()
        return cls.replay(
            base,
            max_entities=max_entities,
            raw_resolution=raw_resolution,
            minimap_size=raw_resolution,
            max_selected=min(base.max_selected, max_selected),
        )

    @classmethod
    def tiny(cls, **kw) -> AlphaStarConfig:
        """Small sizes for tests (same structure)."""
        small = {
            "max_entities": 32,
            "max_selected": 4,
            "raw_resolution": 16,
            "minimap_size": 16,
            "entity_dim": 16,
            "entity_layers": 1,
            "entity_heads": 2,
            "entity_ffn": 32,
            "scatter_channels": 4,
            "spatial_channels": (8, 8, 8),
            "n_resblocks": 1,
            "spatial_dim": 16,
            "scalar_dim": 16,
            "context_dim": 16,
            "lstm_hidden": 16,
            "ae_dim": 32,
            "action_type_hidden": 16,
            "action_type_resblocks": 1,
            "head_hidden": 16,
            "key_dim": 8,
            "location_channels": 8,
            "location_resblocks": 1,
            "baselines": ("winloss",),
            "baseline_hidden": 16,
            "baseline_ffn": 16,
            "baseline_resblocks": 1,
            "build_order_dim": 8,
            "build_order_layers": 1,
        }
        small.update(kw)
        return cls(**small)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("entity_features", "scalar_features", "minimap_features", "spatial_channels", "baselines"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> AlphaStarConfig:
        d = dict(d)
        for k in ("entity_features", "scalar_features", "minimap_features", "spatial_channels", "baselines"):
            d[k] = tuple(d[k])
        return cls(**d)


def _class_index(x: torch.Tensor, n: int, name: str) -> torch.Tensor:
    """``x`` as int64 class indices (truncated toward zero), checked to lie in ``[0, n)``."""
    xi = x.long()
    if xi.numel():
        lo, hi = torch.aminmax(xi)
        if int(lo) < 0 or int(hi) >= n:
            raise ValueError(f"feature {name!r} has values in [{int(lo)}, {int(hi)}]; expected integers in [0, {n})")
    return xi


def _onehot(x: torch.Tensor, n: int, name: str) -> torch.Tensor:
    return F.one_hot(_class_index(x, n, name), n).float()


def entity_input_width(cfg: AlphaStarConfig) -> int:
    """Width of the encoded entity row for ``cfg.entity_features``."""
    return encode_entities(torch.zeros(1, 1, len(cfg.entity_features)), cfg).shape[-1]


def _entity_layout(cfg: AlphaStarConfig) -> tuple[list, list]:
    """Where each column lands in the encoded row of ``encode_entities``.

    Returns:
        ``(classes, dense)``: ``classes`` lists ``(column, kind, n, offset)`` for every one-hot block
        (``kind`` as in ``_ENTITY_ENCODING``; the block is ``n`` wide at ``offset``), ``dense`` lists
        ``(column, kind, offset, width)`` for the real-valued parts (bits, values, the progress value;
        ratios as ``("ratio", (num, den))``).
    """
    col = {n: i for i, n in enumerate(cfg.entity_features)}
    classes, dense, off = [], [], 0
    for name in cfg.entity_features:
        kind, size = _ENTITY_ENCODING[name]
        if kind == "onehot":
            n = cfg.n_unit_types if name == "unit_type" else (cfg.n_functions if size is None else size)
            classes.append((name, kind, n, off))
            off += n
        elif kind == "bits":
            dense.append((name, kind, off, 8))
            off += 8
        elif kind == "value":
            dense.append((name, kind, off, 1))
            off += 1
        elif kind == "sqrt":
            n = math.floor(math.sqrt(size)) + 1
            classes.append((name, kind, n, off))
            off += n
        elif kind in ("bucket100", "capped"):
            classes.append((name, kind, size, off))
            off += size
        elif kind == "progress":
            dense.append((name, kind, off, 1))
            classes.append((name, kind, 10, off + 1))
            off += 11
    for num, den in _RATIOS:
        if num in col and den in col:
            dense.append(("ratio", (num, den), off, 1))
            off += 1
    return classes, dense


def encode_entities(ent: torch.Tensor, cfg: AlphaStarConfig) -> torch.Tensor:
    """Entity rows as the entity encoder reads them (mini-AS ``entity_encoder.py`` rules).

    ``AlphaStarPolicy`` computes its first layer on this encoding without building it (its
    ``_entity_embedding``); this function is the definition, for inspection and tests.

    Args:
        ent: ``[..., C]`` raw columns of ``cfg.entity_features``.
        cfg: the model's config.

    Returns:
        ``[..., entity_input_width(cfg)]`` float32.

    Raises:
        ValueError: a one-hot column with a value outside its classes.
    """
    col = {n: ent[..., i] for i, n in enumerate(cfg.entity_features)}
    parts = []
    for name in cfg.entity_features:
        kind, size = _ENTITY_ENCODING[name]
        v = col[name]
        if kind == "onehot":
            n = cfg.n_unit_types if name == "unit_type" else (cfg.n_functions if size is None else size)
            parts.append(_onehot(v, n, name))
        elif kind == "bits":
            vi = v.long().clamp(0, 255)
            parts.append(((vi.unsqueeze(-1) >> torch.arange(7, -1, -1, device=v.device)) & 1).float())
        elif kind == "value":
            parts.append(v.unsqueeze(-1).float())
        elif kind == "sqrt":
            n = math.floor(math.sqrt(size)) + 1
            parts.append(F.one_hot(torch.sqrt(v.float().clamp(0, size)).floor().long(), n).float())
        elif kind == "bucket100":
            parts.append(F.one_hot((v.float().clamp(min=0) / 100).floor().long().clamp(max=size - 1), size).float())
        elif kind == "capped":
            parts.append(F.one_hot(v.long().clamp(0, size - 1), size).float())
        elif kind == "progress":
            p = v.float().clamp(0, 1)
            parts.append(torch.cat([p.unsqueeze(-1), F.one_hot((p * 10).floor().long().clamp(max=9), 10).float()], -1))
    for num, den in _RATIOS:
        if num in col and den in col:
            parts.append((col[num].float() / col[den].float().clamp(min=1)).unsqueeze(-1))
    return torch.cat(parts, -1)


def encode_minimap(minimap: torch.Tensor, cfg: AlphaStarConfig) -> torch.Tensor:
    """Minimap planes as the spatial encoder reads them: each plane one-hot (pysc2 feature-layer
    scales), the height map divided by 255, stacked in ``cfg.minimap_features`` order.

    ``AlphaStarPolicy`` computes its first spatial layer on this encoding without building it (its
    ``_spatial_input``); this function is the definition, for inspection and tests.

    Args:
        minimap: ``[N, P, M, M]`` integer planes (``cfg.minimap_features``).
        cfg: the model's config.

    Returns:
        ``[N, W, M, M]`` float32, ``W`` the summed widths of ``_PLANE_ENCODING``.

    Raises:
        ValueError: a plane with a value outside its classes.
    """
    planes = []
    for i, name in enumerate(cfg.minimap_features):
        kind, n = _PLANE_ENCODING[name]
        if kind == "value255":
            planes.append(minimap[:, i : i + 1].float() / 255.0)
        else:
            planes.append(_onehot(minimap[:, i], n, name).permute(0, 3, 1, 2))
    return torch.cat(planes, 1)


class _GLU(nn.Module):
    """mini-AS gated linear unit: ``Linear_out(sigmoid(Linear_ctx(ctx)) * x)``."""

    def __init__(self, in_dim: int, ctx_dim: int, out_dim: int):
        super().__init__()
        self.gate = nn.Linear(ctx_dim, in_dim)
        self.out = nn.Linear(in_dim, out_dim)

    def forward(self, x, ctx):
        return self.out(torch.sigmoid(self.gate(ctx)) * x)


class _ResMLP(nn.Module):
    """Pre-LayerNorm residual MLP block ``x + W2 relu(W1 LN(x))`` (inner width ``inner``, default ``dim``)."""

    def __init__(self, dim: int, inner: int | None = None):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.fc1, self.fc2 = nn.Linear(dim, inner or dim), nn.Linear(inner or dim, dim)

    def forward(self, x):
        return x + self.fc2(F.relu(self.fc1(self.ln(x))))


class _ResConv(nn.Module):
    def __init__(self, ch: int):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(ch, ch, 3, padding=1), nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        return x + self.c2(F.relu(self.c1(F.relu(x))))


class _FiLMResConv(nn.Module):
    """Residual conv block whose output is modulated by ``gamma, beta`` from the autoregressive embedding."""

    def __init__(self, ch: int, ae_dim: int):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(ch, ch, 3, padding=1), nn.Conv2d(ch, ch, 3, padding=1)
        self.film = nn.Linear(ae_dim, 2 * ch)

    def forward(self, x, ae):
        gamma, beta = self.film(ae).chunk(2, -1)
        h = self.c2(F.relu(self.c1(F.relu(x))))
        return x + F.relu(h * gamma[..., None, None] + beta[..., None, None])


def _mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


TEMPERATURE_RANGE = (float(torch.finfo(torch.float32).tiny), float(torch.finfo(torch.float32).max))
"""The sampling temperatures the heads accept: float32's smallest normal to its largest finite value (the
logits are float32; outside this range the temperature itself would round to 0 or infinity)."""
TEMPERATURE_EXPECTED = (
    f"expected a real number in [{TEMPERATURE_RANGE[0]:.3g}, {TEMPERATURE_RANGE[1]:.3g}] (1: sample as trained; "
    "the argmax is greedy play, not a temperature)"
)
"""What :func:`check_temperature`'s errors say was expected (``eval_fullgame.py --temperature`` says the same)."""


def check_temperature(temperature) -> float:
    """``temperature`` as a float, if the heads can sample at it: a real number (not a bool) in
    :data:`TEMPERATURE_RANGE` (``softmax(logits / t)``; 1: the policy as trained).

    Raises:
        ValueError: naming the value: a bool, a non-number (a string, None, a tensor), 0, a negative, NaN,
            infinity, or a value float32 cannot hold (``greedy`` is the argmax).
    """
    low, high = TEMPERATURE_RANGE
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):  # numpy scalars are Real
        raise ValueError(f"temperature={temperature!r} ({type(temperature).__name__}); {TEMPERATURE_EXPECTED}")
    try:
        t = float(temperature)
    except OverflowError:  # an int past float's range
        raise ValueError(f"temperature={temperature!r}; {TEMPERATURE_EXPECTED}") from None
    if not low <= t <= high:  # NaN fails this too
        raise ValueError(f"temperature={temperature!r}; {TEMPERATURE_EXPECTED}")
    return t


def check_play(greedy: bool, temperature) -> float:
    """The temperature (:func:`check_temperature`) if ``greedy`` and it go together: argmax play samples
    nothing, so ``greedy=True`` takes only the default 1.

    Raises:
        ValueError: a refused temperature, or one other than 1 with ``greedy``.
    """
    t = check_temperature(temperature)
    if greedy and t != 1.0:
        raise ValueError(
            f"temperature={temperature!r} with greedy=True: the argmax samples nothing; expected temperature 1 with greedy"
        )
    return t


def sample_tempered(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Draw from ``softmax(logits / temperature)`` over the last dim; entries at ``MASKED_LOGIT`` (masked) are
    never drawn at any temperature, and no temperature in :data:`TEMPERATURE_RANGE` makes a NaN.

    At 1 it is ``Categorical(logits=logits).sample()`` exactly (the same draws as before temperatures
    existed). Otherwise the logits are shifted by their row maximum before dividing (a near-0 temperature
    then gives 0 for the maximum and -inf elsewhere: the argmax, ties drawn uniformly) and masked entries are
    set to -inf (a large temperature would otherwise lift ``MASKED_LOGIT / t`` to about 0, as likely as a
    legal entry). ``logits``: ``[..., A]`` float, each row with at least one entry above ``MASKED_LOGIT`` (every
    head keeps one: a row with nothing allowed would be all -inf, a NaN); returns ``[...]`` int64."""
    if temperature == 1.0:
        return torch.distributions.Categorical(logits=logits).sample()
    shifted = (logits - logits.amax(-1, keepdim=True)) / temperature
    shifted = torch.where(logits > MASKED_LOGIT, shifted, torch.full_like(shifted, -math.inf))
    return torch.distributions.Categorical(logits=shifted).sample()


class AlphaStarPolicy(nn.Module):
    """mini-AlphaStar-style policy (see the module docstring).

    ``forward(obs, state=None, labels=None, greedy=False, first=None, temperature=1.0)``:

    Args:
        obs: dict of ``[B, T, ...]`` tensors (T = time steps of one sequence):
            ``entities [B,T,E,C]`` (raw values of ``cfg.entity_features``; ``build_progress`` in 0..1),
            ``entity_count [B,T]`` int, ``scalars [B,T,len(scalar_features)]``, ``upgrades [B,T,89]``,
            ``unit_counts [B,T,375]``, ``build_order [B,T,20]`` int (vocabulary indices, 0 = none),
            ``minimap [B,T,P,M,M]`` (when ``cfg.minimap_features``), ``action_type_mask [B,T,F]`` bool
            (when ``cfg.use_action_type_mask``).
        state: LSTM ``(h, c)`` each ``[layers, B, hidden]``, or None for zeros.
        labels: teacher forcing: ``action_type [B,T]``, ``delay [B,T]`` (game loops 0..127), ``queued [B,T]``,
            ``selected [B,T,K']`` (entity rows, -1 padded), ``selected_count [B,T]``, ``target_unit [B,T]``
            (row, -1 none), ``target_location [B,T]`` (``row * R + col``, -1 none). None: the heads
            sample (or argmax with ``greedy``) and feed their own choices forward.
        temperature: the heads sample from ``softmax(logits / temperature)`` (> 0; 1: the policy as
            trained). The returned logits are the policy's own, not the distribution the actions were drawn from
            when the temperature is not 1: do not store them as behaviour logits for off-policy training then.
        first: ``[B, T]`` bool, or None: the LSTM state of game ``b`` is zeroed before step ``t``
            where ``first[b, t]`` (a new episode starts inside the sequence; AlphaStar's actors
            reset the core at each new game). None: the state carries through all T steps.

    Returns:
        ``(out, state)``; ``out`` holds logits ``action_type [B,T,F]``, ``delay [B,T,128]``,
        ``queued [B,T,2]``, ``selected_units [B,T,K,E+1]`` (index E = end of selection),
        ``target_unit [B,T,E]``, ``target_location [B,T,R*R]``; the pointer masks
        ``selected_mask [B,T,K,E+1]`` and ``target_mask [B,T,E]`` (bool); ``value``: baseline name ->
        ``[B,T]`` in (-1, 1);
        and ``actions`` (dict of the chosen or teacher-forced indices, same keys as ``labels``,
        ``selected`` as ``[B,T,K]`` with E for EOF).

    Raises:
        ValueError: (``forward``) a ``temperature`` :func:`check_play` refuses (one other than 1 with ``greedy``).
    """

    def __init__(self, cfg: AlphaStarConfig):
        super().__init__()
        self.cfg = cfg
        c = cfg
        ew = entity_input_width(c)
        self.entity_in = nn.Linear(ew, c.entity_dim)
        # entity_in on the encoded rows, computed without building them (``_entity_embedding``)
        self._entity_classes, self._entity_dense = _entity_layout(c)
        dense_cols = [off + j for _, _, off, width in self._entity_dense for j in range(width)]
        self.register_buffer("_entity_dense_cols", torch.as_tensor(dense_cols, dtype=torch.int64), persistent=False)
        layer = nn.TransformerEncoderLayer(
            c.entity_dim, c.entity_heads, c.entity_ffn, dropout=0.0, batch_first=True, layer_norm_eps=1e-6
        )
        self.entity_tf = nn.TransformerEncoder(layer, c.entity_layers, enable_nested_tensor=False)
        self.entity_conv = nn.Linear(c.entity_dim, c.entity_dim)
        self.entity_fc = nn.Linear(c.entity_dim, c.entity_dim)
        # spatial
        plane_w = sum(_PLANE_ENCODING[p][1] for p in c.minimap_features)
        self.scatter = nn.Linear(c.entity_dim, c.scatter_channels)
        self.spatial_in = nn.Conv2d(c.scatter_channels + plane_w, c.scatter_channels, 1)
        # where each minimap plane's encoding sits among spatial_in's input channels (``_spatial_input``)
        self._plane_offsets, off = [], c.scatter_channels
        for name in c.minimap_features:
            self._plane_offsets.append(off)
            off += _PLANE_ENCODING[name][1]
        chans = (c.scatter_channels,) + tuple(c.spatial_channels)
        self.down = nn.ModuleList([nn.Conv2d(chans[i], chans[i + 1], 4, 2, 1) for i in range(3)])
        self.res = nn.ModuleList([_ResConv(chans[-1]) for _ in range(c.n_resblocks)])
        side = c.minimap_size // 8
        self.spatial_fc = nn.Linear(chans[-1] * side * side, c.spatial_dim)
        self._build_scalar_encoder(c)
        # core
        self.core = nn.LSTM(c.scalar_dim + c.entity_dim + c.spatial_dim, c.lstm_hidden, c.lstm_layers, batch_first=True)
        # action type
        self.at_in = nn.Linear(c.lstm_hidden, c.action_type_hidden)
        self.at_res = nn.ModuleList([_ResMLP(c.action_type_hidden) for _ in range(c.action_type_resblocks)])
        self.at_out = _GLU(c.action_type_hidden, c.context_dim, c.n_functions)
        self.at_embed = nn.Linear(c.n_functions, c.action_type_hidden)
        self.ae_from_action = _GLU(c.action_type_hidden, c.context_dim, c.ae_dim)
        self.ae_from_core = _GLU(c.lstm_hidden, c.context_dim, c.ae_dim)
        # delay / queued
        nd = spec.MAX_DELAY + 1
        self.delay_head = _mlp([c.ae_dim, c.head_hidden, c.head_hidden, nd])
        self.delay_embed = _mlp([nd, c.head_hidden, c.head_hidden, c.ae_dim])
        self.queued_head = _mlp([c.ae_dim, c.head_hidden, c.head_hidden, 2])
        self.queued_embed = _mlp([2, c.head_hidden, c.head_hidden, c.ae_dim])
        # selected units (pointer network)
        self.su_key = nn.Linear(c.entity_dim, c.key_dim)
        self.su_eof = nn.Parameter(torch.randn(c.key_dim) * 0.1)
        self.su_func = nn.Embedding(c.n_functions, c.head_hidden)
        self.su_fc1, self.su_fc2 = nn.Linear(c.ae_dim, c.head_hidden), nn.Linear(c.head_hidden, c.key_dim)
        self.su_lstm = nn.LSTMCell(c.key_dim, c.key_dim)
        self.su_ae = nn.Linear(c.key_dim, c.ae_dim)
        # target unit
        self.tu_key = nn.Linear(c.entity_dim, c.key_dim)
        self.tu_func = nn.Embedding(c.n_functions, c.head_hidden)
        self.tu_fc1, self.tu_fc2 = nn.Linear(c.ae_dim, c.head_hidden), nn.Linear(c.head_hidden, c.key_dim)
        # location
        self.loc_ae = nn.Linear(c.ae_dim, 4 * side * side)
        self.loc_in = nn.Conv2d(4 + chans[-1], c.location_channels, 1)
        self.loc_res = nn.ModuleList([_FiLMResConv(c.location_channels, c.ae_dim) for _ in range(c.location_resblocks)])
        lc = c.location_channels
        self.loc_up = nn.ModuleList(
            [
                nn.ConvTranspose2d(lc, lc // 2, 4, 2, 1),
                nn.ConvTranspose2d(lc // 2, lc // 4, 4, 2, 1),
                nn.ConvTranspose2d(lc // 4, 1, 4, 2, 1),
            ]
        )
        # value baselines
        base_w = c.lstm_hidden + c.scalar_dim + c.context_dim + spec.BUILD_ORDER_LENGTH * c.build_order_dim
        self.base = nn.ModuleDict(
            {
                name: nn.Sequential(
                    nn.Linear(base_w, c.baseline_hidden),
                    nn.ReLU(),
                    *[_ResMLP(c.baseline_hidden, c.baseline_ffn) for _ in range(c.baseline_resblocks)],
                    nn.ReLU(),
                    nn.Linear(c.baseline_hidden, 1),
                )
                for name in c.baselines
            }
        )
        self._argmask = torch.as_tensor(spec.argument_masks(), dtype=torch.bool) if c.n_functions == 564 else None

    def _build_scalar_encoder(self, c: AlphaStarConfig) -> None:
        """The scalar encoder's layers: one embedding per present scalar group, the context, the build order."""
        self.stat_cols = [i for i, n in enumerate(c.scalar_features) if n in _STAT_SCALARS]
        sc = {n: i for i, n in enumerate(c.scalar_features)}
        self.sc = sc
        emb, ctx = {}, {}
        if self.stat_cols:
            emb["stats"] = nn.Linear(len(self.stat_cols), 48)
        for r in ("home_race", "away_race"):
            if r in sc:
                ctx[r] = nn.Linear(5, 16)
        if "game_loop" in sc:
            emb["time"] = nn.Linear(_TIME_BITS, 64)
        if "last_action_type" in sc:
            emb["last_action_type"] = nn.Linear(c.n_functions, 32)
        if "last_delay" in sc:
            emb["last_delay"] = nn.Linear(spec.MAX_DELAY + 1, 48)
        if "last_queued" in sc:
            emb["last_queued"] = nn.Linear(2, 64)
        emb["upgrades"] = nn.Linear(c.n_upgrades, 32)
        emb["unit_counts"] = nn.Linear(c.n_unit_types, 48)
        ctx["units_buildings"] = nn.Linear(c.n_unit_types, 16)
        ctx["upgrade"] = nn.Linear(c.n_upgrades, 16)
        if c.use_action_type_mask:
            ctx["available_actions"] = nn.Linear(c.n_functions, 48)
        self.scalar_emb, self.scalar_ctx = nn.ModuleDict(emb), nn.ModuleDict(ctx)
        bo_len = spec.BUILD_ORDER_LENGTH
        self.bo_in = nn.Linear(c.n_unit_types + bo_len, c.build_order_dim)
        bo_layer = nn.TransformerEncoderLayer(
            c.build_order_dim, 2, 2 * c.build_order_dim, dropout=0.0, batch_first=True, layer_norm_eps=1e-6
        )
        self.bo_tf = nn.TransformerEncoder(bo_layer, c.build_order_layers, enable_nested_tensor=False)
        emb_w = sum(m.out_features for m in emb.values())
        ctx_w = sum(m.out_features for m in ctx.values()) + bo_len * c.build_order_dim
        self.embedded_scalar = nn.Linear(emb_w + ctx_w, c.scalar_dim)
        self.scalar_context = nn.Linear(ctx_w, c.context_dim)

    # ------------------------------------------------------------------ helpers
    def argument_masks(self, device) -> torch.Tensor:
        """``[F, 6]`` bool: heads used by each action type (``spec.argument_masks()``)."""
        if self._argmask is None:
            raise ValueError(f"argument masks are defined for the 564 raw functions; this model has {self.cfg.n_functions}")
        return self._argmask.to(device)

    def n_params(self) -> dict[str, int]:
        """Parameter count per part and ``total``."""
        groups = {
            "entity_encoder": ("entity_",),
            "spatial_encoder": ("scatter", "spatial_", "down", "res."),
            "scalar_encoder": ("scalar_", "bo_", "embedded_scalar"),
            "core": ("core",),
            "action_type_head": ("at_", "ae_from"),
            "delay_head": ("delay_",),
            "queued_head": ("queued_",),
            "selected_units_head": ("su_",),
            "target_unit_head": ("tu_",),
            "location_head": ("loc_",),
            "baselines": ("base.",),
        }
        out = {k: 0 for k in groups}
        for name, p in self.named_parameters():
            for k, prefixes in groups.items():
                if name.startswith(prefixes):
                    out[k] += p.numel()
                    break
            else:
                raise AssertionError(f"parameter {name} is in no group")
        out["total"] = sum(p.numel() for p in self.parameters())
        return out

    def _entity_embedding(self, ent: torch.Tensor) -> torch.Tensor:
        """``entity_in(encode_entities(ent, cfg))`` without building the encoded rows.

        The encoding is mostly one-hot blocks (unit type 375 wide, two order ids 564 each, ...), so
        the linear layer on it is a sum of the weight's columns picked by each block's class plus a
        small product with the real-valued parts: the same function (equal up to float32 rounding;
        ``tests/test_alphastar_model.py``) without a ``[.., ~1,700]`` float tensor per entity row.

        Args:
            ent: ``[..., C]`` raw entity columns (``cfg.entity_features``).

        Returns:
            ``[..., entity_dim]`` float32.

        Raises:
            ValueError: a one-hot column with a value outside its classes (as ``encode_entities``).
        """
        col = {n: ent[..., i] for i, n in enumerate(self.cfg.entity_features)}
        weight, bias = self.entity_in.weight, self.entity_in.bias
        dense = []
        for name, kind, _, _ in self._entity_dense:
            if kind == "bits":
                vi = col[name].long().clamp(0, 255)
                dense.append(((vi.unsqueeze(-1) >> torch.arange(7, -1, -1, device=ent.device)) & 1).float())
            elif kind == "value":
                dense.append(col[name].unsqueeze(-1).float())
            elif kind == "progress":
                dense.append(col[name].float().clamp(0, 1).unsqueeze(-1))
            else:  # ratio
                num, den = kind
                dense.append((col[num].float() / col[den].float().clamp(min=1)).unsqueeze(-1))
        if dense:
            out = F.linear(torch.cat(dense, -1), weight[:, self._entity_dense_cols], bias)
        else:
            out = bias.expand(*ent.shape[:-1], -1)
        idx = []
        for name, kind, n, off in self._entity_classes:
            v, size = col[name], _ENTITY_ENCODING[name][1]
            if kind == "onehot":
                i = _class_index(v, n, name)
            elif kind == "sqrt":
                i = torch.sqrt(v.float().clamp(0, size)).floor().long()
            elif kind == "bucket100":
                i = (v.float().clamp(min=0) / 100).floor().long().clamp(max=size - 1)
            elif kind == "capped":
                i = v.long().clamp(0, size - 1)
            else:  # progress: its ten tenths
                i = (v.float().clamp(0, 1) * 10).floor().long().clamp(max=9)
            idx.append(i + off)
        if idx:
            rows = weight.t().contiguous()  # [W, entity_dim]: each class row contiguous for the gather
            picked = F.embedding_bag(torch.stack(idx, -1).reshape(-1, len(idx)), rows, mode="sum")
            out = out + picked.reshape(*ent.shape[:-1], -1)
        return out

    def _spatial_input(self, sc: torch.Tensor, ent: torch.Tensor, minimap: torch.Tensor | None) -> torch.Tensor:
        """``spatial_in`` (a 1x1 conv) on ``[scatter grid, encoded minimap planes]``, before its ReLU.

        The grid sums the entities' scatter features per minimap cell; the planes are one-hot
        (and the height map scaled to 0..1). The conv is linear in each, so it is computed as: the
        bias, plus for each cell one row of a table holding the summed weight columns of every
        combination of the cell's plane classes, plus the height map times its column, plus each
        entity's projected scatter features added at its cell. Equal to the conv on the stacked
        planes up to float32 rounding, without its ``[B, 16 + 20, M, M]`` input.

        Args:
            sc: ``[BT, E, scatter_channels]`` entity scatter features (zero on padding rows).
            ent: ``[BT, E, C]`` raw entity columns (x, y place an entity on the grid).
            minimap: ``[B, T, P, M, M]`` integer planes (``cfg.minimap_features``), or None without them.

        Returns:
            ``[BT, scatter_channels, M, M]`` float32 (channels-last strides).

        Raises:
            ValueError: a minimap plane with a value outside its classes.
        """
        c = self.cfg
        BT, M, S = sc.shape[0], c.minimap_size, c.scatter_channels
        w = self.spatial_in.weight[:, :, 0, 0]  # [S, S + plane width]
        table, combo, heights = None, None, []
        if c.minimap_features:
            mm = minimap.reshape(BT, len(c.minimap_features), M, M)
            for i, (name, off) in enumerate(zip(c.minimap_features, self._plane_offsets, strict=True)):
                kind, n = _PLANE_ENCODING[name]
                if kind == "value255":
                    heights.append((mm[:, i].float() / 255.0, w[:, off]))
                    continue
                cls = _class_index(mm[:, i], n, name)
                block = w[:, off : off + n].t().contiguous()  # [n, S], rows contiguous for the gather
                if table is None:
                    table, combo = block, cls
                else:  # every combination of the classes so far with this plane's
                    table = (table.unsqueeze(1) + block.unsqueeze(0)).reshape(-1, S)
                    combo = combo * n + cls
        # a fresh [BT, M, M, S] tensor, updated in place below (none of the in-place steps' backward
        # passes reads it)
        if table is not None:
            pre = F.embedding(combo, table + self.spatial_in.bias)
        else:
            pre = self.spatial_in.bias.expand(BT, M, M, S).clone()
        for plane, col in heights:
            pre.addcmul_(plane.unsqueeze(-1), col)
        cols = {n: i for i, n in enumerate(c.entity_features)}
        if "x" in cols and "y" in cols:
            scale = M / c.raw_resolution
            gx = (ent[..., cols["x"]] * scale).long().clamp(0, M - 1)
            gy = (ent[..., cols["y"]] * scale).long().clamp(0, M - 1)
            cell = (gy * M + gx).unsqueeze(-1).expand(-1, -1, S)
            pre.view(BT, M * M, S).scatter_add_(1, cell, F.linear(sc, w[:, :S]))
        return pre.permute(0, 3, 1, 2)

    def _encode(self, obs: dict):
        c = self.cfg
        ent = obs["entities"].float()
        B, T, E = ent.shape[:3]
        if E != c.max_entities:
            raise ValueError(f"entities has {E} rows; the model was built for max_entities={c.max_entities}")
        if ent.shape[3] != len(c.entity_features):
            raise ValueError(f"entities has {ent.shape[3]} columns; expected {len(c.entity_features)} ({c.entity_features})")
        BT = B * T
        ent = ent.reshape(BT, E, -1)
        count = obs["entity_count"].reshape(BT).long().clamp(0, E)
        valid = torch.arange(E, device=ent.device).unsqueeze(0) < count.unsqueeze(1)
        # A fully padded row set would make attention softmax NaN: keep row 0 attendable (it is never
        # selectable: the pointer masks use ``valid``).
        attend = valid.clone()
        attend[:, 0] = True
        x = self._entity_embedding(ent)
        x = self.entity_tf(x, src_key_padding_mask=~attend)
        entity_emb = F.relu(self.entity_conv(F.relu(x)))
        mean = (x * valid.unsqueeze(-1)).sum(1) / count.clamp(min=1).unsqueeze(-1)
        embedded_entity = F.relu(self.entity_fc(mean))
        # spatial: entities scattered to their minimap cells, with the encoded minimap planes
        sc = F.relu(self.scatter(entity_emb)) * valid.unsqueeze(-1)
        h = F.relu(self._spatial_input(sc, ent, obs.get("minimap")))
        for conv in self.down:
            h = F.relu(conv(h))
        skips = []
        for blk in self.res:
            h = blk(h)
            skips.append(h)
        embedded_spatial = F.relu(self.spatial_fc(F.relu(h).flatten(1)))
        # scalars
        s = obs["scalars"].reshape(BT, -1).float()
        embs, ctxs = [], []
        if self.stat_cols:
            embs.append(F.relu(self.scalar_emb["stats"](torch.log1p(s[:, self.stat_cols].clamp(min=0)))))
        for r in ("home_race", "away_race"):
            if r in self.sc:
                ctxs.append(F.relu(self.scalar_ctx[r](_onehot(s[:, self.sc[r]], 5, r))))
        if "game_loop" in self.sc:
            loops = s[:, self.sc["game_loop"]].long().clamp(min=0)
            bits = ((loops.unsqueeze(-1) >> torch.arange(_TIME_BITS - 1, -1, -1, device=s.device)) & 1).float()
            embs.append(F.relu(self.scalar_emb["time"](bits)))
        if "last_action_type" in self.sc:
            embs.append(
                F.relu(
                    self.scalar_emb["last_action_type"](
                        _onehot(s[:, self.sc["last_action_type"]], c.n_functions, "last_action_type")
                    )
                )
            )
        if "last_delay" in self.sc:
            embs.append(
                F.relu(
                    self.scalar_emb["last_delay"](
                        _onehot(s[:, self.sc["last_delay"]].clamp(0, spec.MAX_DELAY), spec.MAX_DELAY + 1, "last_delay")
                    )
                )
            )
        if "last_queued" in self.sc:
            embs.append(F.relu(self.scalar_emb["last_queued"](_onehot(s[:, self.sc["last_queued"]], 2, "last_queued"))))
        up = obs["upgrades"].reshape(BT, -1).float()
        uc = obs["unit_counts"].reshape(BT, -1).float()
        embs.append(F.relu(self.scalar_emb["upgrades"](up)))
        embs.append(F.relu(self.scalar_emb["unit_counts"](torch.sqrt(uc.clamp(min=0)))))
        ctxs.append(F.relu(self.scalar_ctx["units_buildings"]((uc > 0).float())))
        ctxs.append(F.relu(self.scalar_ctx["upgrade"](up)))
        at_mask = None
        if c.use_action_type_mask:
            at_mask = obs["action_type_mask"].reshape(BT, -1).bool()
            ctxs.append(F.relu(self.scalar_ctx["available_actions"](at_mask.float())))
        bo = obs["build_order"].reshape(BT, -1).long()
        pos = torch.eye(bo.shape[1], device=s.device).expand(BT, -1, -1)
        bo_x = self.bo_in(torch.cat([_onehot(bo, c.n_unit_types, "build_order"), pos], -1))
        bo_emb = self.bo_tf(bo_x).flatten(1)
        ctxs.append(bo_emb)
        ctx_cat = torch.cat(ctxs, -1)
        embedded_scalar = F.relu(self.embedded_scalar(torch.cat(embs + [ctx_cat], -1)))
        scalar_context = F.relu(self.scalar_context(ctx_cat))
        return {
            "B": B,
            "T": T,
            "entity_emb": entity_emb,
            "valid": valid,
            "count": count,
            "embedded_entity": embedded_entity,
            "embedded_spatial": embedded_spatial,
            "skip": skips[-1] if skips else h,
            "embedded_scalar": embedded_scalar,
            "build_order": bo_emb,
            "scalar_context": scalar_context,
            "at_mask": at_mask,
            "alliance": ent[..., c.entity_features.index("alliance")] if "alliance" in c.entity_features else None,
        }

    def _core_with_resets(self, x: torch.Tensor, state, first: torch.Tensor):
        """The LSTM over ``x [B, T, D]``, its state zeroed for the games where ``first [B, T]`` before step t."""
        B, T = x.shape[:2]
        if first.shape != (B, T) or first.dtype != torch.bool:
            raise ValueError(f"first has shape {tuple(first.shape)} dtype {first.dtype}; expected [B, T] = ({B}, {T}) bool")
        h, cst = state if state is not None else self.initial_state(B, x.device)
        outs = []
        for t in range(T):
            keep = (~first[:, t]).to(x.dtype).view(1, B, 1)
            o, (h, cst) = self.core(x[:, t : t + 1], (h * keep, cst * keep))
            outs.append(o)
        return torch.cat(outs, 1), (h, cst)

    def initial_state(self, batch: int, device=None):
        """Zero LSTM state ``(h, c)``, each ``[lstm_layers, batch, lstm_hidden]``."""
        z = torch.zeros(self.cfg.lstm_layers, batch, self.cfg.lstm_hidden, device=device)
        return z, z.clone()

    def _selected_units_head(
        self, enc: dict, ae: torch.Tensor, a: torch.Tensor, argm: torch.Tensor, lab, greedy: bool, temperature: float = 1.0
    ):
        """The selected-units pointer network: up to ``max_selected`` picks, each a unit or end of selection.

        Returns ``(logits, masks, picks, ae)``: per pick ``[BT, E+1]`` masked logits, their bool masks,
        the ``[BT]`` chosen (or teacher-forced) index (E = end), and ``ae`` with the picked units' keys added.
        """
        c = self.cfg
        BT, dev = ae.shape[0], ae.device
        E, K = c.max_entities, c.max_selected
        valid = enc["valid"]
        selectable = valid if enc["alliance"] is None else valid & (enc["alliance"] == 1)
        keys = self.su_key(enc["entity_emb"])  # [BT, E, k]
        keys = torch.cat([keys, self.su_eof.expand(BT, 1, -1)], 1)  # [BT, E+1, k]
        mean_key = (keys[:, :E] * valid.unsqueeze(-1)).sum(1) / enc["count"].clamp(min=1).unsqueeze(-1)
        func = self.su_func(a)
        hx = torch.zeros(BT, c.key_dim, device=dev)
        cx = torch.zeros_like(hx)
        picked = torch.zeros(BT, E + 1, dtype=torch.bool, device=dev)
        ended = ~argm[:, 3]
        su_logits, su_masks, su_actions = [], [], []
        if lab is not None:
            sel_lab = lab["selected"].long()
            cnt = lab["selected_count"].long()
        for k in range(K):
            query = self.su_fc2(F.relu(self.su_fc1(ae) + func))
            hx, cx = self.su_lstm(query, (hx, cx))
            logits = torch.einsum("bek,bk->be", keys, hx)
            mask = torch.cat([selectable, torch.full((BT, 1), k > 0, device=dev)], 1) & ~picked
            # a row with no selectable unit at step 0 may only end the selection
            mask[:, E] |= ~mask[:, :E].any(1)
            su_logits.append(torch.where(mask, logits, torch.full_like(logits, MASKED_LOGIT)))
            su_masks.append(mask)
            if lab is not None:
                idx = torch.where(
                    k < cnt, sel_lab[:, k] if k < sel_lab.shape[1] else torch.full_like(cnt, E), torch.full_like(cnt, E)
                ).clamp(-1, E)
                idx = torch.where(idx < 0, torch.full_like(idx, E), idx)
            else:
                idx = su_logits[-1].argmax(-1) if greedy else sample_tempered(su_logits[-1], temperature)
            idx = torch.where(ended, torch.full_like(idx, E), idx)
            su_actions.append(idx)
            is_unit = (idx < E) & ~ended
            picked = picked | (F.one_hot(idx, E + 1).bool() & is_unit.unsqueeze(1))
            chosen = keys.gather(1, idx.view(BT, 1, 1).expand(-1, 1, keys.shape[-1])).squeeze(1)
            ae = ae + self.su_ae(chosen - mean_key) * is_unit.unsqueeze(-1).float()
            ended = ended | (idx == E)
        return su_logits, su_masks, su_actions, ae

    def _location_logits(self, enc: dict, ae: torch.Tensor) -> torch.Tensor:
        """``[BT, R*R]`` target-location logits: ``ae`` FiLM-conditioned over the spatial skip, upsampled x8."""
        BT, side = ae.shape[0], self.cfg.minimap_size // 8
        x = torch.cat([self.loc_ae(ae).reshape(BT, 4, side, side), enc["skip"]], 1)
        x = F.relu(self.loc_in(x))
        for blk in self.loc_res:
            x = blk(x, ae)
        x = F.relu(x)
        for i, up in enumerate(self.loc_up):
            x = up(x)
            if i < len(self.loc_up) - 1:
                x = F.relu(x)
        return x.reshape(BT, -1)

    def forward(
        self,
        obs: dict,
        state=None,
        labels: dict | None = None,
        greedy: bool = False,
        first: torch.Tensor | None = None,
        temperature: float = 1.0,
    ):
        temperature = check_play(greedy, temperature)
        c = self.cfg
        enc = self._encode(obs)
        B, T = enc["B"], enc["T"]
        BT = B * T
        dev = enc["entity_emb"].device
        core_in = torch.cat([enc["embedded_scalar"], enc["embedded_entity"], enc["embedded_spatial"]], -1)
        if first is None or not bool(first.any()):
            lstm_out, state = self.core(core_in.reshape(B, T, -1), state)
        else:
            lstm_out, state = self._core_with_resets(core_in.reshape(B, T, -1), state, first)
        lstm_out = lstm_out.reshape(BT, -1)
        ctx = enc["scalar_context"]

        def bt(x):
            return x.reshape(B, T, *x.shape[1:])

        lab = None if labels is None else {k: v.reshape(BT, *v.shape[2:]) for k, v in labels.items()}

        def choose(logits, key):
            if lab is not None:
                return lab[key].long()
            if greedy:
                return logits.argmax(-1)
            return sample_tempered(logits, temperature)

        # action type
        h = F.relu(self.at_in(lstm_out))
        for blk in self.at_res:
            h = blk(h)
        at_logits = self.at_out(F.relu(h), ctx)
        if enc["at_mask"] is not None:
            at_logits = torch.where(enc["at_mask"], at_logits, torch.full_like(at_logits, MASKED_LOGIT))
        a = choose(at_logits, "action_type").clamp(0, c.n_functions - 1)
        argm = self.argument_masks(dev)[a] if self._argmask is not None else torch.ones(BT, 6, dtype=torch.bool, device=dev)
        ae = self.ae_from_action(F.relu(self.at_embed(F.one_hot(a, c.n_functions).float())), ctx) + self.ae_from_core(
            lstm_out, ctx
        )
        # delay
        delay_logits = self.delay_head(ae)
        d = choose(delay_logits, "delay").clamp(0, spec.MAX_DELAY)
        ae = ae + self.delay_embed(F.one_hot(d, spec.MAX_DELAY + 1).float())
        # queued
        q_logits = self.queued_head(ae)
        q = choose(q_logits, "queued").clamp(0, 1)
        ae = ae + self.queued_embed(F.one_hot(q, 2).float()) * argm[:, 2:3].float()
        # selected units
        su_logits, su_masks, su_actions, ae = self._selected_units_head(enc, ae, a, argm, lab, greedy, temperature)
        valid = enc["valid"]
        # target unit
        tkeys = self.tu_key(enc["entity_emb"])
        tq = self.tu_fc2(F.relu(self.tu_fc1(ae) + self.tu_func(a)))
        tu_logits = torch.einsum("bek,bk->be", tkeys, tq)
        tu_mask = valid.clone()
        tu_mask[:, 0] |= ~valid.any(1)  # keep one entry finite for empty entity lists
        tu_logits = torch.where(tu_mask, tu_logits, torch.full_like(tu_logits, MASKED_LOGIT))
        if lab is not None:
            tu = lab["target_unit"].long()
        else:
            tu = choose(tu_logits, "target_unit")
        # location
        loc_logits = self._location_logits(enc, ae)
        loc = lab["target_location"].long() if lab is not None else choose(loc_logits, "target_location")
        # baselines
        hb = torch.cat([lstm_out, enc["embedded_scalar"], ctx, enc["build_order"]], -1)
        value = {n: bt((2 / math.pi) * torch.atan((math.pi / 2) * net(hb).squeeze(-1))) for n, net in self.base.items()}

        out = {
            "action_type": bt(at_logits),
            "delay": bt(delay_logits),
            "queued": bt(q_logits),
            "selected_units": bt(torch.stack(su_logits, 1)),
            "selected_mask": bt(torch.stack(su_masks, 1)),
            "target_unit": bt(tu_logits),
            "target_mask": bt(tu_mask),
            "target_location": bt(loc_logits),
            "value": value,
            "actions": {
                "action_type": bt(a),
                "delay": bt(d),
                "queued": bt(q),
                "selected": bt(torch.stack(su_actions, 1)),
                "target_unit": bt(tu),
                "target_location": bt(loc),
            },
        }
        return out, state


def with_rows(model: AlphaStarPolicy, rows: int) -> AlphaStarPolicy:
    """The same module (shared parameters, buffers and gradients) run on ``rows`` entity rows.

    No weight of ``AlphaStarPolicy`` depends on the row count, and every part masks the rows past
    ``entity_count`` (attention key padding, masked means, pointer masks), so the outputs on the
    first ``rows`` rows equal those of the ``max_entities``-row call whenever no observation has
    more than ``rows`` entities; the pointer heads' end-of-selection index is then ``rows``.

    Raises:
        ValueError: ``rows`` not in ``[1, model.cfg.max_entities]``.
    """
    rows = int(rows)
    if not 1 <= rows <= model.cfg.max_entities:
        raise ValueError(f"rows={rows}; expected an int in [1, {model.cfg.max_entities}] (the model's max_entities)")
    if rows == model.cfg.max_entities:
        return model
    view = copy.copy(model)
    view.cfg = replace(model.cfg, max_entities=rows)
    return view


def save_alphastar(path: str | os.PathLike, model: AlphaStarPolicy, extra: dict | None = None) -> None:
    """Write ``{"format", "config", "model", **extra}`` to ``path`` atomically (a crash mid-write
    leaves the previous file), loadable with ``torch.load(weights_only=True)``: ``extra`` must hold
    only tensors, Python scalars, strings and containers of them.

    Raises:
        OSError: the file cannot be written (``sc2_envs.training.checkpoints.write_atomic``).
    """
    from sc2_envs.training.checkpoints import save_atomic  # lazily: models never imports the training package at import time

    save_atomic(
        {
            "format": CHECKPOINT_FORMAT,
            "config": model.cfg.to_dict(),
            "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
            **(extra or {}),
        },
        path,
    )


def load_alphastar(path: str, device="cpu") -> tuple[AlphaStarPolicy, dict]:
    """Rebuild a model written by ``save_alphastar``; returns ``(model, checkpoint dict)``.

    Raises:
        ValueError: the file is not a ``sc2_envs.alphastar/1`` checkpoint.
    """
    ckpt = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} checkpoint")
    model = AlphaStarPolicy(AlphaStarConfig.from_dict(ckpt["config"])).to(device)
    model.load_state_dict(ckpt["model"])
    return model, ckpt


def alphastar_losses(model, out: dict, labels: dict, step_mask: torch.Tensor, w: torch.Tensor | None):
    """Per-head masked CE of an ``AlphaStarPolicy`` output under teacher forcing.

    Head masks: a head counts for a sample when its step is real (``step_mask``), the label's action
    type uses the head (``spec.argument_masks()``), and the label exists (target_unit / target_location
    >= 0; selected_units steps up to the end-of-selection step). Every head's loss is multiplied by
    ``w[action_type label]``. Returns ``{head: (loss_sum, n)}`` and per-head correct counts.
    """
    a = labels["action_type"]
    argm = model.argument_masks(a.device)[a.clamp(min=0)] & step_mask.unsqueeze(-1)
    sw = None if w is None else w[a]
    res, correct = {}, {}
    res["action_type"] = masked_ce(out["action_type"], a, argm[..., 0], sw)
    correct["action_type"] = int(((out["action_type"].argmax(-1) == a) & argm[..., 0]).sum())
    res["delay"] = masked_ce(out["delay"], labels["delay"], argm[..., 1], sw)
    correct["delay"] = int(((out["delay"].argmax(-1) == labels["delay"]) & argm[..., 1]).sum())
    res["queued"] = masked_ce(out["queued"], labels["queued"], argm[..., 2], sw)
    correct["queued"] = int(((out["queued"].argmax(-1) == labels["queued"]) & argm[..., 2]).sum())
    K = out["selected_units"].shape[2]
    steps = torch.arange(K, device=a.device)
    cnt = labels["selected_count"].clamp(min=0)
    used = argm[..., 3] & (cnt > 0)
    step_m = used.unsqueeze(-1) & (steps <= cnt.unsqueeze(-1))  # picks plus the EOF step (when it fits in K)
    su_lab = out["actions"]["selected"]  # teacher-forced indices (E for EOF)
    su_w = None if sw is None else sw.unsqueeze(-1).expand_as(step_m)
    res["selected_units"] = masked_ce(out["selected_units"], su_lab, step_m, su_w)
    correct["selected_units"] = int(((out["selected_units"].argmax(-1) == su_lab) & step_m).sum())
    tu = labels["target_unit"]
    tm = argm[..., 4] & (tu >= 0)
    res["target_unit"] = masked_ce(out["target_unit"], tu, tm, sw)
    correct["target_unit"] = int(((out["target_unit"].argmax(-1) == tu) & tm).sum())
    loc = labels["target_location"]
    lm = argm[..., 5] & (loc >= 0)
    res["target_location"] = masked_ce(out["target_location"], loc, lm, sw)
    correct["target_location"] = int(((out["target_location"].argmax(-1) == loc) & lm).sum())
    return res, correct
