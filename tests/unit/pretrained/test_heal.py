"""Delete, then heal (resviz.pretrained.stream.heal) on the shipped Sonnets GPT-2:
deleting by the recipe equals the deletion section's hook, healing lowers the held-out
loss, the model from scratch is the deleted one's size, the shared model is untouched,
encoders are refused; and the section's headline on NaN, Inf, ties and seeds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from resviz import pretrained as P  # noqa: E402
from resviz.pretrained import headline as H  # noqa: E402
from resviz.pretrained.stream import heal as HL  # noqa: E402
from tests.margins import assert_clear  # noqa: E402
from tests.pretrained_tiny import save_tiny  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    if P.tiny_gpt2_path() is None:
        pytest.skip("the Sonnets GPT-2's weights are absent")
    return P.load(P.tiny_gpt2_path())


def _logits(p: P.Pretrained, ids: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return p.model(input_ids=ids[None], use_cache=False).logits[0]


def test_deleting_by_the_recipe_equals_the_hook_and_the_layer_list(tiny):
    ids = torch.tensor(tiny.tokenizer("Shall I compare thee to a summer's day?")["input_ids"])
    for first, n in [(1, 1), (2, 1), (4, 1), (2, 2)]:
        cut = HL.deleted_copy(tiny, HL.Deletion(first, n))
        assert cut.n_layers == tiny.n_layers - n
        with P.observe.skipping(tiny, first):
            if n == 2:
                with P.observe.skipping(tiny, first + 1):
                    hooked = _logits(tiny, ids)
            else:
                hooked = _logits(tiny, ids)
        torch.testing.assert_close(_logits(cut, ids), hooked, atol=1e-5, rtol=0)
    # Only the attention (or MLP) deleted: the block adds nothing through it.
    attn = HL.deleted_copy(tiny, HL.Deletion(2, 1, "attention"))
    assert attn.n_layers == tiny.n_layers
    assert not torch.allclose(_logits(attn, ids), _logits(tiny, ids))


@pytest.mark.slow
def test_healing_lowers_the_held_out_loss_and_leaves_the_shared_model(tiny):
    before = {k: v.clone() for k, v in tiny.model.state_dict().items()}
    train, held_out = P.sonnets_split()
    seen = []
    h = HL.heal(
        tiny, train, held_out, steps=10, every=5, seed=0,
        progress=lambda f, step, total: seen.append((step, total)),
    )  # fmt: skip
    last = h.frame[h.frame["step"] == 10].set_index("variant")["held_out_loss"]
    assert list(h.frame.columns) == HL.COLUMNS and set(h.frame["variant"]) == set(HL.VARIANTS)
    assert seen == [(0, 10), (5, 10), (10, 10)] and not h.stopped
    assert last["full"] == pytest.approx(P.loading.SONNETS_HELD_OUT_LOSS, abs=1e-3)
    # Measured 7.74 deleted -> 6.24 healed at seed 0: 1.5 nats; 0.5 asked.
    assert_clear(last["healing"], last["deleted"], side="below", margin=0.5, what="healed loss")
    for k, v in tiny.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert all(not t.requires_grad for t in tiny.model.parameters())


def test_stop_ends_the_run_at_an_evaluation(tiny):
    train, held_out = P.sonnets_split()
    h = HL.heal(tiny, train, held_out[:400], steps=4, every=2, should_stop=lambda: True)
    assert h.stopped and h.frame["step"].max() == 2


@pytest.mark.parametrize("d", [HL.Deletion(1), HL.Deletion(2, 2), HL.Deletion(3, 1, "mlp")])
def test_from_scratch_is_the_deleted_models_size(tiny, d):
    cut, fresh = HL.deleted_copy(tiny, d), HL.scratch_model(tiny, d, seed=3)
    assert fresh.n_params == cut.n_params and fresh.n_layers == cut.n_layers
    assert (
        HL.scratch_model(tiny, d, seed=3).model.state_dict().keys() == cut.model.state_dict().keys()
    )


def test_encoders_and_bad_ranges_are_refused(tiny, tmp_path):
    bert = P.load(save_tiny("bert", tmp_path / "bert"))
    with pytest.raises(P.PretrainedError, match="needs a decoder; .* is an encoder"):
        HL.heal(bert, "a b c", "a b c")
    for bad in (HL.Deletion(4, 2), HL.Deletion(0), HL.Deletion(1, 4)):
        with pytest.raises(P.PretrainedError):
            bad.check(tiny)


def _frame(rows: dict[int, tuple[float, float, float, float]], step: int = 60) -> pd.DataFrame:
    out = []
    for seed, losses in rows.items():
        for v, x in zip(HL.VARIANTS, losses, strict=True):
            out.append({"seed": seed, "step": step, "variant": v, "held_out_loss": x})
    return pd.DataFrame(out)


def test_heal_headline_one_seed_seeds_ties_nan_and_inf():
    one = H.heal(_frame({0: (4.45, 7.74, 5.29, 5.87)}), "block 1")
    assert one.line == (
        "In the one seed run (seed 0) 60 steps of healing bring the held-out loss from 7.74 "
        "(block 1 deleted) to 5.29, against 4.45 for the full model and 5.87 for a "
        "same-size model trained from scratch."
    )
    assert [f.value for f in one.figures] == ["7.74", "5.29", "5.87", "4.45"]
    agreed = H.heal(_frame({0: (4.4, 7.7, 5.3, 5.9), 1: (4.4, 7.7, 5.2, 5.8)}), "block 1")
    assert agreed.line == (
        "In 2 of 2 seeds healing lowers the held-out loss below the deleted model's, and "
        "below the from-scratch model's."
    )
    assert "mean over 2 seeds" in agreed.figures[0].label
    tie = H.heal(_frame({0: (4.4, 7.7, 5.3, 5.9), 1: (4.4, 4.5, 4.5, 5.8)}), "block 2")
    assert tie.line.startswith("The seeds split evenly on what healing does:")
    nan = H.heal(_frame({0: (4.4, 7.7, math.nan, 5.9)}), "block 1")
    assert nan.line.endswith(
        "to NaN, against 4.4 for the full model and 5.9 for a same-size "
        "model trained from scratch: not all of them are finite numbers."
    )
    inf = H.heal(_frame({0: (4.4, 7.7, 5.0, math.inf), 1: (4.4, 7.7, 5.0, math.inf)}), "block 1")
    assert inf.line == "In 2 of 2 seeds healing lowers the held-out loss below the deleted model's."
    worse = H.heal(_frame({0: (4.4, 4.5, 4.8, 4.9)}), "block 2")
    assert "to 4.8" in worse.line
