"""Numbers into words, shared by every topic: the number format (``numbers``), sentence
fragments (``sentences``), agreement over seeds (``seeds``) and a headline's parts
(``headline``). Each topic's own sentences are its ``words`` module
(``resviz/<topic>/words.py``)."""

from resviz.words.numbers import (
    FLOAT32_RESOLUTION,
    FLOAT64_RESOLUTION,
    agreement_words,
    crossing_words,
    format_log10,
    format_number,
    log_trend_words,
    lower_words,
    ratio_words,
    resolution_words,
    trend_words,
)
from resviz.words.seeds import (
    Agreement,
    agreement,
    band_words,
    log_span,
    seeds_label,
    seeds_sentence,
    span,
)
from resviz.words.sentences import (
    change,
    compare,
    crossing,
    order,
    share_of,
    spread_vs,
    trend,
    value_range,
)

__all__ = [
    "FLOAT32_RESOLUTION",
    "FLOAT64_RESOLUTION",
    "agreement_words",
    "crossing_words",
    "format_log10",
    "format_number",
    "log_trend_words",
    "lower_words",
    "ratio_words",
    "resolution_words",
    "trend_words",
    "Agreement",
    "agreement",
    "band_words",
    "log_span",
    "seeds_label",
    "seeds_sentence",
    "span",
    "change",
    "compare",
    "crossing",
    "order",
    "share_of",
    "spread_vs",
    "trend",
    "value_range",
]
