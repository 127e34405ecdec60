"""Count-invariant graph-attention actor (one per unit class) and class-factored centralized critic.

Design (entity attention as in UPDeT, Hu et al., ICLR 2021): an agent's observation is a set of entities
(itself, the allies it sees, the enemies it sees). Each kind has its own row encoder; a few
transformer blocks let the entities exchange information (attention over the visible entities
only, the agent's own token always visible so that no softmax is empty); the agent's token and the
masked *mean* of all visible tokens are read out. Attention weights and means are normalised, so
the scale of every activation does not grow with the team size, and no weight depends on the
number of allies or enemies: an actor trained on 2s3z runs unchanged on 3s5z.

The action head is keyed by entity, matching SMAC's action indices: 6 non-target logits (no-op,
stop, move N/S/E/W) from the agent's readout, then one logit per enemy row for ``attack j``
(action ``6 + j``), or for a medivac one logit per ally for ``heal t`` (SMAC's action ``6 + t``
heals agent ``t``, ``entities.heal_target_rows``).

A recurrent actor (``recurrent=True``) passes the agent's readout through a GRU cell before the action head,
so that its action depends on what the agent saw earlier in the episode (SMACv2 is partially observed; the
agents of Ellis et al., NeurIPS 2023, are recurrent). The GRU's weights belong to the class actor like the
rest, one state per agent: the actor stays count-invariant (:meth:`GNNActor.unroll`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from models.common import layer_init, mlp
from models.entities import N_ACTIONS_NO_ATTACK, Entities, StateEntities

# Attention form of every block (:func:`attention`): "sdpa" (default) or "explicit".
ATTENTION_FORM = "sdpa"


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Scaled dot-product attention ``softmax(q k^T / sqrt(d) + mask) v`` (Vaswani et al., 2017).

    Args:
        q, k, v: ``[R, heads, T, d]`` float.
        mask: ``[R, 1, 1, T]`` bool, True where a key may be attended (each row needs one), or None.

    Returns:
        ``[R, heads, T, d]``, in the form :data:`ATTENTION_FORM` names: ``"sdpa"``,
        ``F.scaled_dot_product_attention`` (fused kernels), or ``"explicit"``, two matrix products
        around a softmax. They are equal up to float rounding (``tests/test_gnn_attention.py``).
        SDPA is the default; the measurement behind that choice is in docs/speed.md, "Training speed".

    Raises:
        ValueError: :data:`ATTENTION_FORM` is neither ``"sdpa"`` nor ``"explicit"``.
    """
    if ATTENTION_FORM == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    if ATTENTION_FORM != "explicit":
        raise ValueError(f"models.gnn.ATTENTION_FORM = {ATTENTION_FORM!r}: expected 'sdpa' or 'explicit'")
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, -1), v)


class AttentionBlock(nn.Module):
    """Pre-LayerNorm transformer block over a set of tokens ``[R, T, H]`` with a key mask.

    Multi-head scaled dot-product attention (:func:`attention`) then a 2-layer
    feed-forward, both residual.

    Args:
        hidden: token width ``H``.
        heads: attention heads (``H`` must be divisible by it).
    """

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        _check_heads(hidden, heads)
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = layer_init(nn.Linear(hidden, 3 * hidden), std=1.0)
        self.proj = layer_init(nn.Linear(hidden, hidden), std=1.0)
        self.ln2 = nn.LayerNorm(hidden)
        self.ff = nn.Sequential(
            layer_init(nn.Linear(hidden, 2 * hidden)), nn.ReLU(), layer_init(nn.Linear(2 * hidden, hidden))
        )

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """``x [R, T, H]``, ``valid [R, T]`` bool keys that may be attended (each row needs one) -> ``[R, T, H]``."""
        R, T, H = x.shape
        q, k, v = (t.reshape(R, T, self.heads, H // self.heads).transpose(1, 2) for t in self.qkv(self.ln1(x)).chunk(3, -1))
        mask = None if valid is None else valid[:, None, None, :]
        a = attention(q, k, v, mask)
        x = x + self.proj(a.transpose(1, 2).reshape(R, T, H))
        return x + self.ff(self.ln2(x))


def masked_mean_pool(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Mean over dim -2 of ``x [*, T, H]`` counting only ``valid [*, T]`` tokens (0 if none) -> ``[*, H]``."""
    w = valid.to(x.dtype).unsqueeze(-1)
    return (x * w).sum(-2) / w.sum(-2).clamp(min=1.0)


class GNNActor(nn.Module):
    """Count-invariant attention actor for one unit class.

    Args:
        own_dim, ally_dim, enemy_dim: entity row widths (``ObsParser.dims()``).
        hidden: token width.
        heads: attention heads.
        layers: attention blocks.
        healer: the class heals allies (medivac) instead of attacking enemies.
        recurrent: the readout goes through a GRU cell (``gru``, ``hidden`` wide) whose output feeds the
            action head; such an actor runs through :meth:`unroll`, never :meth:`forward`.
    """

    def __init__(
        self,
        own_dim: int,
        ally_dim: int,
        enemy_dim: int,
        hidden: int = 64,
        heads: int = 4,
        layers: int = 1,
        healer: bool = False,
        recurrent: bool = False,
    ):
        super().__init__()
        _check_heads(hidden, heads)
        self.healer, self.recurrent = healer, recurrent
        self.own_enc = mlp(own_dim, hidden, hidden, n_hidden=1)
        self.ally_enc = mlp(ally_dim, hidden, hidden, n_hidden=1)
        self.enemy_enc = mlp(enemy_dim, hidden, hidden, n_hidden=1)
        self.blocks = nn.ModuleList(AttentionBlock(hidden, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)
        self.readout = mlp(2 * hidden, hidden, hidden, n_hidden=1)
        self.non_target_head = layer_init(nn.Linear(hidden, N_ACTIONS_NO_ATTACK), std=0.01)
        # Pair scorer for (agent, target entity): ReLU(W_a z + W_e e) -> scalar; the two linear maps
        # are split so that the agent part is computed once per agent, not once per pair.
        self.pair_agent = layer_init(nn.Linear(hidden, hidden))
        self.pair_entity = layer_init(nn.Linear(hidden, hidden), bias_const=0.0)
        self.pair_out = layer_init(nn.Linear(hidden, 1), std=0.01)
        if recurrent:  # created after the other layers, which then draw what a feed-forward actor's draw
            self.gru = nn.GRUCell(hidden, hidden)
            for name, p in self.gru.named_parameters():  # as CleanRL ppo_atari_lstm.py initialises its LSTM
                if "weight" in name:
                    nn.init.orthogonal_(p, 1.0)
                else:
                    nn.init.zeros_(p)

    def forward(self, ent: Entities, heal_rows: torch.Tensor | None = None) -> torch.Tensor:
        """Unmasked logits ``[R, 6 + n_targets]`` for ``R`` agents.

        Args:
            ent: entity view with ``own [R, own_dim]``, ``allies [R, Na, ally_dim]``,
                ``enemies [R, Ne, enemy_dim]`` and masks.
            heal_rows: healers only, ``[R, n_targets]`` int64 ally row of heal action ``6 + t`` or -1
                (``entities.heal_target_rows``); the output then has ``n_targets`` target logits.
                Non-healers have ``n_targets = Ne``.

        Raises:
            ValueError: the actor is recurrent (its logits depend on its hidden state: :meth:`unroll`).
        """
        if self.recurrent:
            raise ValueError("this actor is recurrent: its logits need each agent's hidden state (GNNActor.unroll, "
                             "ClassPolicy.act_recurrent)")  # fmt: skip
        return self.head(*self.encode(ent, heal_rows))

    def unroll(
        self,
        ent: Entities,
        heal_rows: torch.Tensor | None,
        hidden: torch.Tensor,
        episode_starts: torch.Tensor | None,
        seq: torch.Tensor,
        step: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits of ``P`` agent-steps of a recurrent actor, its GRU run along ``S`` sequences of ``T`` steps.

        A sequence is one agent's steps in one env. Its state moves only at its agent-steps (the GRU runs
        on them); at other steps (the agent dead, or of another class) it keeps its value. Before step
        ``t`` the state of a sequence whose episode starts there is zeroed (CleanRL ``ppo_atari_lstm.py``:
        ``(1 - done) * state``).

        Args:
            ent, heal_rows: the ``P`` agent-steps, as :meth:`forward`.
            hidden: ``[S, hidden]`` float32, each sequence's state before step 0.
            episode_starts: ``[T, S]`` bool, True where an episode starts at step ``t`` of sequence ``s``,
                or None (no episode starts: the caller has zeroed those states).
            seq, step: ``[P]`` int64, the sequence (``< S``) and step (``< T``; ``T = 1`` without
                ``episode_starts``) of each agent-step; each pair at most once.

        Returns:
            ``(logits [P, 6 + n_targets], hidden [S, hidden])``: the state after step ``T - 1``.
        """
        z, targets = self.encode(ent, heal_rows)
        T = 1 if episode_starts is None else episode_starts.shape[0]
        S, H = hidden.shape
        slot = step * S + seq  # the agent-step's place in [T, S]
        x = z.new_zeros(T * S, H).index_copy(0, slot, z).view(T, S, H)
        moves = torch.zeros(T * S, dtype=torch.bool, device=z.device).index_fill(0, slot, True).view(T, S, 1)
        h, out = hidden, []
        for t in range(T):
            if episode_starts is not None:
                h = torch.where(episode_starts[t].unsqueeze(-1), 0.0, h)
            h = torch.where(moves[t], self.gru(x[t], h), h)
            out.append(h)
        return self.head(torch.stack(out).view(T * S, H).index_select(0, slot), targets), h

    def encode(self, ent: Entities, heal_rows: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The agent's readout ``z [R, hidden]`` and its target tokens ``[R, n_targets, hidden]`` (:meth:`forward`'s args)."""
        R, Na = ent.own.shape[0], ent.allies.shape[-2]
        tokens = torch.cat([self.own_enc(ent.own).unsqueeze(1), self.ally_enc(ent.allies), self.enemy_enc(ent.enemies)], 1)
        valid = torch.cat([torch.ones(R, 1, dtype=torch.bool, device=tokens.device), ent.ally_mask, ent.enemy_mask], 1)
        for block in self.blocks:
            tokens = block(tokens, valid)
        tokens = self.ln(tokens)
        z = self.readout(torch.cat([tokens[:, 0], masked_mean_pool(tokens, valid)], -1))
        if self.healer:
            if heal_rows is None:
                raise ValueError("a healer actor needs heal_rows (entities.heal_target_rows)")
            targets = tokens[:, 1 : 1 + Na]
            idx = heal_rows.clamp(min=0).unsqueeze(-1).expand(-1, -1, targets.shape[-1])
            targets = targets.gather(1, idx) if Na > 0 else targets.new_zeros(R, heal_rows.shape[1], targets.shape[-1])
        else:
            targets = tokens[:, 1 + Na :]
        return z, targets

    def head(self, z: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Logits ``[R, 6 + n_targets]`` from an agent embedding ``z [R, hidden]`` and target tokens (:meth:`encode`)."""
        pair = torch.relu(self.pair_agent(z).unsqueeze(1) + self.pair_entity(targets))
        target_logits = self.pair_out(pair).squeeze(-1)
        return torch.cat([self.non_target_head(z), target_logits], -1)


class GNNCritic(nn.Module):
    """Class-factored, count-invariant centralized critic ``V(s)``.

    Every ally row of the global state is encoded by the encoder of its unit class (one per class,
    as the actors), every enemy row by a shared enemy encoder (the canonical type bits tell the
    types apart); attention blocks over all units (dead ones included: their zero rows carry how
    many units are lost); then the means over allies and over enemies and the global features
    (timestep) go through an MLP to one value.

    Args:
        ally_dim, enemy_dim, glob_dim: ``StateParser.dims()``.
        classes: unit class names, one ally encoder each.
        hidden, heads, layers: as in :class:`GNNActor`.
    """

    def __init__(
        self,
        ally_dim: int,
        enemy_dim: int,
        glob_dim: int,
        classes: list[str],
        hidden: int = 64,
        heads: int = 4,
        layers: int = 1,
    ):
        super().__init__()
        _check_heads(hidden, heads)
        self.classes = list(classes)
        self.glob_dim = glob_dim
        self.ally_enc = nn.ModuleDict({c: mlp(ally_dim, hidden, hidden, n_hidden=1) for c in self.classes})
        self.enemy_enc = mlp(enemy_dim, hidden, hidden, n_hidden=1)
        self.blocks = nn.ModuleList(AttentionBlock(hidden, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)
        self.head = mlp(2 * hidden + glob_dim, hidden, 1, n_hidden=2, out_std=1.0)

    def forward(self, se: StateEntities, class_slots: dict[str, torch.Tensor]) -> torch.Tensor:
        """Value ``[*]`` of states given as :class:`StateEntities` with leading dims ``*``.

        Args:
            se: ``allies [*, N, ally_dim]``, ``enemies [*, M, enemy_dim]``, ``glob [*, glob_dim]``.
            class_slots: class name -> ``[n_c]`` int64 agent ids of that class (covering ``0..N-1``),
                or (SMACv2, types per env) class name -> ``[*, N]`` float 0/1 mask of the allies
                of that class in each state (each ally goes through the encoder of its class only,
                at most one mask is 1 per ally; an ally of no class, e.g. dead, gets a zero token).
        """
        lead = se.allies.shape[:-2]
        allies = se.allies.reshape(-1, *se.allies.shape[-2:])
        enemies = se.enemies.reshape(-1, *se.enemies.shape[-2:])
        for c in class_slots:
            if c not in self.ally_enc:
                raise ValueError(f"critic has no encoder for unit class {c!r}; it was built for {self.classes}")
        if any(v.is_floating_point() for v in class_slots.values()):
            # each class's encoder runs only on the allies of that class (the masks are one-hot or
            # all-zero per ally); an ally of no class (dead) keeps a zero token
            flat = allies.reshape(-1, allies.shape[-1])
            ally_tok = None
            for c, m in class_slots.items():
                idx = m.reshape(-1).nonzero().squeeze(1)
                enc = self.ally_enc[c](flat.index_select(0, idx))
                if ally_tok is None:
                    ally_tok = enc.new_zeros(flat.shape[0], enc.shape[-1])
                ally_tok = ally_tok.index_copy(0, idx, enc)
            ally_tok = ally_tok.reshape(allies.shape[0], allies.shape[1], -1)
        else:
            parts, order = [], []
            for c, ids in class_slots.items():
                parts.append(self.ally_enc[c](allies.index_select(1, ids)))
                order.append(ids)
            inv = torch.argsort(torch.cat(order))
            ally_tok = torch.cat(parts, 1).index_select(1, inv)
        tokens = torch.cat([ally_tok, self.enemy_enc(enemies)], 1)
        for block in self.blocks:
            tokens = block(tokens, None)
        tokens = self.ln(tokens)
        N = ally_tok.shape[1]
        pooled = torch.cat([tokens[:, :N].mean(1), tokens[:, N:].mean(1), se.glob.reshape(tokens.shape[0], self.glob_dim)], -1)
        return self.head(pooled).reshape(lead)


def _check_heads(hidden: int, heads: int) -> None:
    if hidden % heads:
        raise ValueError(f"hidden={hidden} is not divisible by heads={heads}")
