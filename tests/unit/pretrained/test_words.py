"""The Pretrained models page's sentences that are not user text, on both outcomes:
each claim checked on a frame where the typed claim would be false."""

import pandas as pd
import pytest

pytest.importorskip("transformers")

from resviz.core import Result  # noqa: E402
from resviz.pretrained import recipes as R  # noqa: E402


def _deletion(changes):
    n = len(changes)
    return pd.DataFrame(
        {
            "block": range(1, n + 1),
            "top1_agreement": [0.5, 0.9, 0.7][:n],
            "loss_change": changes,
        }
    )


def test_deletion_words_name_the_largest_change_by_size():
    # Every deletion lowers the loss: the largest change is the most negative one
    # (block 1), not the one nearest zero (the old words named block 3 "the largest").
    words = R.deletion_words(_deletion([-2.0, -1.0, -0.01]), "top1_agreement")
    assert "changes most without block 1: -2 nats" in words
    words = R.deletion_words(_deletion([0.5, 3.0, -1.0]), "top1_agreement")
    assert "changes most without block 2: +3 nats" in words
    assert "Lowest top-1 agreement with the full model: 0.5 without block 1" in words
    assert "highest: 0.9 without block 2" in words


def test_deletion_words_leave_out_a_loss_a_headless_model_has_not():
    words = R.deletion_words(_deletion([float("nan")] * 3), "top1_agreement")
    assert "loss" not in words


def _collapse(with_s, without, n_tokens):
    rc = pd.DataFrame(
        {
            "variant": ["with shortcuts", "no shortcuts"],
            "block": [4, 4],
            "residual": [with_s, without],
            "cosine": [0.2, 0.99],
        }
    )
    return Result({"collapse": rc}, {"n_tokens": n_tokens})


def test_collapse_words():
    words = R.collapse_words(_collapse(0.9, 0.02, 12))
    assert words.startswith("After the last block: 0.9 with shortcuts")
    assert "0.02 without (cosine 0.99)" in words and "exactly 0" not in words
    assert "exactly 0: every token's state is the same vector" in R.collapse_words(
        _collapse(0.9, 0.0, 12)
    )
    one = R.collapse_words(_collapse(0.0, 0.0, 1))
    assert one.startswith("One token is its own mean") and "cosine" not in one


def test_deletion_chart_and_words_follow_what_the_card_judges():
    """The chart draws accuracy kept (the card's measure); top-1 agreement only where
    the full model has no right prediction (0/0), and the words say why."""
    frame = _deletion([0.5, 3.0, -1.0]).assign(
        accuracy=[0.1, 0.2, 0.15], accuracy_kept=[0.5, 1.0, 0.75], output_cos=0.9
    )
    assert R.deletion_measure(frame) == "accuracy_kept"
    words = R.deletion_words(frame, "accuracy_kept")
    assert words.startswith("Lowest accuracy kept (deleted over full): 0.5 without block 1;")
    assert "highest: 1 without block 2" in words and "no accuracy to keep" not in words
    none_right = frame.assign(accuracy=0.0, accuracy_kept=float("nan"))
    assert R.deletion_measure(none_right) == "top1_agreement"
    assert "predicts none of this text's tokens right" in R.deletion_words(
        none_right, "top1_agreement"
    )
    no_head = frame.assign(accuracy=float("nan"), accuracy_kept=float("nan"))
    assert R.deletion_measure(no_head) == "output_cos"
