"""HATRPO's trust-region numerics: flat gradients, conjugate gradient, Fisher-vector products of the
masked categorical KL (what HARL keeps in ``harl/utils/trpo_util.py``, PKU-MARL/HARL).

``algos/hatrpo_gnn.py``'s ``trpo_step`` (the surrogate, the natural-gradient step and the line search)
is built from these; they know nothing of HATRPO's classes or maps.
"""

from __future__ import annotations

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def flat_grad(y, params, **kw):
    """Gradient of scalar ``y`` w.r.t. ``params`` as one flat vector (zeros for unused parameters)."""
    grads = torch.autograd.grad(y, params, allow_unused=True, **kw)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params, strict=False)])


def set_flat_params(params, vec):
    """Copy the flat vector ``vec`` into ``params`` in place, each parameter keeping its own storage.

    ``torch.nn.utils.vector_to_parameters`` would instead make every parameter a view into ``vec``,
    at offsets that the CPU matrix kernels may round differently from a parameter's own (aligned)
    tensor: a run resumed from ``resume.pt`` (fresh tensors) then drifted from one that never stopped.
    """
    with torch.no_grad():
        offset = 0
        for p in params:
            n = p.numel()
            p.copy_(vec[offset : offset + n].view_as(p))
            offset += n


def conjugate_gradient(Avp, b, nsteps=10, residual_tol=1e-10):
    """Approximately solve ``A x = b`` for symmetric positive-definite ``A`` given as ``Avp(v) = A v``."""
    x = torch.zeros_like(b)
    r, p = b.clone(), b.clone()
    rdotr = r @ r
    if rdotr < residual_tol:  # b ~ 0 (no active agent-step, or no gradient): x = 0, not 0 / 0
        return x
    for _ in range(nsteps):
        Ap = Avp(p)
        alpha = rdotr / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        new_rdotr = r @ r
        if new_rdotr < residual_tol:
            break
        p = r + (new_rdotr / rdotr) * p
        rdotr = new_rdotr
    return x


def kl_fisher(make_dists, old_dists, params, damping, gauss_newton=True):
    """The Fisher-vector product ``v -> (F + damping I) v`` as a function, ``F`` the Hessian of the mean
    true KL(old || new) over the class's alive agent-steps at the current parameters (where new == old).

    ``make_dists()`` builds the current ``MaskedCategorical`` of each map (over its ``[P_k]`` agent-steps)
    from ``params``; ``old_dists`` are the same distributions detached; the mean runs over the agent-steps
    of all maps together. ``v``: flat ``[n_params]``, the parameters' dtype. The parameters must not change
    between products (conjugate gradient only moves its iterate): the forward pass and the graphs the
    products need are built once, here.

    ``gauss_newton=True``: ``J^T (diag(p) - p p^T) J v / P``, ``J`` the Jacobian of the masked logits, ``p``
    the old probabilities. At new == old the KL's gradient with respect to the logits (``p_new - p_old``)
    is 0, so this is the KL's Hessian exactly (Martens, "New insights and perspectives on the natural
    gradient method", JMLR 2020, sec. 9); masked actions have ``p = 0`` and drop out. ``J v`` is a backward
    pass, with respect to a dummy ``u``, through the graph of ``J^T u`` (built once; the "double-vjp"
    R-operator), and ``J^T`` of the result one ordinary backward pass. ``gauss_newton=False``: the double
    backward of the KL (HARL's ``fisher_vector_product``, with the KL's gradient graph built once): the same
    matrix up to float rounding, about 1.5-2x slower per product.
    """
    n = agent_steps(old_dists)
    # Double backward needs the composite (math) attention kernel: the fused SDPA kernels have no
    # second derivative (as HARL disables cuDNN for its GRU here).
    with sdpa_kernel(SDPBackend.MATH):
        news = make_dists()
        if not gauss_newton:
            kl = torch.cat([o.kl(d).reshape(-1) for o, d in zip(old_dists, news, strict=True)]).sum() / n
            grad_kl = flat_grad(kl, params, create_graph=True)
        else:
            logits = [d.logits for d in news]
            weight = 1.0 / n  # each agent-step's share of the mean
            probs = [o.probs.detach() for o in old_dists]
            dummy = [torch.zeros_like(z, requires_grad=True) for z in logits]
            jt_dummy = flat_grad(logits, params, grad_outputs=dummy, create_graph=True)

    def fvp(v):
        with sdpa_kernel(SDPBackend.MATH):
            if not gauss_newton:
                return flat_grad(grad_kl @ v, params, retain_graph=True) + damping * v
            jv = torch.autograd.grad(jt_dummy @ v, dummy, retain_graph=True)
            outs = [weight * (p * u - p * (p * u).sum(-1, keepdim=True)) for p, u in zip(probs, jv, strict=True)]
            return flat_grad(logits, params, grad_outputs=outs, retain_graph=True) + damping * v

    return fvp


def agent_steps(dists):
    """The number of agent-steps of a list of distributions over ``[P_k]`` rows: a float 0-d tensor, at least 1."""
    rows = sum(d.logits.shape[0] for d in dists)
    return torch.tensor(float(rows), dtype=dists[0].logits.dtype, device=dists[0].logits.device).clamp(min=1.0)
