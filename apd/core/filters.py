"""Thresholds on the expert's distribution: top-p, top-k, alpha-masking, REAL.

Each filter maps the ELM's log-probabilities ``(B, V)`` to a boolean keep mask ``(B, V)``; CD, APD
and the baselines apply them to the ELM, as the paper and its release do.
"""

from __future__ import annotations

from typing import Iterable, Optional, Union

import torch

from apd.base.checks import count, number


class TopP:
    """Nucleus filter: keep the most probable ELM tokens until their mass reaches ``p``.

    A token is kept when the ELM mass of the tokens ranked strictly above it is < p, so the
    token that crosses p is kept and at least one token always survives (same set as
    Hugging Face's ``TopPLogitsWarper``).

    Example:
        >>> import torch
        >>> TopP(0.8)(torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])))
        tensor([[ True,  True, False, False]])
    """

    def __init__(self, p: float):
        p = number("TopP's p", p, "e.g. TopP(0.8)")
        if not 0.0 < p <= 1.0:
            raise ValueError(f"TopP needs 0 < p <= 1, got {p}; p=1.0 keeps every token.")
        self.p = float(p)

    def __call__(self, elm_logprobs: torch.Tensor) -> torch.Tensor:
        sorted_lp, order = elm_logprobs.sort(dim=-1, descending=True)
        probs = sorted_lp.exp()
        mass_above = probs.cumsum(dim=-1) - probs
        keep_sorted = mass_above < self.p
        keep_sorted[..., 0] = True
        return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)

    def __repr__(self) -> str:
        return f"TopP({self.p:g})"


class TopK:
    """Keep the ``k`` most probable ELM tokens (all of them when k >= vocabulary size).

    Example:
        >>> import torch
        >>> TopK(2)(torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])))
        tensor([[ True,  True, False, False]])
    """

    def __init__(self, k: int):
        self.k = count("TopK's k", k, 1, "the paper's 'k20' is TopK(20)")

    def __call__(self, elm_logprobs: torch.Tensor) -> torch.Tensor:
        k = min(self.k, elm_logprobs.shape[-1])
        idx = elm_logprobs.topk(k, dim=-1).indices
        return torch.zeros_like(elm_logprobs, dtype=torch.bool).scatter(-1, idx, True)

    def __repr__(self) -> str:
        return f"TopK({self.k})"


class AlphaMask:
    """Alpha-masking of Li et al. (2022): keep tokens with p_ELM >= alpha * max p_ELM.

    Example:
        >>> import torch
        >>> AlphaMask(0.2)(torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])))
        tensor([[ True,  True,  True, False]])
    """

    def __init__(self, alpha: float):
        alpha = number("AlphaMask's alpha", alpha, "e.g. AlphaMask(0.1)")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"AlphaMask needs 0 <= alpha <= 1, got {alpha}; CD's default is 0.1.")
        self.alpha = float(alpha)

    def __call__(self, elm_logprobs: torch.Tensor) -> torch.Tensor:
        if self.alpha == 0.0:
            return torch.ones_like(elm_logprobs, dtype=torch.bool)
        top = elm_logprobs.max(dim=-1, keepdim=True).values
        return elm_logprobs >= top + torch.log(torch.tensor(self.alpha, dtype=elm_logprobs.dtype))

    def __repr__(self) -> str:
        return f"AlphaMask({self.alpha:g})"


def real_top_p(c, h_last, T_r: float) -> torch.Tensor:
    """REAL's top-p per row: min(1, exp((c - H_last) / T_r)); c, h_last (...) nats, T_r > 0.

    A NaN or infinite entropy (c or H_last) is a ValueError naming it and its first row: a NaN
    top-p would keep only the most probable token, as if greedy, without a word.

    Example:
        >>> import torch
        >>> real_top_p(torch.tensor([0.5, 2.0]), torch.tensor([1.5, 1.0]), 2.0)
        tensor([0.6065, 1.0000])
    """
    if not number("T_r", T_r) > 0:
        raise ValueError(f"REAL's decay temperature T_r must be > 0, got {T_r}; the paper uses 4.0 for APD + REAL.")
    c, h_last = (
        v.float() if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=torch.float32) for v in (c, h_last)
    )
    for name, v in (
        ("c (the THF model's asymptotic entropy)", c),
        ("h_last (its entropy at the largest member)", h_last),
    ):
        bad = ~torch.isfinite(v.reshape(-1))
        if bool(bad.any()):
            raise ValueError(
                f"REAL's {name} is NaN or infinite ({int(bad.sum())} of {bad.numel()} rows, the first at row "
                f"{int(bad.nonzero()[0])}), so its top-p is undefined; check the THF model and its inputs."
            )
    return torch.exp((c - h_last) / float(T_r)).clamp(max=1.0)


class REAL:
    """REAL sampling's threshold: a nucleus per row with top-p = min(1, exp((c - H_last) / T_r)).

    c and H_last (nats, one per row) come from a THF model at every step:
    :class:`apd.decoding.processors.REALLogitsProcessor` sets them (:meth:`set_entropies`) before the
    filters run; alone, the filter has no threshold. The nucleus is the :class:`TopP` set.

    Example:
        >>> import torch
        >>> real = REAL(2.0)
        >>> real.set_entropies(torch.tensor([0.5, 3.0]), torch.tensor([1.5, 1.0]))   # top-p 0.61, 1
        >>> real(torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.5, 0.3, 0.15, 0.05]])))
        tensor([[ True,  True, False, False],
                [ True,  True,  True,  True]])
    """

    def __init__(self, T_r: float):
        T_r = number("REAL's T_r", T_r, "e.g. REAL(4.0)")
        if not T_r > 0:
            raise ValueError(f"REAL needs a decay temperature T_r > 0, got {T_r}; the paper's APD + REAL uses 4.0.")
        self.T_r = float(T_r)
        self.top_p = None

    def set_entropies(self, c: torch.Tensor, h_last: torch.Tensor) -> None:
        """Set this step's thresholds from the THF model's c and H_last, each (B,) in nats (finite:
        :func:`real_top_p` refuses NaN and infinities)."""
        self.top_p = real_top_p(c, h_last, self.T_r).reshape(-1)

    def __call__(self, elm_logprobs: torch.Tensor) -> torch.Tensor:
        if self.top_p is None:
            raise RuntimeError(
                "REAL(T_r) has no threshold yet: it needs a THF model's entropies at every step; "
                "use it through apd.REALLogitsProcessor(thf, T_r=..., processor=...)."
            )
        p = self.top_p.to(elm_logprobs.device, torch.float32)
        if p.numel() != elm_logprobs.shape[0]:
            raise ValueError(f"REAL has thresholds for {p.numel()} rows, the scores have {elm_logprobs.shape[0]}.")
        sorted_lp, order = elm_logprobs.float().sort(dim=-1, descending=True)
        probs = sorted_lp.exp()
        keep_sorted = probs.cumsum(dim=-1) - probs < p[:, None]
        keep_sorted[..., 0] = True
        return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)

    def __repr__(self) -> str:
        return f"REAL({self.T_r:g})"


Filter = Union[TopP, TopK, AlphaMask, REAL]


def make_filters(kind: str, value: Optional[float] = None) -> list:
    """The paper's thresholding methods by name.

    ``"NA"`` -> [] (no filter), ``"alpha"`` -> [AlphaMask(value)], ``"top-p"`` -> [TopP(value)],
    ``"top-p k20"`` -> [TopP(value), TopK(20)], ``"top-k"`` -> [TopK(value)], ``"REAL"`` ->
    [REAL(value)] (value = T_r; its thresholds come from a THF model through
    :class:`apd.decoding.processors.REALLogitsProcessor`).

    Example:
        >>> make_filters("top-p k20", 0.8)
        [TopP(0.8), TopK(20)]
        >>> make_filters("NA")
        []
        >>> make_filters("REAL", 4.0)
        [REAL(4)]
    """
    if not isinstance(kind, str):
        raise TypeError(f"make_filters' kind must be a str such as 'top-p', got {kind!r}.")
    key = kind.strip().lower().replace("_", "-")
    if key in ("na", "none"):
        return []
    if value is None:
        raise ValueError(f"make_filters({kind!r}) needs a value, e.g. make_filters({kind!r}, 0.8).")
    if key == "alpha":
        return [AlphaMask(value)]
    if key in ("top-p", "topp"):
        return [TopP(value)]
    if key in ("top-p k20", "top-p-k20", "topp-k20", "top-pk20"):
        return [TopP(value), TopK(20)]
    if key in ("top-k", "topk"):
        return [TopK(value)]  # 2.7 is an error, as in TopK(2.7); 20.0 is TopK(20)
    if key == "real":
        return [REAL(value)]
    raise ValueError(f"unknown filter kind {kind!r}; use one of 'NA', 'alpha', 'top-p', 'top-p k20', 'top-k', 'REAL'.")


def keep_mask(elm_logprobs: torch.Tensor, filters: Iterable) -> torch.Tensor:
    """Intersection of the filters' keep masks (B, V) on the ELM's log-probabilities."""
    keep = torch.ones_like(elm_logprobs, dtype=torch.bool)
    for f in filters:
        keep &= f(elm_logprobs)
    return keep
