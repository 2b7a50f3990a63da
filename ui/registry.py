"""The app's pages: one list that the entry point and the home page both read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageInfo:
    path: str  # file, relative to the repository root
    title: str
    icon: str
    url_path: str  # equals the file's stem, so any router gives the same deep link
    blurb: str


PAGES: tuple[PageInfo, ...] = (
    PageInfo(
        "pages/skip_connections.py",
        "Skip connections",
        ":material/alt_route:",
        "skip_connections",
        "Build deep stacks with and without `x + f(x)` and measure the signal at every layer.",
    ),
    PageInfo(
        "pages/gradient_flow.py",
        "Gradient flow",
        ":material/trending_down:",
        "gradient_flow",
        "Per-layer gradient norms at init: vanishing in plain stacks, flowing through shortcuts.",
    ),
    PageInfo(
        "pages/normalization.py",
        "Normalization",
        ":material/tune:",
        "normalization",
        "LayerNorm, RMSNorm, BatchNorm, and Pre-LN versus Post-LN around the residual sum.",
    ),
    PageInfo(
        "pages/sinusoidal_encoding.py",
        "Sinusoidal encoding",
        ":material/waves:",
        "sinusoidal_encoding",
        "Type a sentence and see its positional-encoding table value by value.",
    ),
    PageInfo(
        "pages/encoder_playground.py",
        "Encoder playground",
        ":material/hub:",
        "encoder_playground",
        "Configure a transformer encoder, run it on your text, look inside.",
    ),
)
