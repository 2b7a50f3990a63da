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
        "app_pages/skip_connections.py",
        "Skip connections",
        ":material/alt_route:",
        "skip_connections",
        "Build deep stacks with and without `x + f(x)` and measure the signal at every layer.",
    ),
    PageInfo(
        "app_pages/gradient_flow.py",
        "Gradient flow",
        ":material/trending_down:",
        "gradient_flow",
        "Per-layer gradient norms of stacks with and without shortcuts, at init and in "
        "training, and the derivation through I + J checked on measured Jacobians.",
    ),
    PageInfo(
        "app_pages/normalization.py",
        "Normalization",
        ":material/tune:",
        "normalization",
        "LayerNorm, RMSNorm, BatchNorm, and Pre-LN versus Post-LN around the residual sum.",
    ),
    PageInfo(
        "app_pages/sinusoidal_encoding.py",
        "Sinusoidal encoding",
        ":material/waves:",
        "sinusoidal_encoding",
        "Type a sentence and see its positional-encoding table value by value.",
    ),
    PageInfo(
        "app_pages/encoder_playground.py",
        "Encoder playground",
        ":material/hub:",
        "encoder_playground",
        "Configure a transformer encoder, run it on your text, look inside.",
    ),
    PageInfo(
        "app_pages/pretrained.py",
        "Pretrained models",
        ":material/model_training:",
        "pretrained",
        "Real trained transformers (GPT-2, BERT, Pythia, Llama families) measured on your text, "
        "beside the published figures.",
    ),
    PageInfo(
        "app_pages/workshop.py",
        "Workshop",
        ":material/co_present:",
        "workshop",
        "Step through a lesson on a projector; participants follow each step by link or QR code.",
    ),
)


@dataclass(frozen=True)
class NotebookExample:
    """A library call that returns the numbers behind one chart of a page at its
    default settings. The home page prints it; a test runs it and compares it with
    the frame that page draws (tests/app/test_seed.py), so the hint cannot go stale.
    """

    function: str  # a function of the resviz package, by its dotted path under it
    config: tuple[tuple[str, object], ...]  # StackConfig keyword arguments
    page: str  # the page's file
    chart: str  # the CSV name of the chart's data on that page
    variant: str  # the chart's series these numbers are
    what: str  # the chart, in words

    @property
    def code(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config)
        return f"import resviz as rv; rv.{self.function}(rv.StackConfig({args}))"


NOTEBOOK_EXAMPLE = NotebookExample(
    function="gradients.layer_gradients",
    config=(("residual", "none"),),
    page="app_pages/gradient_flow.py",
    chart="activation_gradients",
    variant="plain: f(x)",
    what="seed 0's `||dL/dx_l||` per layer for the plain stack (column `act_grad`): the rows "
    "of seed 0 in the CSV of Gradient flow's Per layer section, whose chart draws the median "
    "of the sidebar's seeds",
)
