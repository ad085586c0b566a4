import numpy as np
import pandas as pd
import pytest
import torch

from apd.family import knowledge
from apd.world.corpus import CorpusConfig, build_corpus


@pytest.fixture(scope="module")
def corpus_and_tokenizer(tmp_path_factory):
    corpus = build_corpus(CorpusConfig.smoke())
    return corpus, corpus.tokenizer(cache_dir=tmp_path_factory.mktemp("tok"))


class OracleFamily:
    """Two fake members: 'small' puts all mass on the first distractor, 'big' on the gold."""

    def __init__(self, tokenizer, gold_of_prompt, wrong_of_prompt):
        self.names = ["small", "big"]
        self.log_sizes = np.array([9.0, 12.0])
        self.tokenizer = tokenizer
        self.vocab_size = len(tokenizer)
        self.gold, self.wrong = gold_of_prompt, wrong_of_prompt

    def next_token_log_probs(self, input_ids, attention_mask):
        B = input_ids.shape[0]
        out = torch.full((2, B, self.vocab_size), -20.0)
        for b in range(B):
            ids = input_ids[b][attention_mask[b].bool()].tolist()
            prompt = self.tokenizer.decode(ids)
            out[0, b, self.wrong[prompt]] = -0.1
            out[1, b, self.gold[prompt]] = -0.1
        return torch.log_softmax(out, -1)


def test_scores_follow_the_members(corpus_and_tokenizer):
    corpus, tok = corpus_and_tokenizer
    items = [it for it in corpus.qa_items if it.attribute in ("birth_city", "employer")][:10]
    gold = {it.prompt: knowledge.first_token_id(tok, it.prompt, it.gold) for it in items}
    wrong = {it.prompt: knowledge.first_token_id(tok, it.prompt, it.distractors[0]) for it in items}
    fam = OracleFamily(tok, gold, wrong)
    scores = knowledge.score_world_qa(fam, corpus.world, items, batch_size=4)
    assert scores.logprobs.shape == (2, len(items), len(tok))
    acc = knowledge.accuracy_table(scores.frame)
    assert acc.loc["small", "all"] == 0.0 and acc.loc["big", "all"] == 1.0
    big = scores.frame[scores.frame.member == "big"]
    assert (big["rank"] == 1).all() and np.allclose(
        big["p_gold"], np.exp(scores.logprobs[1, np.arange(len(items)), scores.gold])
    )
    # deterministic attributes: the truth is one token with probability 1, the gold one
    assert np.allclose(scores.truth.sum(-1), 1.0)
    assert (scores.truth.argmax(-1) == scores.gold).all()


def test_distributional_truth_spreads_mass(corpus_and_tokenizer):
    corpus, tok = corpus_and_tokenizer
    items = [it for it in corpus.qa_items if it.attribute == "hobby"][:3]
    fam = OracleFamily(tok, {}, {})
    truth = np.zeros(len(tok))
    for t, p in corpus.world.next_token_distribution(items[0], tok).items():
        truth[t] += p
    assert truth.sum() == pytest.approx(1.0) and (truth > 0).sum() > 1
    with pytest.raises(ValueError, match="no QA items"):
        knowledge.score_world_qa(fam, corpus.world, [])


def _frame(small, big, bucket="tail", attribute="employer"):
    rows = []
    for member, right in (("small", small), ("big", big)):
        for i, r in enumerate(right):
            rows.append({"member": member, "item": i, "bucket": bucket, "attribute": attribute, "mc_correct": r})
    return pd.DataFrame(rows)


def test_paired_gain_is_an_exact_mcnemar_test():
    # 10 items: both right on 2, only big on 8, only small on 0
    small = [1, 1] + [0] * 8
    big = [1] * 10
    g = knowledge.paired_gain(_frame(small, big), "small", "big", bucket="tail")
    assert (g["n"], g["only_larger"], g["only_smaller"]) == (10, 8, 0)
    assert g["acc_smaller"] == pytest.approx(0.2) and g["acc_larger"] == pytest.approx(1.0)
    assert g["gain"] == pytest.approx(0.8)
    assert g["p_value"] == pytest.approx(2 * 0.5**8)  # two-sided exact binomial on the 8 discordant items
    # 3 discordant each way: no evidence either way
    even = knowledge.paired_gain(_frame([1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]), "small", "big")
    assert even["gain"] == 0.0 and even["p_value"] == pytest.approx(1.0)
    # identical answers: no discordant item, p = 1
    assert knowledge.paired_gain(_frame([1, 0], [1, 0]), "small", "big")["p_value"] == 1.0


def test_paired_gain_rejects_bad_input():
    f = _frame([1, 0], [1, 1])
    with pytest.raises(ValueError, match="no member 'huge'"):
        knowledge.paired_gain(f, "small", "huge")
    with pytest.raises(ValueError, match="no items to compare in bucket 'head'"):
        knowledge.paired_gain(f, "small", "big", bucket="head")
    with pytest.raises(ValueError, match="no items to compare"):
        knowledge.paired_gain(_frame([1, 0], [1, 1], attribute="hobby"), "small", "big")
    bad = f[~((f.member == "big") & (f.item == 1))]
    with pytest.raises(ValueError, match="same items"):
        knowledge.paired_gain(bad, "small", "big")


def test_saturation_table_counts_rising_and_flattening_curves():
    from types import SimpleNamespace

    from apd.family.knowledge import WorldQAScores, saturation_table

    x = np.log([1e4, 1e5, 1e6, 1e7])
    # item 0 (head): rises and flattens; item 1 (tail): rises linearly; item 2 (tail): falls
    p = np.array([[0.1, 0.5, 0.6, 0.62], [0.1, 0.2, 0.3, 0.4], [0.5, 0.4, 0.3, 0.2]]).T  # (N, B)
    V = 5
    lp = np.full((4, 3, V), np.log(1e-6))
    lp[:, :, 2] = np.log(p)
    items = [SimpleNamespace(bucket=b) for b in ("head", "tail", "tail")]
    s = WorldQAScores(
        names=list("abcd"),
        log_sizes=x,
        items=items,
        logprobs=lp.astype(np.float32),
        gold=np.array([2, 2, 2]),
        choices=np.zeros((3, 2), int),
        truth=None,
        frame=None,
    )
    t = saturation_table(s)
    assert t.loc["head", "share rising"] == 1.0 and t.loc["head", "share flattening (of rising)"] == 1.0
    assert t.loc["tail", "share rising"] == 0.5 and t.loc["tail", "share flattening (of rising)"] == 0.0
    assert t.loc["all", "items"] == 3
    with pytest.raises(ValueError, match="ratio"):
        saturation_table(s, ratio=1.5)
