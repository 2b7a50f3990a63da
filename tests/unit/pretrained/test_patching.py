"""Where the answer travels (resviz.pretrained.stream.patching) on tiny random models of every
family, saved and loaded by path: the issue's identities, and bad pairs refused (a pair
whose answer does not flip has nothing for patching to move). A random model's two
prompts mostly predict the same token: the identities read two tokens whose order the
changed word flips (:func:`flipping`)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from resviz import pretrained as P  # noqa: E402
from resviz.pretrained.stream import patching as PT  # noqa: E402
from tests.pretrained_tiny import save_tiny  # noqa: E402

FAMILIES = ["bert", "roberta", "gpt2", "gpt_neox", "llama", "mistral", "qwen2"]
CLEAN = "the quick brown fox jumps over the lazy dog"
CORRUPTED = "the quick brown dog jumps over the lazy dog"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("patching")
    # initializer_range 1: weights large enough that one changed word moves the logits
    # by more than MIN_GAP (at the default 0.02 a random tiny model hardly reads its input).
    return {f: P.load(save_tiny(f, root / f, initializer_range=1.0)) for f in FAMILIES}


@pytest.fixture
def any_pair(monkeypatch):
    """The identities hold for any pair: the refusal (tested apart, below) is lifted."""
    monkeypatch.setattr(PT, "refusal", lambda *a, **k: None)


@pytest.mark.parametrize("family", FAMILIES)
def test_identities(models, family, any_pair):
    p = models[family]
    s = PT.setup(p, CLEAN, CORRUPTED)
    every = range(len(s.ids_clean))
    # x_0 or x_L taken from the clean run at every position: the clean run itself.
    assert PT.recovered(s, PT.patched_diff(p, s, 0, every)) == pytest.approx(1, abs=1e-5)
    assert PT.recovered(s, PT.patched_diff(p, s, p.n_layers, every)) == pytest.approx(1, abs=1e-5)
    # Where both prompts hold the same token, x_0 is the same: nothing recovered.
    same = [t for t in every if s.ids_clean[t] == s.ids_corrupted[t]]
    assert same
    for t in same:
        assert PT.recovered(s, PT.patched_diff(p, s, 0, [t])) == pytest.approx(0, abs=1e-5)


def test_the_sweep_and_its_progress(models, any_pair):
    p, seen = models["gpt2"], []
    r = PT.patching(p, CLEAN, CORRUPTED, progress=lambda d, n: seen.append((d, n)))
    T = len(P.tokenize(p, CLEAN)[0])
    assert len(r.frame) == (p.n_layers + 1) * T and not r.stopped
    assert seen[-1] == (p.n_layers + 1, p.n_layers + 1)
    x0 = r.frame[r.frame["block"] == 0].set_index("position")["recovered"]
    assert x0.drop(r.differs).abs().max() < 1e-5
    # The read position's x_L is everything the decoder's prediction there reads.
    last = r.frame[(r.frame["block"] == p.n_layers) & (r.frame["position"] == r.read_position)]
    assert float(last["recovered"].iloc[0]) == pytest.approx(1, abs=1e-5)
    stopped = PT.patching(p, CLEAN, CORRUPTED, should_stop=lambda: True)
    assert stopped.stopped and stopped.frame.empty


@pytest.mark.parametrize(
    ("clean", "corrupted", "words"),
    [(CLEAN, CLEAN + " and more", "same number"),
     (CLEAN, CLEAN, "Both prompts predict the same token"),
     ("", CLEAN, "Type some text")],
)  # fmt: skip
def test_bad_pairs_say_why(models, clean, corrupted, words):
    with pytest.raises(P.PretrainedError) as err:
        PT.setup(models["gpt2"], clean, corrupted)
    assert words in err.value.message


def test_a_pair_read_against_the_clean_prompts_order_is_refused_with_the_numbers(models):
    """Two tokens read explicitly, the clean run's runner-up first: the clean prompt does
    not prefer the first, so no answer flips; the message says both logit differences."""
    from resviz.pretrained.observe import forward, token_texts, tokenize

    p = models["gpt2"]
    top = forward(p, tokenize(p, CLEAN)[0]).logits[-1].argsort(descending=True)
    first, second = token_texts(p, top[:2])
    with pytest.raises(P.PretrainedError) as err:
        PT.setup(p, CLEAN, CORRUPTED, token=second, versus=first)
    assert err.value.kind == "answer"
    assert "no answer for patching to move" in err.value.message
    assert "on the clean prompt" in err.value.message or "same token" in err.value.message


@pytest.mark.parametrize(
    ("clean", "corrupted", "same_top", "words"),
    [(0.004, -0.004, False, "under 0.01"),
     (0.5, 0.2, True, "Both prompts predict the same token"),
     (0.5, 0.2, False, "must prefer"),
     (-0.3, 0.4, False, "must prefer"),
     (0.0, 0.0, True, "Both prompts predict the same token"),
     (float("nan"), -1.0, False, "not a finite number"),
     (float("inf"), -1.0, False, "not a finite number"),
     (0.3, -0.3, True, None),
     (0.006, -0.005, False, None)],
)  # fmt: skip
def test_the_refusal_rule(models, clean, corrupted, same_top, words):
    said = PT.refusal(models["gpt2"], clean, corrupted, 5, 7, same_top)
    assert said is None if words is None else words in said


def test_the_sonnets_pairs_flip_on_the_trained_model_and_not_on_its_twins():
    """The page's three pairs ("you" against "thou") flip the Sonnets GPT-2's answer,
    each logit difference at least 0.5 from zero; its random twins (seeds 0 to 2)
    predict one token on both prompts of every pair: refused, no story told."""
    from resviz.pretrained.cache import PAIRS

    trained = P.load(P.tiny_gpt2_path())
    for clean, corrupted in PAIRS:
        s = PT.setup(trained, clean, corrupted)
        assert s.clean_diff > 0.5 and s.corrupted_diff < -0.5, (clean, s.clean_diff)
        for seed in range(3):
            with pytest.raises(P.PretrainedError) as err:
                PT.setup(P.random_twin(trained, seed), clean, corrupted)
            assert "Both prompts predict the same token" in err.value.message
