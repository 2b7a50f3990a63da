"""Real pretrained transformers, measured: load a Hugging Face checkpoint and run the
same measurements the toy pages teach (``docs/pretrained.md``).

``transformers`` and ``safetensors`` are an optional extra (``pip install
'.[pretrained]'`` in a checkout); this package imports them only inside :func:`load`, so
``import resviz`` works without them::

    import resviz as rv
    m = rv.pretrained.load(rv.pretrained.demo_model_path())   # all-MiniLM-L6-v2
    tr = rv.pretrained.trace(m, "Residual connections add each block's update.")
    rv.pretrained.block_influence(tr)

The page's settings (groups the recipes take, :mod:`resviz.settings`):
:class:`Checkpoint`, :class:`Reading`, :class:`Target` and :class:`Healing`::

    rv.recipes.pretrained.heal(rv.pretrained.Healing(block=2, steps=120), seed=1)
"""

from resviz.pretrained.cache import Checkpoint, Reading, Target
from resviz.pretrained.checks import (
    DEFAULT_MAX_BYTES,
    OUTSIDE_ROOTS,
    PretrainedError,
    check_within_roots,
    max_bytes_default,
    model_roots,
    require_extra,
)
from resviz.pretrained.families import FAMILIES, Family
from resviz.pretrained.heal_sections import Healing
from resviz.pretrained.loading import (
    LADDER_HELD_OUT_LOSS,
    SONNETS_HELD_OUT_LOSS,
    Pretrained,
    demo_model_path,
    ladder_paths,
    load,
    random_twin,
    sonnets_split,
    tiny_gpt2_path,
)
from resviz.pretrained.measurements import (
    attention_sinks,
    block_influence,
    collapse_measures,
    layer_deletion,
    layer_deletion_correct,
    layer_similarity,
    logit_lens,
    logit_lens_tops,
    massive_activations,
    norm_growth,
    rank_collapse,
    stream_norms,
    text_loss,
    without_shortcuts,
)
from resviz.pretrained.observe import MAX_TOKENS, Trace, forward, skipping, tokenize, trace
from resviz.pretrained.replication import cards, evidence, published, rules
from resviz.pretrained.stream.attribution import Attribution, logit_attribution

__all__ = [
    "Attribution",
    "Checkpoint",
    "DEFAULT_MAX_BYTES",
    "FAMILIES",
    "MAX_TOKENS",
    "Family",
    "Healing",
    "LADDER_HELD_OUT_LOSS",
    "Pretrained",
    "PretrainedError",
    "Reading",
    "Target",
    "Trace",
    "attention_sinks",
    "block_influence",
    "cards",
    "collapse_measures",
    "demo_model_path",
    "evidence",
    "forward",
    "ladder_paths",
    "layer_deletion",
    "layer_deletion_correct",
    "layer_similarity",
    "load",
    "logit_attribution",
    "logit_lens",
    "logit_lens_tops",
    "massive_activations",
    "max_bytes_default",
    "model_roots",
    "check_within_roots",
    "OUTSIDE_ROOTS",
    "norm_growth",
    "published",
    "random_twin",
    "rank_collapse",
    "require_extra",
    "rules",
    "SONNETS_HELD_OUT_LOSS",
    "skipping",
    "sonnets_split",
    "stream_norms",
    "text_loss",
    "tiny_gpt2_path",
    "tokenize",
    "trace",
    "without_shortcuts",
]
