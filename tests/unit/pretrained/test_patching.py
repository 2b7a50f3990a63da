"""Where the answer travels (resviz.pretrained.stream.patching) on tiny random models of every
family, saved and loaded by path: the issue's identities, and bad pairs refused."""

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
    return {f: P.load(save_tiny(f, root / f)) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_identities(models, family):
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


def test_the_sweep_and_its_progress(models):
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
     (CLEAN, CLEAN, "nothing for patching to recover"),
     ("", CLEAN, "Type some text")],
)  # fmt: skip
def test_bad_pairs_say_why(models, clean, corrupted, words):
    with pytest.raises(P.PretrainedError) as err:
        PT.setup(models["gpt2"], clean, corrupted)
    assert words in err.value.message
