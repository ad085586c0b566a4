"""The family's scores cached by their weights (apd.family.digest)."""

import doctest

import numpy as np
import pytest
import torch

from apd.amateur.runs import load_alm_prime
from apd.base.memo import SCORES_ENV
from apd.family import digest, heldout, logprobs


def test_the_module_examples_run():
    assert doctest.testmod(digest).failed == 0


@pytest.fixture()
def memo_on(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(SCORES_ENV, "1")
    return tmp_path


def _counting(monkeypatch, module, name):
    calls, real = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_prompt_scores_are_read_back_equal_and_recomputed_for_other_weights(smoke_family, memo_on, monkeypatch):
    fam, built, _ = smoke_family
    prompts = [it.prompt for it in built.corpus.qa_items[:5]]
    calls = _counting(monkeypatch, logprobs, "_prompt_log_probs")
    first = logprobs.prompt_log_probs(fam, prompts, batch_size=4)
    again = logprobs.prompt_log_probs(fam, prompts, batch_size=4)
    assert len(calls) == 1 and np.array_equal(first, again)
    assert list((memo_on / "memo" / "prompt-log-probs").glob("*.pkl"))
    monkeypatch.delenv(SCORES_ENV)
    assert np.array_equal(first, logprobs.prompt_log_probs(fam, prompts, batch_size=4))  # computed, equal
    assert len(calls) == 2
    monkeypatch.setenv(SCORES_ENV, "1")
    logprobs.prompt_log_probs(fam, prompts[:4], batch_size=4)  # other prompts
    assert len(calls) == 3
    member = fam.model(fam.names[0])
    saved = {k: v.clone() for k, v in member.state_dict().items()}
    try:
        with torch.no_grad():
            next(member.parameters()).add_(1e-3)  # other weights: computed again, and different
        changed = logprobs.prompt_log_probs(fam, prompts, batch_size=4)
        assert len(calls) == 4 and not np.array_equal(changed[0], first[0])
    finally:
        member.load_state_dict(saved)


def test_heldout_positions_are_read_back_equal_with_every_amateur(smoke_family, memo_on, monkeypatch):
    fam, built, result = smoke_family
    alm_prime = load_alm_prime(result.alm_prime_path)
    texts = built.corpus.validation
    calls = _counting(monkeypatch, heldout, "_heldout_positions")
    kwargs = dict(n_positions=20, seq_len=32, seed=3, amateurs={"a": alm_prime})
    first = heldout.heldout_positions(fam, texts, **kwargs)
    again = heldout.heldout_positions(fam, texts, **kwargs)
    assert len(calls) == 1
    assert first.keys() == again.keys()
    for key in first:
        if key == "amateurs_logprobs":
            assert np.array_equal(first[key]["a"], again[key]["a"])
        else:
            assert np.array_equal(first[key], again[key])
    heldout.heldout_positions(fam, texts, **{**kwargs, "seed": 4})
    assert len(calls) == 2


def test_nothing_is_cached_unless_asked(smoke_family, tmp_path, monkeypatch):
    fam, built, _ = smoke_family
    monkeypatch.setenv("APD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(SCORES_ENV, raising=False)
    logprobs.prompt_log_probs(fam, ["Alice was born in"], batch_size=1)
    assert not (tmp_path / "memo").exists()


def test_a_family_off_the_cpu_or_without_models_is_not_keyed():
    class Scores:  # a family-like object that only scores
        device = "cpu"

    assert digest.scoring_identity(Scores()) is None


def test_qa_scores_are_read_back_equal_and_keyed_by_alm_prime(smoke_family, memo_on, monkeypatch):
    from apd.evaluation import qa_scoring
    from apd.evaluation.qa_data import QAExample

    fam, built, result = smoke_family
    alm_prime = load_alm_prime(result.alm_prime_path)
    examples = [
        QAExample("world", f"w/{i}", it.prompt, " " + it.gold) for i, it in enumerate(built.corpus.qa_items[:6])
    ]
    calls = _counting(monkeypatch, qa_scoring, "_score_qa")
    first = qa_scoring.score_qa(fam, examples, alm_prime=alm_prime, inv_T=[0.0, 1.0])
    again = qa_scoring.score_qa(fam, examples, alm_prime=alm_prime, inv_T=[0.0, 1.0])
    assert len(calls) == 1
    for m in first.methods:
        assert np.array_equal(first.gold_ppl[m], again.gold_ppl[m], equal_nan=True)
    other = load_alm_prime(result.alm_prime_path)
    with torch.no_grad():
        next(other.parameters()).mul_(0.5)
    qa_scoring.score_qa(fam, examples, alm_prime=other, inv_T=[0.0, 1.0])  # another ALM': computed
    assert len(calls) == 2
