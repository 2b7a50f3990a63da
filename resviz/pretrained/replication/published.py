"""The published figures the replication cards compare with, in one table, with sources.

Each entry quotes what the paper reports, on which model, and the number (or range)
a verdict compares the live measurement with. Where a paper states a finding without
a single number, ``low``/``high`` are None and the verdict tests the finding's shape
(where a minimum falls, which of two curves is lower). ``tolerance`` is ours, not the
paper's: how far a live figure may be from the published one and still "agree".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Published:
    key: str  # the recipe it goes with
    paper: str
    source: str  # where to read it
    model: str  # the model(s) the figure is from
    families: tuple[str, ...]  # resviz family names the paper measured
    params: float  # the paper's model size (parameters), for the size caveat
    finding: str  # what the paper reports, in our words
    low: float | None = None
    high: float | None = None
    tolerance: float | None = None


PUBLISHED: dict[str, Published] = {
    p.key: p
    for p in (
        Published(
            "stream_norms",
            "Heimersheim & Turner 2023, Residual stream norms grow exponentially over the "
            "forward pass",
            "AI Alignment Forum / LessWrong post, 2023",
            "GPT-2 XL (48 blocks, 1.5B parameters)",
            ("GPT-2",),
            1.5e9,
            "the residual stream's norm grows by about 1.045x per block",
            low=1.045,
            high=1.045,
            tolerance=0.02,  # +-2 percentage points of growth per block
        ),
        Published(
            "block_influence",
            "Men et al. 2024, ShortGPT: Layers in Large Language Models are More Redundant "
            "Than You Expect",
            "arXiv:2403.03853",
            "Llama 2 7B (32 blocks) and others",
            ("Llama-like decoder",),
            7e9,
            "Block Influence 1 - cos(x_{l-1}, x_l) is lowest in the deeper blocks, so those "
            "are the ones to remove first",
        ),
        Published(
            "layer_similarity",
            "Gromov et al. 2024, The Unreasonable Ineffectiveness of the Deeper Layers",
            "arXiv:2403.17887",
            "Llama 2 70B (80 blocks) and other open models",
            ("Llama-like decoder",),
            70e9,
            "the angular distance between x_l and x_{l+n} is smallest for the deep blocks "
            "(before the last), where up to about half the blocks can be pruned",
        ),
        Published(
            "layer_deletion",
            "Lad, Gurnee & Tegmark 2024, The Remarkable Robustness of LLMs: Stages of Inference?",
            "arXiv:2406.19384",
            "Pythia, GPT-2 and Phi 1.5 (124M to 6.9B parameters)",
            ("GPT-2", "GPT-NeoX (Pythia)"),
            1.4e9,
            "deleting one block other than the first or last keeps 72-95% of the original "
            "prediction accuracy; deleting the first is catastrophic",
            low=0.72,
            high=0.95,
        ),
        Published(
            "logit_lens",
            "nostalgebraist 2020, interpreting GPT: the logit lens",
            "LessWrong post, 2020",
            "GPT-2 (124M to 1.5B parameters)",
            ("GPT-2",),
            1.5e9,
            "the stream decoded with the model's own unembedding after each block moves toward "
            "the final prediction as depth grows",
        ),
        Published(
            "rank_collapse",
            "Dong, Cordonnier & Loukas 2021, Attention is Not All You Need: Pure Attention "
            "Loses Rank Doubly Exponentially with Depth",
            "arXiv:2103.03404",
            "pure self-attention networks, and BERT, ALBERT and XLNet paths",
            ("BERT-like encoder",),
            3.4e8,
            "without shortcuts the token matrix collapses toward rank one with depth; the "
            "shortcuts prevent it",
        ),
        Published(
            "attention_sinks",
            "Xiao et al. 2023, Efficient Streaming Language Models with Attention Sinks",
            "arXiv:2309.17453",
            "Llama 2 7B (32 blocks)",
            ("Llama-like decoder",),
            7e9,
            "beyond the bottom two blocks, most heads put most of their attention on the "
            "initial token",
            low=0.5,  # "most of their attention": a share above one half
            high=0.5,
        ),
        Published(
            "massive_activations",
            "Sun, Chen, Kolter & Liu 2024, Massive Activations in Large Language Models",
            "arXiv:2402.17762",
            "Llama 2 7B and 13B, Mixtral, and other LLMs",
            ("Llama-like decoder",),
            7e9,
            "very few activations are far larger than the rest (their example: 100,000 times "
            "larger), at the starting token and a few others",
            low=1e5,
            high=1e5,
        ),
    )
}
