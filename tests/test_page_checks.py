"""The page-text checks of the browser test catch each defect and pass clean text (no build needed)."""

import pytest
from page_checks import page_text_problems


@pytest.mark.parametrize(
    "snippet, found",
    [
        ('<div class="cell_output"><pre>ALM\': 100%|#####| 40/40 [00:03&lt;00:00, 12.1it/s]</pre></div>', "progress"),
        ('<div class="cell_output"><pre>x.py:21: TqdmWarning: IProgress not found</pre></div>', "warning"),
        ('<div class="cell_output"><pre>Traceback (most recent call last):</pre></div>', "traceback"),
        ("<p>| | |\n|\u2014|\u2014|\n| profile | smoke |</p>", "Markdown"),
        ("<p>the score is nan here</p>", "nan"),
        ("<p>rate n/a n/a</p>", "nan"),
        ("<p>loaded from /work/main/cache/families/pico-1/m</p>", "machine path"),
        ("<table><tr><td>0.355</td><td>0.338</td></tr></table>", "padding"),
        ("<p>KL is n/a for the expert, n/a for CD and 0.2 for APD.</p>", "missing values"),
        ("<ul><li>questions: 0 right; rate \u2014; APD rate \u2014</li></ul>", "missing values"),
        (
            '<div class="cell_output"><div class="output text_plain highlight-myst-ansi"><pre>\'1.7%\'</pre></div></div>',
            "stray output",
        ),
        ("<p>The curve here is `{glue:text}`real_decay`` on x</p>", "glue role"),
        ("<p>| qa | 3.2 s |\n| apd | 4.1 s |</p>", "raw Markdown table row"),
        ("<p>The settings:</p><p>| --set | what |\n| family.seed=1 | another seed |</p>", "raw Markdown table row"),
        ("<p>The bound is $$ a + b $$ here.</p>", "display math"),
        ("<p>Glued: {glue}`kl` here.</p>", "glue role"),
        ("<p>APD's perplexity is 1.230, worse than CD's 1.230.</p>", "equal numbers"),
        ("<p>APD's ppl is 2.5%, lower (better) than CD's 2.5%.</p>", "equal numbers"),
        ("<p>and that bucket's gain is significant (paired p = 0.1, 29 questions)</p>", "significant at p = 0.1"),
        ("<p>gain = 0.02 against 1.96 x gain_se = 0.01048 (smallest)</p>", "standard error"),
        ('<figure><img src="a.png" alt="a.png"><figcaption>Fig. 1 A caption.</figcaption></figure>', "alt text"),
        ('<div class="cell_output"><img src="_images/abc.png" alt="0123456789abcdef0123"></div>', "without a caption"),
        ('<figure><img src="a.png" alt="a line"><figcaption>A caption.</figcaption></figure>', "without a number"),
        ("<p>the curve lies on average 0.00000000 away from its asymptote</p>", "run of zeros"),
        ('<table class="dataframe"><tr><td>-0.0000000027</td><td>0.0000000010</td></tr></table>', "run of zeros"),
        ('<table class="dataframe"><tr><th>|D|</th><td>5000.000</td><td>1.000</td></tr></table>', "integer"),
        ("<p>the build kept 5,000.000 questions</p>", "integer"),
        ("<p>a model with 56640.00000000002 parameters and a rate of 0.30000000000000004</p>", "run of zeros"),
        ('<table class="dataframe"><tr><td>3860.800</td></tr></table>', "four or more digits"),
        ('<div class="cell_output"><table class="dataframe"><tr><td>NaN</td></tr></table></div>', "NaN"),
    ],
)
def test_page_text_checks_catch_each_defect(snippet, found):
    problems = page_text_problems("x.html", f"<html><body><main>{snippet}</main></body></html>")
    assert problems and found in problems[0], problems


@pytest.mark.parametrize(
    "snippet",
    [
        '<div class="cell_input"><pre>x = float("nan")  # /work/main/cache</pre></div>',
        "<p>1/T and nats/token, results/smoke/runs/qa.log, https://example.org/a/b, n/a</p>",
        "<p>rows that end in NaN are refitted; pass <code>{'cache_dir': '/data/hf'}</code></p>",
        '<table class="dataframe"><tr><td>0.355</td><td>0.338</td></tr></table>',
        '<style>#T_1 td { padding: 0.3em }</style><table id="T_1"><tr><td>0.355</td><td>0.338</td></tr></table>',
        "<table><tr><td>head</td><td>0.338</td></tr></table>",
        "<p>Training took n/a (a Hub family) minutes.</p><p>Entail_R: n/a.</p>",
        '<table class="dataframe"><tr><td>\u2014</td><td>\u2014</td><td>\u2014</td></tr></table>',
        '<div class="cell_output"><p>n/a n/a</p></div>'.replace("n/a n/a", "n/a, n/a"),
        '<div class="cell_output"><div class="output stream highlight-myst-ansi"><pre>a printed example</pre></div></div>',
        "<p>APD's perplexity is 1.231, worse than CD's 1.230; p = 0.1 is not significant (29 questions).</p>",
        "<p>significant on: none (p < 0.05); a gain significant at p = 0.003</p>",
        "<p>gain = 0.02 against 1.96 x gain_se = 1.96 x 0.00535 = 0.01048</p>",
        '<figure><img src="a.png" alt="Loss falling with size"><figcaption>Fig. 3 Held-out loss.</figcaption></figure>',
        "<table><thead><tr><th>chapter</th><th>wall time</th></tr></thead>"
        "<tbody><tr><td>qa</td><td>3.2 s</td></tr><tr><td>apd</td><td>4.1 s</td></tr></tbody></table>",
        "<p>|x| is the absolute value, and a | b is an alternative.</p>",
        '<div class="cell_output"><pre>| a | b |\n| 1 | 2 |</pre></div>',
        '<div class="math notranslate nohighlight">\\[ a + b \\]</div>',
        "<p>to within 2.8 × 10⁻¹⁴, a gap of 0.0000012, rates 0.000 and 1.000, 5,000 questions, 3,861</p>",
        '<table class="dataframe"><tr><td>-3.000</td><td>0.000</td><td>1,039.1</td><td>2.5e-07</td></tr></table>',
        "<p>torch 2.13.0, wall time 1234.5 s, version 2024.10.1</p>",
        "<p>arXiv preprint arXiv:2309.14316, https://arxiv.org/abs/2309.14316</p>",
    ],
)
def test_page_text_checks_pass_clean_text(snippet):
    assert page_text_problems("x.html", f"<html><body><main>{snippet}</main></body></html>") == []
