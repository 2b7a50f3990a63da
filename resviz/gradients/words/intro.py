"""What the gradient-flow page's sections open with: the derivation the Derivation
section checks, He et al.'s scaled shortcut, how the Training section's stacks train
and what the Shattered section's nets are. Each paragraph states what the recipes of
:mod:`resviz.gradients.recipes` do, so it sits beside them, not on the page."""

from __future__ import annotations

__all__ = ["IDENTITY_TERM", "SCALED_SHORTCUT", "TRAINING", "shattered_intro"]

IDENTITY_TERM = (
    "Expand the product and one term is the identity: it carries the gradient at the "
    "output to the input unchanged, whatever the branches do. The other terms add to it, "
    "and they can be far larger than it. A plain stack has only the product of the J_l, "
    "whose norm is at most the product of their norms: it shrinks when those are below 1."
)

SCALED_SHORTCUT = (
    "**Scaled shortcut: λ·x + f(x) carries λ^L.** He et al. 2016 (*Identity Mappings in "
    "Deep Residual Networks*, section 3) scale the shortcut instead of the branch: the "
    "identity term of the product becomes λ^L, which shrinks exponentially with L below "
    "λ = 1 and grows exponentially above it. With near-zero branches on, each block's last "
    "layer is multiplied by 0.01; whether that leaves the identity term nearly alone is "
    "measured below."
)

TRAINING = (
    "The stacks set above train with Adam from the same seed and init on the same "
    "batches (Gaussian inputs, targets from a fixed random tanh teacher). The heatmaps "
    "show every block's gradient norm at every step, filling in while the run goes on."
)


def shattered_intro(width: int) -> str:
    """Balduzzi et al.'s experiment as the Shattered section runs it, on nets of
    ``width`` units, and why it needs batch normalization here."""
    return (
        "Balduzzi et al. 2017 (*The Shattered Gradients Problem*): feed a line of 256 "
        "inputs x in [-2, 2] through a deep ReLU network with one output and look at df/dx "
        "along the line. They found that in a deep plain network the gradient becomes like "
        "white noise, uncorrelated between neighbouring inputs, so it says little about a "
        "step in x, while with shortcuts it stays far smoother; the table and chart below "
        f"measure it on these nets (width {width}). **Batch normalization is needed to see "
        "it here:** the nets start with zero biases, so without it every unit's input is a "
        "multiple of x, the net is linear on each side of x = 0 and df/dx takes just two "
        "values. Batch normalization subtracts each unit's mean over the line, which moves "
        "the kinks away from 0."
    )
