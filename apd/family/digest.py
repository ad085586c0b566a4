"""Scores of trained models cached on disk, keyed by the models' weights.

A chapter that scores the family (and ALM') on fixed inputs, held-out text or the world's questions,
recomputes the same arrays on every rerun of its notebook. :func:`memoized_scores` keys the value by
a SHA-256 of every parameter of the models it reads (:func:`model_digest`), the tokenizer, the
dtype and the torch thread count, plus the caller's arguments and the code of the modules
that compute it (:func:`apd.base.memo.memoized`). Retrained weights, another tokenizer or an edit to
the scoring code compute it again; a rerun reads it back.

Only where ``$APD_MEMO_SCORES`` is 1 (the book's runner sets it for its chapters; a notebook of your
own computes unless you set it) and only on the CPU: a GPU scores these inputs in seconds, and
hashing a large family's weights would cost more than that.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Callable, Mapping, Sequence, TypeVar

import torch

from apd.base.memo import SCORES_ENV, memoized
from apd.family.text import tokenizer_hash

T = TypeVar("T")

#: Bytes of cached scores kept per kind (the least recently used go first): room for the default
#: build's scores of one version of the weights and the scoring code, and the smoke build's.
MAX_BYTES = 1 << 30


def model_digest(model: torch.nn.Module) -> str:
    """SHA-256 (first 16 hex digits) of a model's parameters and buffers: names, dtypes, shapes and
    values, in ``state_dict`` order.

    Example:
        >>> a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        >>> _ = b.load_state_dict(a.state_dict())
        >>> model_digest(a) == model_digest(b)
        True
        >>> with torch.no_grad():
        ...     _ = b.weight.add_(1e-6)
        >>> model_digest(a) == model_digest(b)
        False
    """
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        t = t.detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()[:16]


def family_digest(family, members=None) -> str:
    """SHA-256 (first 16 hex digits) of a :class:`apd.family.loading.Family` (or of its ``members``):
    each member's name and :func:`model_digest` (loading it), the tokenizer's vocabulary and special
    tokens and the vocabulary size scored."""
    h = hashlib.sha256(f"{family.vocab_size}|{tokenizer_hash(family.tokenizer)}".encode())
    for name in family.names if members is None else members:
        h.update(f"|{name}:{model_digest(family.model(name))}".encode())
    return h.hexdigest()[:16]


def scoring_identity(family=None, models: Mapping[str, torch.nn.Module] | None = None, members=None) -> dict | None:
    """What a score depends on besides the caller's arguments: the family's (or its ``members'``)
    and each model's digest, the dtype and the torch thread count. None (nothing is cached) off the
    CPU, or for a family-like object that does not expose its members' models."""
    models = dict(models or {})
    devices = {p.device.type for m in models.values() for p in m.parameters()}
    if family is not None:
        if not hasattr(family, "model") or torch.device(family.device).type != "cpu":
            return None
    if devices - {"cpu"}:
        return None
    return {
        "family": family_digest(family, members) if family is not None else None,
        "dtype": str(family.dtype) if family is not None else None,
        "models": {str(k): model_digest(m) for k, m in sorted(models.items(), key=lambda kv: str(kv[0]))},
        "threads": torch.get_num_threads(),
    }


def memoized_scores(
    kind: str,
    parts: Any,
    modules: Sequence[str],
    compute: Callable[[], T],
    family=None,
    models: Mapping[str, torch.nn.Module] | None = None,
    members=None,
    root=None,
    enabled: bool | None = None,
) -> T:
    """``compute()``, or its value saved by an earlier call on the same weights (``family``, each of
    ``models``), arguments ``parts`` and code of ``modules``, under ``<cache>/memo/<kind>/`` (or
    ``root``); see :func:`apd.base.memo.memoized`. ``enabled``: default ``$APD_MEMO_SCORES == "1"``;
    off the CPU it always computes.

    Example:
        >>> import tempfile
        >>> root, m, calls = tempfile.mkdtemp(), torch.nn.Linear(2, 1), []
        >>> f = lambda: calls.append(1) or m(torch.ones(1, 2)).item()
        >>> a = memoized_scores("demo", {"x": 1}, ["apd.family.digest"], f, models={"m": m}, root=root, enabled=True)
        >>> b = memoized_scores("demo", {"x": 1}, ["apd.family.digest"], f, models={"m": m}, root=root, enabled=True)
        >>> a == b, len(calls)
        (True, 1)
    """
    if not (os.environ.get(SCORES_ENV) == "1" if enabled is None else enabled):
        return compute()
    identity = scoring_identity(family, models, members)
    if identity is None:
        return compute()
    return memoized(kind, {"args": parts, "weights": identity}, modules, compute, root, max_bytes=MAX_BYTES)
