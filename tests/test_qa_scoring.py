"""apd.evaluation.qa_scoring: QA scoring over the ELM's top 20 with hand-made distributions and a tiny fake family."""

import contextlib
import math
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.stats
import torch

from apd.evaluation import qa_metrics, qa_scoring
from apd.evaluation.qa_data import QAExample
from apd.report import beside

# ----------------------------------------------------------------------------------------------
# a tiny fake family: word-level tokenizer, "bigram" models whose next-token logits depend only on
# the current token (a lookup table), so every distribution is set by hand


class WordTokenizer:
    def __init__(self, words):
        self.vocab = {w: i for i, w in enumerate(words)}
        self.pad_token_id = 0

    def encode(self, text, add_special_tokens=False):
        return [self.vocab[w] for w in text.split()]

    def get_vocab(self):
        return dict(self.vocab)


class Bigram(torch.nn.Module):
    """logits[b, t] = table[input_ids[b, t]] (no position or padding dependence)."""

    def __init__(self, table):
        super().__init__()
        self.table = torch.nn.Parameter(torch.as_tensor(table, dtype=torch.float32), requires_grad=False)

    def forward(self, input_ids, attention_mask=None):
        return SimpleNamespace(logits=self.table[input_ids])


class FakeFamily:
    def __init__(self, tokenizer, models: dict):
        self.tokenizer = tokenizer
        self.vocab_size = len(tokenizer.vocab)
        self.names = tuple(models)
        self._models = models

    alm = property(lambda self: self.names[0])
    elm = property(lambda self: self.names[-1])

    @contextlib.contextmanager
    def on_device(self, name):
        yield self._models[name]


WORDS = ["<pad>", "Q", "R", "yes", "no", "maybe", "far"] + [f"w{i}" for i in range(23)]  # V = 30
V = len(WORDS)
TOK = WordTokenizer(WORDS)
ID = TOK.vocab


def _table(rows: dict, base: float = 0.0):
    """A (V, V) logit table: row of token a gets distinct small background logits (no ties),
    with the given {next word: logit} overrides."""
    t = np.tile(base - 0.01 * np.arange(V), (V, 1))
    t[:, ID["far"]] = -50.0  # never in anybody's top 20
    for a, over in rows.items():
        for w, v in over.items():
            t[ID[a], ID[w]] = v
    return t


def _full_cd(elm_logits, alm_logits, inv_T, k=20):
    """Independent reimplementation on the full vocabulary: log-softmax both, keep the ELM's top k,
    subtract inv_T * log p_ALM there, renormalise over the kept tokens. Returns probabilities."""
    e = elm_logits - np.logaddexp.reduce(elm_logits)
    a = alm_logits - np.logaddexp.reduce(alm_logits)
    keep = np.argsort(-e)[:k]
    s = e[keep] - inv_T * a[keep]
    p = np.zeros_like(e)
    p[keep] = np.exp(s - np.logaddexp.reduce(s))
    return p


# ----------------------------------------------------------------------------------------------
# order of operations: top-20 of the ELM, then CD, then renormalise


def test_cd_on_topk_slices_equals_full_vocabulary():
    rng = np.random.default_rng(0)
    P, Vb, k = 7, 50, 20
    elm_lp = torch.log_softmax(torch.as_tensor(rng.normal(0, 2, (P, Vb))), -1)
    alm_lp = torch.log_softmax(torch.as_tensor(rng.normal(0, 2, (P, Vb))), -1)
    gold = rng.integers(0, Vb, P)
    top = torch.topk(elm_lp, k, -1)
    ids = top.indices.numpy()
    hit = ids == gold[:, None]
    expert = qa_scoring.ExpertTopK(
        ids,
        top.values.numpy().astype(np.float32),
        np.where(hit.any(1), hit.argmax(1), -1),
        qa_metrics.gold_rank(elm_lp, torch.as_tensor(gold)).numpy(),
        Vb,
    )
    amateur = np.take_along_axis(alm_lp.numpy(), ids, 1).astype(np.float32)
    grid = [0.0, 0.5, 1.0]
    logp, rank = qa_scoring.method_token_scores(expert, amateur, grid)
    full = qa_metrics.cd_scores_over_topk(elm_lp.numpy(), alm_lp.numpy(), grid, k=k)  # (3, P, V)
    want = full[:, np.arange(P), gold]
    assert np.allclose(logp[np.isfinite(want)], want[np.isfinite(want)], atol=1e-5)
    assert np.array_equal(np.isfinite(logp), np.isfinite(want))
    assert (rank == qa_metrics.gold_rank(full, np.tile(gold, (3, 1)))).all()
    assert (~hit.any(1)).any() and hit.any(1).any()  # both cases exercised


def test_mask_comes_before_cd_and_renormalisation_after():
    # 4 tokens, k = 2. The ELM's top 2 are tokens 0 and 1. Token 3 is rare for the amateur, so CD
    # would favour it if it were applied before the mask; it must get probability 0.
    elm = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    alm = np.log(np.array([0.6, 0.2, 0.19, 0.01]))
    ids = np.array([[0, 1]])
    expert = qa_scoring.ExpertTopK(ids, elm[ids].astype(np.float32), np.array([1]), np.array([2]), 4)
    logp, rank = qa_scoring.method_token_scores(expert, alm[ids], [1.0])
    # by hand: scores log(.5/.6), log(.3/.2); renormalised p(token 1) = 1.5 / (1.5 + 5/6)
    assert math.exp(logp[0, 0]) == pytest.approx(1.5 / (1.5 + 5 / 6), rel=1e-6)
    assert rank[0, 0] == 1  # CD puts the gold (token 1) first although the ELM ranks it second
    gold_outside = qa_scoring.ExpertTopK(ids, elm[ids].astype(np.float32), np.array([-1]), np.array([4]), 4)
    logp, rank = qa_scoring.method_token_scores(gold_outside, alm[ids], [1.0])
    assert logp[0, 0] == -np.inf and rank[0, 0] == 4
    # the expert alone (1/T = 0) is its top-2 distribution renormalised: 0.3 / 0.8
    logp, _ = qa_scoring.method_token_scores(expert, None, [0.0])
    assert math.exp(logp[0, 0]) == pytest.approx(0.3 / 0.8)
    with pytest.raises(ValueError, match="only 1/T = 0"):
        qa_scoring.method_token_scores(expert, None, [0.5])


# ----------------------------------------------------------------------------------------------
# per-answer ppl (+0.01), reciprocal rank, filter


def test_answer_ppl_adds_0_01_over_ragged_answers():
    offsets = np.array([0, 1, 3, 6])  # answers of 1, 2, 3 tokens
    p = np.array([0.5, 1.0, 0.0, 0.2, 0.2, 0.2])
    with np.errstate(divide="ignore"):
        ppl = qa_scoring.answer_ppl_matrix(np.log(p)[None], offsets)
    want = [-math.log(0.51), -(math.log(1.01) + math.log(0.01)) / 2, -math.log(0.21)]
    assert np.allclose(ppl[0], want)  # nats, mean of -log(p + 0.01), never exponentiated
    rr = qa_scoring.answer_rr_matrix(np.array([[1, 2, 4, 1, 1, 3]]), offsets)
    assert np.allclose(rr[0], [1.0, (1 / 2 + 1 / 4) / 2, (1 + 1 + 1 / 3) / 3])
    assert rr[0].mean() == pytest.approx(qa_metrics.mrr([[1], [2, 4], [1, 1, 3]]))


def test_in_topk_filter_needs_every_token_and_the_reference():
    offsets = np.array([0, 2, 3, 5])
    elm_rank = np.array([1, 20, 21, 3, 4])
    ref_rank = np.array([1, 2, 1, 30, 1])
    assert qa_scoring.answers_in_topk(elm_rank, offsets).tolist() == [True, False, True]
    assert qa_scoring.answers_in_topk(elm_rank, offsets, ref_rank).tolist() == [True, False, False]


def test_encode_pairs_offsets_and_left_cut():
    enc = qa_scoring.encode_pairs(TOK, ["Q R", "Q"], [" yes no", " maybe"])
    assert enc.input_ids == [[ID["Q"], ID["R"], ID["yes"], ID["no"]], [ID["Q"], ID["maybe"]]]
    assert enc.offsets.tolist() == [0, 2, 3] and enc.gold.tolist() == [ID["yes"], ID["no"], ID["maybe"]]
    cut = qa_scoring.encode_pairs(TOK, ["Q R"], [" yes no"], max_length=3)
    assert cut.input_ids == [[ID["R"], ID["yes"], ID["no"]]]
    with pytest.raises(ValueError, match="no tokens"):
        qa_scoring.encode_pairs(TOK, ["Q"], [""])
    with pytest.raises(ValueError, match="one per pair"):
        qa_scoring.encode_pairs(TOK, ["Q"], [])


# ----------------------------------------------------------------------------------------------
# teacher forcing through a real (tiny, random) GPT-NeoX: batching and padding change nothing


def test_batched_left_padded_scores_equal_one_sequence_at_a_time():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    cfg = GPTNeoXConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        rotary_pct=0.5,
    )
    model = GPTNeoXForCausalLM(cfg).eval()
    rng = np.random.default_rng(1)
    seqs = [rng.integers(2, 40, n).tolist() for n in (3, 9, 5, 12)]
    answers = [1, 3, 2, 4]
    offsets = np.concatenate([[0], np.cumsum(answers)])
    gold = np.concatenate([s[-a:] for s, a in zip(seqs, answers)])
    enc = qa_scoring.EncodedPairs(seqs, offsets, gold)
    got = np.zeros((len(gold), 40), dtype=np.float32)
    for idx, lp in qa_scoring.iter_answer_log_probs(model, enc, 40, batch_size=3, pad_id=0):
        got[idx] = lp.numpy()
    for s, a, o in zip(seqs, answers, offsets):
        with torch.no_grad():
            lp = torch.log_softmax(model(torch.tensor([s])).logits[0], -1).numpy()
        want = lp[len(s) - a - 1 : len(s) - 1]  # position t predicts token t + 1
        assert np.allclose(got[o : o + a], want, atol=1e-5)
    long = qa_scoring.EncodedPairs([[2] * 70], np.array([0, 1]), np.array([2]))
    with pytest.raises(ValueError, match="max_length"):
        next(qa_scoring.iter_answer_log_probs(model, long, 40))


# ----------------------------------------------------------------------------------------------
# whole QA sets on the fake family


def _family(with_ref=False):
    # after "Q": the ELM prefers yes over no; the amateur agrees even more strongly, so CD at a
    # large 1/T flips to "no" (obvious blindness). After "R": "maybe" is the ELM's top token.
    elm = _table({"Q": {"yes": 4.0, "no": 3.0}, "R": {"maybe": 3.0}, "yes": {"no": 2.0}})
    alm = _table({"Q": {"yes": 6.0, "no": 0.0}, "R": {"maybe": 1.0}})
    alm_prime = _table({"Q": {"yes": 4.5, "no": 3.0}, "R": {"maybe": 2.0}})
    fam = FakeFamily(TOK, {"alm": Bigram(alm), "elm": Bigram(elm)})
    ref = None
    if with_ref:  # the reference does not have "maybe" in its top 20 after "R"
        ref_t = _table({"Q": {"yes": 5.0, "no": 5.0}, "R": {"maybe": -40.0}})
        ref = FakeFamily(TOK, {"big": Bigram(ref_t)})
    return fam, Bigram(alm_prime), ref, (elm, alm, alm_prime)


MC = [
    QAExample("toy", "toy/0", "Q", " yes", [" yes", " no", " far"], 0),  # gold yes; "far" filtered
    QAExample("toy", "toy/1", "Q", " no", [" yes", " no"], 1),  # gold no
    QAExample("toy", "toy/2", "Q", " far", [" yes", " far"], 1),  # gold outside the top 20
]


def test_score_qa_multiple_choice_by_hand():
    fam, alm_prime, _, (elm, alm, _) = _family()
    grid = [0.0, 1.0]
    sc = qa_scoring.score_qa(fam, MC, alm_prime=alm_prime, inv_T=grid, batch_size=2)
    assert sc.methods == ["elm", "cd", "apd"] and sc.kind == "mc"
    assert sc.kept.tolist() == [True, True, False]
    assert sc.kept_mc.tolist() == [True, True, False]
    assert sc.option_kept[0].tolist() == [True, True, False]
    for t, inv in enumerate(grid):
        p = _full_cd(elm[ID["Q"]], alm[ID["Q"]], inv)
        assert sc.gold_ppl["cd"][t, 0] == pytest.approx(-math.log(p[ID["yes"]] + 0.01), rel=1e-5)
        assert sc.gold_ppl["cd"][t, 1] == pytest.approx(-math.log(p[ID["no"]] + 0.01), rel=1e-5)
        assert np.isnan(sc.option_ppl["cd"][t, 0, 2])  # filtered option takes no part
    # the ELM picks "yes": right on question 0, wrong on 1. CD at 1/T = 1 flips to "no".
    assert sc.correct["elm"][0].tolist()[:2] == [1.0, 0.0]
    assert sc.correct["cd"][0].tolist()[:2] == [1.0, 0.0]  # 1/T = 0 is the ELM
    assert sc.correct["cd"][1].tolist()[:2] == [0.0, 1.0]
    assert np.isnan(sc.correct["cd"][1, 2])  # not usable for accuracy
    assert sc.gold_ppl["elm"][0, 0] == pytest.approx(sc.gold_ppl["cd"][0, 0])


def test_score_qa_free_answers_multi_token_and_reference_filter():
    fam, alm_prime, ref, (elm, alm, _) = _family(with_ref=True)
    free = [
        QAExample("toy", "toy/a/0", "Q", " yes no", meta={"all_answers": ["yes no", "maybe"]}),
        QAExample("toy", "toy/a/1", "R", " maybe", meta={"all_answers": ["yes no", "maybe"]}),
    ]
    sc = qa_scoring.score_qa(fam, free, alm_prime=alm_prime, reference=ref, inv_T=[0.5])
    assert sc.kind == "free" and sc.metric_names == ["ppl", "MRR"]
    assert sc.groups.tolist() == ["toy/a", "toy/a"]
    p1 = _full_cd(elm[ID["Q"]], alm[ID["Q"]], 0.5)[ID["yes"]]
    p2 = _full_cd(elm[ID["yes"]], alm[ID["yes"]], 0.5)[ID["no"]]
    want = (-math.log(p1 + 0.01) - math.log(p2 + 0.01)) / 2
    assert sc.gold_ppl["cd"][0, 0] == pytest.approx(want, rel=1e-5)
    assert sc.kept.tolist() == [True, False]  # "maybe" is outside the reference's top 20
    assert sc.has_reference and "ref" in sc.methods
    no_ref = qa_scoring.score_qa(fam, free, alm_prime=alm_prime, inv_T=[0.5])
    assert no_ref.kept.tolist() == [True, True]
    with pytest.raises(ValueError, match="no accuracy"):
        sc.values("acc")


# ----------------------------------------------------------------------------------------------
# choosing 1/T: on the evaluation set (paper) and held out


def test_pick_paper_held_out_select_and_cross_fit():
    grid = [0.5, 1.0, 2.0]
    # items 0-1 prefer 1/T = 0.5, items 2-3 prefer 2.0 (ppl: lower is better)
    values = np.array([[1.0, 1.0, 5.0, 5.0], [2.0, 2.0, 2.0, 2.0], [5.0, 5.0, 1.0, 1.0]])
    counted = np.ones(4, bool)
    paper = qa_scoring.pick(values, grid, False, counted)
    assert paper.inv_T == (1.0,)  # means 3, 2, 3: the middle row wins on the whole set
    assert np.allclose(paper.values, 2.0)
    report, select = np.array([0, 0, 1, 1], bool), np.array([1, 1, 0, 0], bool)
    held = qa_scoring.pick(values, grid, False, counted, "held-out", report=report, select=select)
    assert held.inv_T == (0.5,) and np.allclose(held.values[2:], 5.0) and np.isnan(held.values[:2]).all()
    on_report = qa_scoring.pick(values, grid, False, counted, "paper", report=report)
    assert on_report.inv_T == (2.0,) and np.allclose(on_report.values[2:], 1.0)
    folds = np.array([0, 0, 1, 1])
    cross = qa_scoring.pick(values, grid, False, counted, "held-out", folds=folds)
    assert cross.inv_T == (0.5, 2.0)  # chosen on half 0, on half 1
    assert np.allclose(cross.values, [5.0, 5.0, 5.0, 5.0])  # each half at the other's choice
    acc = qa_scoring.pick(-values, grid, True, counted)  # higher is better
    assert acc.inv_T == (1.0,)
    tie = qa_scoring.pick(np.ones((3, 4)), grid, False, counted)
    assert tie.inv_T == (0.5,)  # ties go to the first 1/T of the grid
    with pytest.raises(ValueError, match="overlap"):
        qa_scoring.pick(values, grid, False, counted, "held-out", report=report, select=report)
    with pytest.raises(qa_scoring.NothingToChoose):
        qa_scoring.pick(values, grid, False, np.zeros(4, bool))


def test_half_split_keeps_questions_together_and_is_deterministic():
    groups = ["a", "a", "b", "c", "c", "d", "e", "f"]
    h = qa_scoring.half_split(groups, seed=3)
    assert h[0] == h[1] and h[3] == h[4]
    assert sorted(np.bincount([h[groups.index(g)] for g in "abcdef"])) == [3, 3]
    assert (qa_scoring.half_split(groups, seed=3) == h).all()


def test_summary_significance_and_gap_rows():
    fam, alm_prime, _, _ = _family()
    sc = qa_scoring.score_qa(fam, MC[:2] * 3, alm_prime=alm_prime, inv_T=[0.0, 1.0])
    table = qa_scoring.qa_summary(sc)
    assert set(table["protocol"]) == set(qa_scoring.PROTOCOLS) and set(table["metric"]) == {"ppl", "acc", "MRR"}
    row = table[(table.protocol == "paper") & (table.metric == "acc") & (table.method == "cd")].iloc[0]
    assert row["value"] == pytest.approx(0.5) and row["n"] == 6
    sig = qa_scoring.significance(sc)
    assert set(sig["protocol"]) == set(qa_scoring.PROTOCOLS)
    cd = qa_scoring.pick(sc.gold_ppl["cd"], sc.inv_T, False, sc.kept).values
    apd = qa_scoring.pick(sc.gold_ppl["apd"], sc.inv_T, False, sc.kept).values
    want = scipy.stats.ttest_ind_from_stats(apd.mean(), apd.std(), 6, cd.mean(), cd.std(), 6)
    assert sig.iloc[0]["p_two_sample"] == pytest.approx(want.pvalue)
    assert qa_scoring.gap_rows(table).empty  # no reference model: no gap rows
    # gap rows by hand: ppl ELM 2.0, LLM 1.5, CD 1.9, APD 1.7 -> APD vs CD = 0.4, APD vs LLM = 0.6;
    # accuracy where the LLM is worse than the ELM -> NaN ("NA")
    hand = []
    for metric, vals in {"ppl": (2.0, 1.5, 1.9, 1.7), "acc": (0.6, 0.5, 0.62, 0.65)}.items():
        for m, v in zip(("elm", "ref", "cd", "apd"), vals):
            hand.append(
                {"dataset": "d", "protocol": "paper", "metric": metric, "group": "all", "method": m, "value": v}
            )
    import pandas as pd

    gaps = qa_scoring.gap_rows(pd.DataFrame(hand)).set_index(["metric", "row"])["value"]
    assert gaps[("ppl", "APD vs CD")] == pytest.approx(0.4)
    assert gaps[("ppl", "APD vs LLM")] == pytest.approx(0.6)
    assert np.isnan(gaps[("acc", "APD vs CD")])


def test_paper_rows_are_fractions_and_world_examples():
    rows = beside.paper_rows("pythia")
    lam = rows[(rows.dataset == "LAMBADA") & (rows.metric == "ppl")].set_index("role")["value"]
    assert lam["apd"] == pytest.approx(2.132) and lam["gap_apd_vs_cd"] == pytest.approx(1.3852)
    assert beside.paper_rows("pico").empty
    from apd.world.world import QAItem

    item = QAItem("Question: Where was A B born?\nAnswer:", "Kel", ("Mor", "Tas"), "A B", "birth_city", "head")
    ex = qa_scoring.world_examples([item])[0]
    assert ex.options == [" Kel", " Mor", " Tas"] and ex.gold_index == 0 and ex.answer == " Kel"
    assert ex.meta["bucket"] == "head"


def test_world_protocols_by_bucket_layout_and_chance():
    fam, alm_prime, ref, _ = _family(with_ref=True)
    sc = qa_scoring.score_qa(fam, MC[:2] * 4, alm_prime=alm_prime, reference=ref, inv_T=[0.0, 1.0])
    assert qa_scoring.chance_accuracy(sc) == pytest.approx(0.5)  # two kept options per usable question
    test = np.arange(len(sc)) >= 4
    bucket = np.array(["head", "tail"] * 4)
    table = qa_scoring.qa_summary(sc, report=test, select=~test, by=bucket)
    assert set(table["group"]) == {"all", "head", "tail"}
    held = table[(table.protocol == "held-out") & (table.metric == "acc") & (table.group == "all")].set_index("method")
    assert held.loc["cd", "n"] == 4  # reported on the test half only
    gaps = qa_scoring.gap_rows(table)
    assert set(gaps["row"]) == {"APD vs CD", "APD vs LLM"}
    lay = qa_scoring.table_layout(table, gaps, "paper")
    assert list(lay.index) == ["LLM (ELM)", "CD", "APD", "LLM (bigger)", "APD vs CD", "APD vs LLM (ELM)"]
    assert list(lay.columns) == [("toy", "ppl"), ("toy", "acc"), ("toy", "MRR")]
    ppl = table[(table.protocol == "paper") & (table.metric == "ppl") & (table.group == "all")].set_index("method")[
        "value"
    ]
    want = qa_metrics.gap_closure(ppl["apd"], ppl["cd"], ppl["ref"], ppl["elm"], higher_is_better=False)
    assert ppl["ref"] < ppl["elm"] and np.isfinite(want)  # the bigger model is better: a defined gap
    assert lay.loc["APD vs CD", ("toy", "ppl")] == pytest.approx(want)
    assert lay.loc["LLM (bigger)", ("toy", "ppl")] == pytest.approx(ppl["ref"])
