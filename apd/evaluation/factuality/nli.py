"""Entailment of a claim by its evidence (an NLI model from the Hub, RoBERTa-large-MNLI by default)."""

from __future__ import annotations

import math
import os
from typing import Sequence

import numpy as np
import torch

from apd.evaluation import text_metrics
from apd.evaluation.factuality.ner import MeasureUnavailable, word_set


def load_nli(name: str = "FacebookAI/roberta-large-mnli", device=None, batch_size: int = 32):
    """An NLI scorer ``nli(premises, hypotheses) -> bool array`` (True = "entailment" is the
    argmax label), from a Hub sequence-classification model; :class:`MeasureUnavailable` when
    it cannot be loaded (no network, no local copy)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    def load(local_only: bool):
        return (
            AutoTokenizer.from_pretrained(name, local_files_only=local_only),
            AutoModelForSequenceClassification.from_pretrained(name, local_files_only=local_only),
        )

    try:
        tok, model = load(True)  # a local folder or the Hub cache: no network needed
    except (OSError, ValueError):
        if not _hub_reachable():  # fail fast instead of the Hub client's minute of retries
            raise MeasureUnavailable(
                f"the NLI model {name} is not in the local Hugging Face cache and "
                "huggingface.co cannot be reached; Entail_R needs it (network or a local "
                "copy: pass the folder as nli_model)"
            ) from None
        try:
            tok, model = load(False)
        except (OSError, ValueError) as e:
            raise MeasureUnavailable(
                f"the NLI model {name} cannot be loaded here ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:160]}); Entail_R needs it"
            ) from None
    labels = {v.lower(): int(k) for k, v in model.config.id2label.items()}
    if "entailment" not in labels:
        raise MeasureUnavailable(f"{name} has no 'entailment' label ({model.config.id2label}); use an MNLI model")
    ent = labels["entailment"]
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model.to(dev).eval()

    @torch.no_grad()
    def nli(premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        out = []
        for s in range(0, len(premises), batch_size):
            enc = tok(
                list(premises[s : s + batch_size]),
                list(hypotheses[s : s + batch_size]),
                truncation=True,
                max_length=512,
                padding=True,
                return_tensors="pt",
            ).to(dev)
            out.append((model(**enc).logits.argmax(-1) == ent).cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, dtype=bool)

    return nli


def _hub_reachable(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    """Whether the Hugging Face Hub can be reached (False under HF_HUB_OFFLINE=1)."""
    import socket

    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def top_evidence_sentences(claim: str, evidence: str, k: int = 2) -> list[str]:
    """The ``k`` evidence sentences sharing the most (idf-weighted) words with ``claim``."""
    sents = [s for s in text_metrics.split_sentences(evidence.replace("\n", " ")) if s.strip()]
    if not sents:
        return []
    bags = [word_set(s) for s in sents]
    df = {}
    for b in bags:
        for w in b:
            df[w] = df.get(w, 0) + 1
    cw = word_set(claim)
    scores = [sum(math.log((1 + len(sents)) / (1 + df[w])) + 1 for w in b & cw) for b in bags]
    order = np.argsort(-np.asarray(scores), kind="stable")[:k]
    return [sents[i] for i in order]
