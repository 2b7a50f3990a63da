"""The Pretrained models page's lesson measure answers from the section's recipe, and
its answer flips at a setting the page allows (a one-token text is its own mean)."""

import pytest

pytest.importorskip("transformers")

from ui.lesson_measures import MEASURES  # noqa: E402

from resviz import pretrained as P  # noqa: E402
from ui.specs import pretrained as S  # noqa: E402


@pytest.mark.parametrize(("text", "answer"), [(S.DEFAULT_TEXT, "collapses too"), ("O", "does not")])
def test_rank_collapse_measure(text, answer):
    got = MEASURES["pretrained_rank_collapse"]({"text": text}, 0)
    assert got.answer == answer
    m = P.load(P.tiny_gpt2_path())
    rc = P.rank_collapse(P.trace(m, text))
    last = rc[rc["block"] == m.n_layers].set_index("variant")["residual"]
    assert (last["no shortcuts"] < 0.1 * last["with shortcuts"]) == (answer == "collapses too")
    assert P.cards.format_number(float(last["no shortcuts"])) in got.sentence
