"""The sentences a configuration fixes (algebra true for every weight): what the
stream after a sublayer is (resviz.encoder.words) and how a block's output norm
relates to its input's (resviz.shortcuts.words)."""

import pytest

from resviz.encoder.words import encoder_stream_rule
from resviz.shortcuts.words import stack_norm_rule


@pytest.mark.parametrize(
    ("residual", "norm", "position", "words"),
    [
        (True, "layer", "pre", "with residuals and pre-ln, each sublayer adds its output"),
        (True, "none", "post", "with residuals and no norm"),
        (True, "rms", "post", "passes through rmsnorm"),
        (False, "layer", "post", "output, passed through layernorm"),
        (False, "layer", "pre", "that sublayer's output."),
    ],
)
def test_encoder_stream_rule_follows_the_config(residual, norm, position, words):
    assert words in encoder_stream_rule(residual, norm, position).lower()


def test_stack_norm_rule_follows_the_shortcut():
    assert "f(x) alone" in stack_norm_rule("none")
    assert "can fall only where u points against x" in stack_norm_rule("add")
    assert "can fall only" in stack_norm_rule("scaled")
    assert "act(x + u)" in stack_norm_rule("add", "before_act")
    assert "input's norm is kept." in stack_norm_rule("concat")
    assert "projection P" in stack_norm_rule("concat", concat_project=True)
