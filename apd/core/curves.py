"""Probability-versus-size curves: the flip R(.), the decay functions, and "APD on the fly".

Units. ``x`` is the natural log of a member's NON-embedding parameter count (the x-axis of every
curve in the book, e.g. 16.7555 for Pythia-70M). Curve values are *probabilities renormalised over
a token set* (``space='prob'``, the paper) or their logarithms (``space='logit'``, the ablation
"curves on logits"; see :func:`flip_values`).

Decay functions (paper eq. 4 and appendix "Decay Parameterization Comparison"). Each is defined
once here as ``f(x, c, params) -> curve`` and used both by the training of ALM'
(:mod:`apd.amateur.train`) and by the on-the-fly fitter below. ``c`` is the asymptote, ``params`` holds
the positive curve parameters in the order of :attr:`Decay.param_names`:

- ``exponential``  c + a * exp(-max(0, b (x - d)))                               params (a, b, d)
- ``logistic``     c + a / (1 + exp(max(0, b (x - d))))                          params (a, b, d)
- ``polyK``        c + a * (e_0.5 / z^0.5 + sum_{k=1..K} e_k / z^k),
                   z = max(1, b (x - d))                                 params (a, b, d, e_0.5, e_1..e_K)

The paper writes the polynomial's coefficients as d_{w,c,k}; we call them e_k to keep them apart
from the shift d. Shapes: ``x`` (X,) (or anything broadcastable to (..., X)); ``c`` (...);
``params`` (..., P); the result is (..., X).

APD on the fly (appendix C.2): per token, flip, fit (c, a, b, d) to the N member probabilities
(renormalised over the ELM's top 20) with Adam (initial lr 1e-2, 400 iterations, every parameter
clamped at 0 after each step, rows that end in NaN refitted from scratch with half the lr), loss
L1 + 10 * L2 (no L3), flip back, renormalise the asymptotes over the top 20, and output
(1 - w) p_ELM + w p_AP. :func:`fit_curves` fits thousands of curves at once: Adam is elementwise
and the total loss is a *sum* of per-curve losses, so every curve follows exactly the trajectory it
would follow alone (:func:`fit_curves_one_by_one` is that slow reference path; see
:func:`benchmark_fitter`).

Choices the paper and the release leave open, made here (the measurements behind them are in
``docs/design-notes.md``, "The on-the-fly fitter's start and schedule"):
- :data:`PLAIN_FIT`: the plainest reading (start at c = p'_ELM, b = 1, d = x_ALM; Adam with
  torch's default betas; constant lr), kept as a reference: the square-root hinge has an unbounded
  gradient at its kink, its spikes inflate Adam's second moment and the fit stalls below the data.
- :data:`TUNED_FIT` (the default) starts from :func:`grid_init` (closed-form least squares for
  (c, a) on a (b, d) grid, soft-minimised so that float noise cannot pick among near-equal fits;
  "A fit that float noise cannot move" in the design notes), uses betas (0.9, 0.9) so the second moment forgets the spikes, and
  decays the lr geometrically from 1e-2 to 1e-4 (the paper calls 1e-2 the *initial* lr).
- sqrt(0) has an infinite derivative, and a hinge that is exactly 0 (common for a single curve)
  would turn every gradient into NaN. :func:`safe_sqrt` returns the same values with gradient 0
  at 0. The NaN restarts stay, for the overflows they were meant for.
- Asymptotes are clamped to [0, 1] before being flipped back (clamping at 0 bounds them below
  only), and a context whose top-20 asymptotes sum to 0 falls back to p_ELM.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, fields, replace
from typing import Callable, Sequence

import torch

from apd.base.checks import bounded, count, flag, logits, number, numbers_of
from apd.core.theory import check_log_sizes

SPACES = ("prob", "logit")


# ----------------------------------------------------------------------------- small helpers


def safe_sqrt(x: torch.Tensor) -> torch.Tensor:
    """sqrt(x) for x >= 0 whose gradient at exactly 0 is 0 instead of inf (which makes NaN)."""
    positive = x > 0
    return torch.where(positive, torch.sqrt(torch.where(positive, x, torch.ones_like(x))), torch.zeros_like(x))


def check_space(space: str) -> None:
    if space not in SPACES:
        raise ValueError(
            f"space must be one of {SPACES}, got {space!r}: 'prob' fits probability "
            "curves (the paper), 'logit' fits their logarithms (the ablation)."
        )


def flip_mask(first: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """R(.)'s condition: True where the curve rises, i.e. value(ALM) < value(ELM) (paper eq. 3).

    ``first``/``last``: the smallest and the largest member's values, same shape (...).
    Ties are not flipped (the paper flips only when p(ALM) >= p(ELM) fails).
    """
    return first < last


def flip_values(values: torch.Tensor, mask: torch.Tensor, space: str = "prob") -> torch.Tensor:
    """Apply R(.) where ``mask`` is True: p -> 1 - p in probability space.

    In logit space (log-probabilities) the reflection is v -> -v, which turns a rising curve into a
    falling one just as 1 - p does; (1 - p) itself has no useful log-space counterpart. ``mask``
    broadcasts against ``values`` (add a trailing axis to flip whole curves). Applying it twice is
    the identity.
    """
    check_space(space)
    reflected = 1.0 - values if space == "prob" else -values
    return torch.where(mask, reflected, values)


# ----------------------------------------------------------------------------- decay functions


def _cols(params: torch.Tensor, n: int) -> list[torch.Tensor]:
    if params.shape[-1] != n:
        raise ValueError(
            f"this decay takes {n} parameters in the last axis, got params of shape {tuple(params.shape)}."
        )
    return [params[..., i, None] for i in range(n)]  # each (..., 1), broadcasts against x (X,)


def exponential_decay(x: torch.Tensor, c: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
    """c + a * exp(-max(0, b (x - d))) with params = (a, b, d). Shapes: x (X,), c (...), params (..., 3) -> (..., X)."""
    a, b, d = _cols(params, 3)
    return c[..., None] + a * torch.exp(-torch.relu(b * (x - d)))


def logistic_decay(x: torch.Tensor, c: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
    """c + a / (1 + exp(max(0, b (x - d)))) with params = (a, b, d); flat at c + a/2 for x <= d."""
    a, b, d = _cols(params, 3)
    return c[..., None] + a * torch.sigmoid(-torch.relu(b * (x - d)))  # 1/(1+e^z) = sigmoid(-z), no overflow


def polynomial_decay(x: torch.Tensor, c: torch.Tensor, params: torch.Tensor, K: int) -> torch.Tensor:
    """Fractional polynomial in 1/z, z = max(1, b (x - d)):
    c + a * (e_0.5 z^-0.5 + sum_{k=1..K} e_k z^-k); params = (a, b, d, e_0.5, e_1, ..., e_K)."""
    cols = _cols(params, 4 + K)
    a, b, d, coefs = cols[0], cols[1], cols[2], cols[3:]
    z = torch.clamp(b * (x - d), min=1.0)
    powers = [0.5] + list(range(1, K + 1))
    tail = sum(e * z ** (-p) for e, p in zip(coefs, powers))
    return c[..., None] + a * tail


@dataclass(frozen=True)
class Decay:
    """A decay family: ``fn(x, c, params)`` and how many positive parameters it takes."""

    name: str
    param_names: tuple[str, ...]
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

    @property
    def n_params(self) -> int:
        return len(self.param_names)

    def __call__(self, x, c, params) -> torch.Tensor:
        return self.fn(x, c, params)

    def init_params(self, amplitude: torch.Tensor, x_first: float) -> torch.Tensor:
        """Starting point of the on-the-fly fitter: (M,) amplitudes -> (M, P) parameters whose
        curve starts (on its flat part) at c + amplitude, decays with b = 1 from d = x_first."""
        m = amplitude.shape[0]
        a = amplitude.clone()
        if self.name == "logistic":
            a = 2 * a  # flat part is c + a/2
        elif self.name.startswith("poly"):
            a = a / (self.n_params - 3)  # z = 1 on the flat part: a * sum(e_k), all e_k = 1
        out = torch.ones(m, self.n_params, dtype=amplitude.dtype, device=amplitude.device)
        out[:, 0] = a
        out[:, 2] = x_first
        return out


_FIXED = {
    "exponential": Decay("exponential", ("a", "b", "d"), exponential_decay),
    "logistic": Decay("logistic", ("a", "b", "d"), logistic_decay),
}


def get_decay(name: str) -> Decay:
    """'exponential' (the paper's), 'logistic', or 'polyK' for K >= 1 ('poly1', 'poly3' in the paper)."""
    if isinstance(name, Decay):
        return name
    if name in _FIXED:
        return _FIXED[name]
    m = re.fullmatch(r"poly(\d+)", str(name))
    if m and int(m.group(1)) >= 1:
        K = int(m.group(1))
        names = ("a", "b", "d", "e_0.5") + tuple(f"e_{k}" for k in range(1, K + 1))
        return Decay(f"poly{K}", names, functools.partial(polynomial_decay, K=K))  # a partial pickles
    raise ValueError(
        f"unknown decay {name!r}; use 'exponential' (the paper's), 'logistic', "
        "'poly1' or 'poly3' (polynomial in 1/x with K terms, any 'polyK' with K >= 1)."
    )


DECAY_NAMES = ("exponential", "logistic", "poly1", "poly3")


# ----------------------------------------------------------------------------- the on-the-fly fitter


@dataclass
class CurveFit:
    """Result of :func:`fit_curves` for M curves.

    asymptote: (M,) fitted asymptotic probability, flipped back, clamped to [0, 1].
    c:         (M,) the asymptote in flipped space (as fitted).
    params:    (M, P) decay parameters (flipped space), order :attr:`Decay.param_names`.
    flipped:   (M,) bool, R(.) applied.
    loss:      (M,) final per-curve loss L1 + lambda2 * L2.
    lr:        (M,) the learning rate of the fit that was kept.
    ok:        (M,) bool; False where even the last halving ended in NaN (then the curve's
               starting point is returned and asymptote = p_ELM).
    """

    asymptote: torch.Tensor
    c: torch.Tensor
    params: torch.Tensor
    flipped: torch.Tensor
    loss: torch.Tensor
    lr: torch.Tensor
    ok: torch.Tensor
    decay: str

    def to(self, device) -> "CurveFit":
        """This fit with every tensor on ``device`` (e.g. back on the CPU after a fit on a GPU).

        Example:
            >>> fit = fit_curves(torch.tensor([[0.1, 0.2, 0.3, 0.35]]), [9.0, 10.0, 11.0, 12.0], iterations=20)
            >>> fit.to("cpu").asymptote.device.type
            'cpu'
        """
        return replace(self, **{f.name: getattr(self, f.name).to(device) for f in fields(self) if f.name != "decay"})


def curve_losses(curve: torch.Tensor, target: torch.Tensor, lambda2: float) -> torch.Tensor:
    """Per-curve fitting loss: sqrt(mean_{i<N}(curve_i - p_i)^2) + lambda2 * sqrt(max(curve_N - p_N, 0)).

    curve, target: (M, N) in flipped space -> (M,). The per-curve version of L1 + lambda2 * L2
    (each curve is its own batch of one token), without L3.
    """
    l1 = safe_sqrt(((curve[:, :-1] - target[:, :-1]) ** 2).mean(-1))
    l2 = safe_sqrt(torch.relu(curve[:, -1] - target[:, -1]))
    return l1 + lambda2 * l2


def _adam_fit(
    q, x, theta0, decay: Decay, lambda2: float, lr: float, iterations: int, betas, final_lr_fraction: float
) -> torch.Tensor:
    """Adam on theta = (c, params...) of shape (m, 1 + P), clamped at 0 after each step; the lr
    decays geometrically from ``lr`` to ``lr * final_lr_fraction`` over the iterations."""
    theta = theta0.clone().requires_grad_(True)
    opt = torch.optim.Adam([theta], lr=lr, betas=tuple(betas))
    for t in range(iterations):
        opt.param_groups[0]["lr"] = lr * final_lr_fraction ** (t / max(iterations - 1, 1))
        opt.zero_grad(set_to_none=True)
        curve = decay(x, theta[:, 0], theta[:, 1:])
        curve_losses(curve, q, lambda2).sum().backward()
        opt.step()
        with torch.no_grad():
            theta.clamp_(min=0.0)
    return theta.detach()


# grid_init's choices (docs/design-notes.md, "A fit that float noise cannot move")
GRID_TEMPERATURE = 1e-3  # loss units (probability RMS): grid points within a few of it share the start
HINGE_MARGIN = 1e-4  # the start's curve at the ELM lies this far below the ELM's value


def grid_init(q: torch.Tensor, x: torch.Tensor, decay: Decay, lambda2: float = 10.0) -> torch.Tensor:
    """Starting points (M, 1 + P) for flipped curves ``q`` (M, N): variable projection on a grid.

    Every decay is c + a * g(x; b, d, ...), linear in (c, a). For a grid of (b, d) (b from 0.25 to
    18 over the span of x, d from x_ALM to x_ALM + 0.7 span; other parameters 1) solve least
    squares for (c, a) over the N - 1 smaller members in closed form, clip a >= 0, lower c until the
    curve at the ELM is :data:`HINGE_MARGIN` below q_ELM (the hinge L2 inactive with room to spare),
    clip c >= 0, and average the grid points with weights softmax(-L1 / :data:`GRID_TEMPERATURE`)
    (c, a, d arithmetically, b geometrically). The start is then a continuous function of ``q``:
    an argmin over the grid, or a start on the hinge's kink, lets float noise choose among
    near-equal fits (``lambda2`` is kept for the signature; the margin makes L2 zero). Each row's
    start depends on that row alone, bit for bit, whatever M is.
    """
    m, n = q.shape
    span = float(x[-1] - x[0])
    b_grid = torch.tensor([0.25, 0.5, 1, 1.5, 2, 3, 4, 6, 9, 12, 18], dtype=q.dtype, device=q.device) / span
    d_grid = float(x[0]) + span * torch.tensor([0.0, 0.1, 0.2, 0.3, 0.5, 0.7], dtype=q.dtype, device=q.device)
    bb, dd = (t.reshape(-1) for t in torch.meshgrid(b_grid, d_grid, indexing="ij"))
    shape = torch.ones(bb.numel(), decay.n_params, dtype=q.dtype, device=q.device)
    shape[:, 1], shape[:, 2] = bb, dd
    g = decay(x, torch.zeros_like(bb), shape)  # (G, N), curve with c = 0, a = 1
    gs, qs = g[:, :-1], q[:, :-1]
    g_mean, q_mean = gs.mean(1), qs.mean(1, keepdim=True)  # (G,), (M, 1)
    g_cent = gs - g_mean[:, None]
    # an elementwise product and sum rather than a matmul, whose rounding can depend on M
    cov = ((qs - q_mean)[:, None, :] * g_cent[None]).sum(-1)  # (M, G)
    a = (cov / (g_cent**2).sum(1).clamp_min(1e-12)).clamp_min(0.0)
    c = q_mean - a * g_mean
    c = (c - torch.relu(c + a * g[:, -1] - q[:, -1:] + HINGE_MARGIN)).clamp_min(0.0)
    curve = c[..., None] + a[..., None] * g  # (M, G, N)
    loss = safe_sqrt(((curve[..., :-1] - q[:, None, :-1]) ** 2).mean(-1))  # (M, G)
    weight = torch.softmax(-(loss - loss.amin(1, keepdim=True)) / GRID_TEMPERATURE, dim=1)
    params = torch.ones(m, decay.n_params, dtype=q.dtype, device=q.device)
    params[:, 0] = (weight * a).sum(1)
    params[:, 1] = (weight * bb.log()).sum(1).exp()
    params[:, 2] = (weight * dd).sum(1)
    return torch.cat([(weight * c).sum(1, keepdim=True), params], dim=1)


def simple_init(q: torch.Tensor, x: torch.Tensor, decay: Decay) -> torch.Tensor:
    """Naive starting points (M, 1 + P): c = q_ELM, flat part at q_ALM, b = 1, d = x_ALM."""
    amplitude = torch.clamp(q[:, 0] - q[:, -1], min=1e-3)
    return torch.cat([q[:, -1:], decay.init_params(amplitude, float(x[0]))], dim=1)


def _as_probs(probs, log_sizes, dtype, device):
    if not isinstance(probs, torch.Tensor):  # a tensor's dtype is checked below, without a copy
        numbers_of("probs", probs, "pass each member's probability of the token as a float")
    elif probs.dtype == torch.bool or probs.is_complex():
        raise TypeError(f"probs must hold real probabilities, got a {probs.dtype} tensor.")
    numbers_of("log_sizes", log_sizes, "pass natural logs of non-embedding parameter counts as floats")
    p = torch.as_tensor(probs).detach()
    if p.ndim != 2:
        raise ValueError(
            f"probs must be (M curves, N members), got shape {tuple(p.shape)}; reshape e.g. probs.reshape(-1, N)."
        )
    p = p.to(dtype=dtype, device=device or p.device).clone()
    x = torch.as_tensor(log_sizes, dtype=dtype, device=p.device).detach().clone()
    if x.ndim != 1 or x.numel() != p.shape[1] or x.numel() < 3:
        raise ValueError(
            f"log_sizes must have one entry per member (N = {p.shape[1]} >= 3: the fit needs "
            f"two smaller members and the ELM), got shape {tuple(x.shape)}."
        )
    check_log_sizes(x, "log_sizes")
    if not bool((x[1:] > x[:-1]).all()):
        raise ValueError(
            f"log_sizes must increase (members ordered smallest = ALM first, ELM last), got {x.tolist()}."
        )
    if not bool(torch.isfinite(p).all()) or bool((p < 0).any()) or bool((p > 1).any()):
        raise ValueError(
            "probs must be finite probabilities in [0, 1] (renormalise over the token set "
            "first, e.g. torch.softmax(logits_at_top20, -1))."
        )
    return p, x


# Our reading of the fitter where the paper and the release say nothing (see the module docstring).
TUNED_FIT = dict(init="grid", betas=(0.9, 0.9), final_lr_fraction=0.01)
# The plainest reading: naive start, torch's default Adam betas, constant lr.
PLAIN_FIT = dict(init="simple", betas=(0.9, 0.999), final_lr_fraction=1.0)


def fit_curves(
    probs,
    log_sizes: Sequence[float],
    *,
    decay: str = "exponential",
    flip: bool = True,
    lambda2: float = 10.0,
    lr: float = 1e-2,
    iterations: int = 400,
    max_halvings: int = 8,
    init: str = "grid",
    betas=(0.9, 0.9),
    final_lr_fraction: float = 0.01,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> CurveFit:
    """Fit one decay curve per row of ``probs`` (M, N) at x = ``log_sizes`` (N,), all at once.

    ``probs``: each member's probability of the token, renormalised over the token set (the ELM's
    top 20 in the paper), members ordered ALM (smallest) first, ELM last. Works under
    ``torch.no_grad``/``torch.inference_mode`` (it enables autograd internally).
    Paper: Adam, initial lr 1e-2, 400 iterations, clamp at 0, loss L1 + 10 L2, rows that end in NaN
    refitted with half the lr (up to ``max_halvings`` times). Ours, where it is silent: ``init``
    ('grid', :func:`grid_init`, or 'simple', :func:`simple_init`), Adam ``betas``, and a geometric
    lr decay to ``lr * final_lr_fraction``; :data:`PLAIN_FIT` gives the plainest reading instead.
    Out-of-range settings (``lambda2 < 0``, ``lr <= 0``, ``iterations < 1``, ...), non-finite probabilities
    and log sizes raise an error naming them.
    ``dtype``: the precision of the fit and of the returned fit, float32 (the default) or float64;
    half precision (float16, bfloat16) is fitted and returned in float32, since its 11 (8) bits
    cannot hold x ~ 20 or Adam's small steps (half-precision fits' asymptotes were off by over 0.1).
    ``probs`` of any float dtype are converted to it.

    Example (a rising curve whose asymptote is 0.6; the ELM's own value is 0.594):
        >>> import torch
        >>> x = [9.5, 10.1, 10.9, 11.7, 12.6, 14.4]               # ln non-embedding size, ALM first
        >>> p = 0.6 - 0.3 * torch.exp(-0.8 * (torch.tensor(x) - 9.5))
        >>> fit = fit_curves(p[None], x)
        >>> round(float(fit.asymptote[0]), 3), bool(fit.flipped[0])
        (0.6, True)
    """
    dec = get_decay(decay)
    if init not in ("grid", "simple"):
        raise ValueError(f"init must be 'grid' or 'simple', got {init!r}.")
    _check_fit_settings(lambda2, lr, betas, final_lr_fraction, dtype)
    if dtype in (torch.float16, torch.bfloat16):
        dtype = torch.float32  # too few bits to fit in (see above): fitted and returned in float32
    flag("flip", flip, "True flips rising curves before the fit, as the paper does")
    iterations = count("iterations", iterations, 1, "the paper uses 400")
    max_halvings = count("max_halvings", max_halvings, 0, "the paper halves the lr of a row that ends in NaN")
    with torch.inference_mode(False), torch.enable_grad():
        p, x = _as_probs(probs, log_sizes, dtype, device)
        m = p.shape[0]
        flipped = flip_mask(p[:, 0], p[:, -1]) if flip else torch.zeros(m, dtype=torch.bool, device=p.device)
        q = flip_values(p, flipped[:, None])
        theta0 = grid_init(q, x, dec, lambda2) if init == "grid" else simple_init(q, x, dec)
        theta = theta0.clone()
        lrs = torch.full((m,), float(lr), dtype=dtype, device=p.device)
        todo = torch.arange(m, device=p.device)
        lr_now = float(lr)
        for _ in range(max_halvings + 1):
            fitted = _adam_fit(q[todo], x, theta0[todo], dec, lambda2, lr_now, iterations, betas, final_lr_fraction)
            bad = ~torch.isfinite(fitted).all(dim=1)
            theta[todo[~bad]] = fitted[~bad]
            lrs[todo] = lr_now
            todo = todo[bad]
            if todo.numel() == 0:
                break
            lr_now /= 2
        ok = torch.ones(m, dtype=torch.bool, device=p.device)
        ok[todo] = False
        with torch.no_grad():
            loss = curve_losses(dec(x, theta[:, 0], theta[:, 1:]), q, lambda2)
            c = theta[:, 0]
            c_safe = torch.where(ok, c.clamp(0.0, 1.0), q[:, -1])
            asymptote = flip_values(c_safe, flipped)
    return CurveFit(
        asymptote=asymptote, c=c, params=theta[:, 1:], flipped=flipped, loss=loss, lr=lrs, ok=ok, decay=dec.name
    )


def _check_fit_settings(lambda2, lr, betas, final_lr_fraction, dtype) -> None:
    """The fitter's weights and schedule, each in its range, or an error naming it."""
    bounded("lambda2", lambda2, 0, hint="the weight of the ELM hinge L2; the paper uses 10")
    bounded("lr", lr, above=0, hint="Adam's initial learning rate; the paper uses 1e-2")
    bounded("final_lr_fraction", final_lr_fraction, above=0, maximum=1, hint="1.0 keeps the lr constant (PLAIN_FIT)")
    try:
        pair = () if isinstance(betas, (str, bytes)) else tuple(betas)
    except TypeError:
        pair = ()
    if len(pair) != 2:
        raise ValueError(f"betas must be two numbers in [0, 1) (Adam's), got {betas!r}; e.g. betas=(0.9, 0.9).")
    for i, beta in enumerate(pair):
        if not 0.0 <= number(f"betas[{i}]", beta) < 1.0:
            raise ValueError(f"betas[{i}] must be in [0, 1) (Adam's), got {beta!r}; e.g. betas=(0.9, 0.9).")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a torch floating dtype, got {dtype!r}; use torch.float32 or torch.float64.")


def fit_curves_one_by_one(probs, log_sizes: Sequence[float], **kwargs) -> CurveFit:
    """The slow reference path: :func:`fit_curves` on one curve at a time (same maths, a Python loop)."""
    p = torch.as_tensor(probs)
    fits = [fit_curves(p[i : i + 1], log_sizes, **kwargs) for i in range(p.shape[0])]
    cat = lambda name: torch.cat([getattr(f, name) for f in fits])  # noqa: E731
    return CurveFit(
        asymptote=cat("asymptote"),
        c=cat("c"),
        params=cat("params"),
        flipped=cat("flipped"),
        loss=cat("loss"),
        lr=cat("lr"),
        ok=cat("ok"),
        decay=fits[0].decay,
    )


# ----------------------------------------------------------------------------- APD on the fly


def on_the_fly_asymptotes(member_logits, log_sizes: Sequence[float], *, top_k: int = 20, **fit_kwargs):
    """Asymptotic probabilities of the ELM's top-k tokens, fitted per token from all members.

    member_logits: (N, ..., V) logits or log-probabilities of every member for the same contexts
    over the same vocabulary (ALM first, ELM last; slice padded vocabularies to the tokenizer's
    first). Both kinds give the same result: only the softmax over the top k is used.
    Returns ``top_ids`` (..., k) int64 (the ELM's top k), ``p_elm`` (..., k) the ELM's probabilities
    renormalised over them, ``p_ap`` (..., k) the fitted asymptotes renormalised over them, and the
    :class:`CurveFit` (rows in the order of ``top_ids.reshape(-1)``).
    """
    member = torch.as_tensor(member_logits)
    if member.ndim < 2:
        raise ValueError(f"member_logits must be (N members, ..., vocab), got shape {tuple(member.shape)}.")
    logits("member_logits", member, "check each member's forward pass")
    n, vocab = member.shape[0], member.shape[-1]
    top_k = count("top_k", top_k, 1, "the paper uses 20", maximum=vocab)
    top_ids = member[-1].topk(top_k, dim=-1).indices  # (..., k)
    at_top = torch.gather(member, -1, top_ids.expand(n, *top_ids.shape))  # (N, ..., k)
    p = torch.softmax(at_top.to(fit_kwargs.get("dtype", torch.float32)), dim=-1)
    lead = top_ids.shape
    fit = fit_curves(p.movedim(0, -1).reshape(-1, n), log_sizes, **fit_kwargs)
    ap = fit.asymptote.reshape(lead).to(p.dtype)
    p_elm = p[-1]
    total = ap.sum(-1, keepdim=True)
    p_ap = torch.where(total > 0, ap / total.clamp_min(1e-30), p_elm)
    return top_ids, p_elm, p_ap, fit


def mix_on_the_fly(p_elm: torch.Tensor, p_ap: torch.Tensor, w: float) -> torch.Tensor:
    """(1 - w) * p_ELM + w * p_AP, probabilities ``(..., k)`` over the same top-k tokens: ``w`` in
    [0, 1] is the paper's mixing weight, best of :data:`ON_THE_FLY_WEIGHTS` ({0.05, ..., 0.6, 0.8, 1.0}).

    Example:
        >>> mix_on_the_fly(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0]), 0.25)
        tensor([0.6250, 0.3750])
    """
    bounded("w", w, 0, maximum=1, hint="the mixing weight of the asymptotic probabilities, e.g. 0.5")
    return (1.0 - w) * p_elm + w * p_ap


ON_THE_FLY_WEIGHTS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.8, 1.0)


# ----------------------------------------------------------------------------- synthetic curves, benchmark

PYTHIA_LOG_SIZES = (16.7555, 18.2588, 19.5270, 20.5073, 20.9127, 21.6466, 22.5864)


def synthetic_curves(
    m: int,
    log_sizes: Sequence[float] = PYTHIA_LOG_SIZES,
    *,
    noise: float = 0.005,
    rising_fraction: float = 0.5,
    seed: int = 0,
):
    """M noisy exponential-decay probability curves with known asymptotes, for tests and benchmarks.

    Falling curves c + a exp(-max(0, b (x - d))) and rising ones (1 minus such a curve), with
    c in [0.05, 0.45], a in [0.2, 0.5], b in [0.15, 0.6], d in [x_1 - 1, x_1 + 1]: at Pythia's sizes
    the ELM is still 0.01-0.2 away from the asymptote, so extrapolation has something to do.
    Returns (probs (M, N) float64 clipped to [0, 1], true asymptotes (M,)).
    """
    g = torch.Generator().manual_seed(seed)
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(m, generator=g, dtype=torch.float64)  # noqa: E731
    x = torch.tensor(log_sizes, dtype=torch.float64)
    c, a, b, d = u(0.05, 0.45), u(0.2, 0.5), u(0.15, 0.6), u(float(x[0]) - 1, float(x[0]) + 1)
    curve = exponential_decay(x, c, torch.stack([a, b, d], -1))
    rising = torch.rand(m, generator=g, dtype=torch.float64) < rising_fraction
    curve, c = flip_values(curve, rising[:, None]), flip_values(c, rising)
    curve = curve + noise * torch.randn(curve.shape, generator=g, dtype=torch.float64)
    return curve.clamp(0.0, 1.0), c


def benchmark_fitter(
    n_vectorised: int = 4096, n_loop: int = 16, *, iterations: int = 400, seed: int = 0, device=None
) -> dict:
    """Curves fitted per second, vectorised vs one at a time (same maths), and the speed-up."""
    probs, _ = synthetic_curves(max(n_vectorised, n_loop), seed=seed)
    t0 = time.perf_counter()
    fit_curves(probs[:n_vectorised], PYTHIA_LOG_SIZES, iterations=iterations, device=device)
    if device is not None and str(device).startswith("cuda"):
        torch.cuda.synchronize()
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    fit_curves_one_by_one(probs[:n_loop], PYTHIA_LOG_SIZES, iterations=iterations, device=device)
    t_loop = time.perf_counter() - t0
    vec, loop = n_vectorised / t_vec, n_loop / t_loop
    return {
        "curves_per_s_vectorised": vec,
        "curves_per_s_one_by_one": loop,
        "speedup": vec / loop,
        "n_vectorised": n_vectorised,
        "n_loop": n_loop,
        "iterations": iterations,
        "threads": torch.get_num_threads(),
        "device": str(device or "cpu"),
    }


__all__ = [
    "SPACES",
    "DECAY_NAMES",
    "Decay",
    "get_decay",
    "exponential_decay",
    "logistic_decay",
    "polynomial_decay",
    "safe_sqrt",
    "flip_mask",
    "flip_values",
    "CurveFit",
    "curve_losses",
    "fit_curves",
    "fit_curves_one_by_one",
    "grid_init",
    "GRID_TEMPERATURE",
    "HINGE_MARGIN",
    "simple_init",
    "TUNED_FIT",
    "PLAIN_FIT",
    "on_the_fly_asymptotes",
    "mix_on_the_fly",
    "ON_THE_FLY_WEIGHTS",
    "synthetic_curves",
    "benchmark_fitter",
    "PYTHIA_LOG_SIZES",
]
