import numpy as np
import pytest
import torch

from apd.evaluation import probcurves
from apd.family import heldout
from apd.world.corpus import train_tokenizer


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    texts = ["Mira Tolvane was born in Kelmor. She works as a pilot."] * 50
    return train_tokenizer(texts, vocab_size=300, cache_dir=tmp_path_factory.mktemp("tok"))


class FakeFamily:
    """Member m predicts the true next token with probability (m+1)/(N+1) (growing with size)."""

    def __init__(self, tok, n=3):
        self.tokenizer, self.names = tok, [f"m{i}" for i in range(n)]
        self.vocab_size, self.log_sizes = len(tok), np.arange(n, dtype=float) + 9.0

    def log_probs(self, x, mask, members=None):
        N, (B, S), V = len(self.names), x.shape, self.vocab_size
        out = torch.full((N, B, S, V), 0.0)
        nxt = torch.roll(x, -1, dims=1)
        w = torch.linspace(2.0, 1.0, V)  # strictly decreasing: no ties in any top-k
        for m in range(N):
            p = (m + 1) / (N + 1)
            rest = w.expand(B, S, V).clone().scatter_(-1, nxt[..., None], 0.0)
            out[m] = (1 - p) * rest / rest.sum(-1, keepdim=True)
            out[m].scatter_(-1, nxt[..., None], p)
        return out.log()

    def next_token_log_probs(self, x, mask, members=None):
        return self.log_probs(x, mask)[:, :, -1]


def test_prompt_curves_follow_the_members(tok):
    fam = FakeFamily(tok)
    text = "Mira Tolvane was born in Kelmor."
    df = probcurves.prompt_curves(fam, text, T_values=(1.0, 2.0), k=5)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(df) == len(ids)
    inner = df.iloc[:-1]  # the last position predicts a wrapped-around token
    assert (inner["next_token"] == inner["actual_next"]).all()
    np.testing.assert_allclose(inner["p:m0"], 0.25)
    np.testing.assert_allclose(inner["p:m2"], 0.75)
    # CD at T = 1 over the ELM top-5: the gold token scores 0.75/0.25 = 3, each of the other four
    # 1/3 (every member spreads the rest alike), so CD gives it 3 / (3 + 4/3) = 9/13
    np.testing.assert_allclose(inner["cd:T=1"], 9 / 13, rtol=1e-5)


def test_heldout_positions_repeat_and_top_token_curves(tok):
    fam = FakeFamily(tok)
    texts = ["Mira Tolvane was born in Kelmor. She works as a pilot."] * 20
    lp = heldout.heldout_positions(fam, texts, n_positions=30, seq_len=8, seed=0)["member_logprobs"]
    assert lp.shape == (3, 30, len(tok))
    again = heldout.heldout_positions(fam, texts, n_positions=30, seq_len=8, seed=0)["member_logprobs"]
    np.testing.assert_array_equal(lp, again)
    top, curves = probcurves.top_token_curves(lp, k=2)
    assert top.shape == (30, 2) and curves.shape == (3, 30, 2)
    np.testing.assert_allclose(np.exp(curves[:, :, 0]), [[0.25] * 30, [0.5] * 30, [0.75] * 30], rtol=1e-5)
    with pytest.raises(ValueError, match="fewer than seq_len"):
        heldout.heldout_positions(fam, ["Mira"], n_positions=3, seq_len=64)


def test_score_answers_gold_first_token(tok):
    fam = FakeFamily(tok)
    out = probcurves.score_answers(fam, ["Mira Tolvane was born in"], [" Kelmor"])
    assert out["logprobs"].shape == (3, 1, len(tok))
    assert out["gold"][0] == tok(" Kelmor", add_special_tokens=False)["input_ids"][0]
    with pytest.raises(ValueError, match="as many answers"):
        probcurves.score_answers(fam, ["a"], [])


def test_heldout_positions_give_the_actual_next_token_and_the_amateur(tok):
    fam = FakeFamily(tok)
    texts = ["Mira Tolvane was born in Kelmor. She works as a pilot."] * 20

    class Amateur(torch.nn.Module):
        """A causal LM stand-in: log-probabilities of the smallest fake member, as logits."""

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids):
            return type("Out", (), {"logits": fam.log_probs(input_ids, None)[0]})()

    out = heldout.heldout_positions(fam, texts, n_positions=30, seq_len=8, seed=0, amateur=Amateur())
    lp, nxt = out["member_logprobs"], out["next_ids"]
    assert lp.shape == (3, 30, len(tok)) and nxt.shape == (30,) and len(out["contexts"]) == 30
    # the fake members put (m+1)/(N+1) on the true next token: the largest ranks it first
    assert (lp[-1].argmax(-1) == nxt).all()
    np.testing.assert_allclose(out["amateur_logprobs"], lp[0], rtol=1e-6)
    np.testing.assert_array_equal(lp, heldout.heldout_positions(fam, texts, 30, seq_len=8, seed=0)["member_logprobs"])
    ids = tok(texts[0], add_special_tokens=False)["input_ids"]
    for c, n in zip(out["contexts"][:5], nxt[:5]):
        assert isinstance(c, str) and c and int(n) in ids
    # several amateurs at once (every APD variant's ALM'): the same positions, one array each
    many = heldout.heldout_positions(
        fam, texts, n_positions=30, seq_len=8, seed=0, amateurs={"a": Amateur(), "b": Amateur()}
    )
    assert set(many["amateurs_logprobs"]) == {"a", "b"} and "amateur_logprobs" not in many
    np.testing.assert_array_equal(many["amateurs_logprobs"]["b"], out["amateur_logprobs"])
    np.testing.assert_array_equal(many["next_ids"], nxt)
