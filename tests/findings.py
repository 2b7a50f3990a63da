"""What each section's default view shows (issue 37, "defaults that teach"): the
section's finding, stated as a direction, where the section has one to show.

:data:`FINDINGS` holds one entry per section (its id as in ``tests/app/conftest.py``'s
``SECTION_IDS``):

* :class:`Shows`: the default view's text (every element's, wherever the page draws
  it) states the finding: each pattern is found in it. Checked in
  ``tests/app/test_sections.py::test_section_contract``, which draws every default
  view anyway.
* :class:`Trained`: the finding appears once a background run has finished, which
  the default view does not start; ``test`` (``path::name``) runs the section at its
  default setting and checks the finding. ``test=None``: no test runs the default
  setting yet (``why``).
* :class:`NoFinding`: the section shows a formula, a structure or a timing, with no
  direction to state (``why``).

The patterns name the direction and the seeds' agreement, not the numbers: a
number that moves with a machine's kernels stays out of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Shows:
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Trained:
    test: str | None
    why: str = ""


@dataclass(frozen=True)
class NoFinding:
    why: str


Finding = Shows | Trained | NoFinding

ALL3 = r"In 3 of 3 seeds "
N = r"[-\d.e]+"  # a number as the pages write it

FINDINGS: dict[str, Finding] = {
    # ------------------------------------------------------------ skip connections
    "skip_connections-Stack": NoFinding("the stack built: which blocks have a shortcut"),
    "skip_connections-Signal": Shows(
        (
            ALL3 + r"the mean norm without a shortcut falls from block 1",
            ALL3 + r"the mean norm with the shortcut \(add\) rises from block 1",
        )
    ),
    "skip_connections-Paths": NoFinding(
        "a count: 2^n paths by how many branches they pass, exact and seedless"
    ),
    "skip_connections-Degradation": Trained(
        "tests/unit/test_default_findings.py::"
        "test_degradation_default_shows_the_deep_plain_stack_ending_higher"
    ),
    "skip_connections-Lesion": Trained(
        "tests/unit/test_default_findings.py::"
        "test_lesion_default_shows_the_plain_stack_suffering_and_the_residual_one_coping"
    ),
    # --------------------------------------------------------------- gradient flow
    "gradient_flow-Per layer": Shows(
        (ALL3 + r"the residual stack passes the larger gradient back",)
    ),
    "gradient_flow-Derivation": Shows((ALL3 + r"the measurement at x_0 agrees with λ\^L",)),
    "gradient_flow-Depth sweep": Trained(
        "tests/unit/test_default_findings.py::"
        "test_depth_sweep_default_shows_the_residual_stack_keeping_the_gradient"
    ),
    "gradient_flow-Training": Trained(
        "tests/app/test_gradient_flow_page.py::test_train_button_runs_and_shows_the_result"
    ),
    "gradient_flow-Shattered": Shows((r"residual net's df/dx is the smoother one",)),
    # --------------------------------------------------------------- normalization
    "normalization-Four views": Shows((ALL3 + r"the halves of sample 0 come out alike",)),
    "normalization-Textbook LayerNorm": Shows(
        (ALL3 + r"the gap is more than 10 times the formulas' misfit",)
    ),
    "normalization-Invariances": Shows((ALL3 + r"that holds for LayerNorm: every row",)),
    "normalization-Batch dependence": Shows(
        (
            r"In eval mode, with the running statistics of the original batch: other "
            r"samples redrawn: 0; other samples x10: 0",
        )
    ),
    "normalization-Pre-LN vs Post-LN": Shows(
        (
            ALL3 + r"Pre-LN's \|\|x_l\|\|²/d grows by a factor of",
            ALL3 + r"Pre-LN's is the smaller at L = 8",
        )
    ),
    "normalization-Warm-up": Trained(
        "tests/unit/test_default_findings.py::"
        "test_warmup_default_shows_post_ln_needing_it_and_pre_ln_not"
    ),
    "normalization-Stability": Trained(
        "tests/app/test_normalization_page.py::test_stability_training_runs_and_finishes"
    ),
    "normalization-Cost": NoFinding(
        "a timing of this machine: which norm is faster depends on its kernels"
    ),
    # ---------------------------------------------------------- sinusoidal encoding
    "sinusoidal_encoding-Table": NoFinding("the formula's values for a sentence, to read"),
    "sinusoidal_encoding-Matrix": Shows((r"The waves slow down from left to right",)),
    "sinusoidal_encoding-Waves": Shows((r"a geometric progression from 2π = 6\.28 up to",)),
    "sinusoidal_encoding-Relative position": Shows(
        (r"The dot product depends only on the offset", r"It is not monotone in distance")
    ),
    "sinusoidal_encoding-Alternatives": Shows(
        (r"the integer index grows as k·sqrt\(d\), without bound",)
    ),
    "sinusoidal_encoding-Embeddings": Shows(
        (rf"the sum's norm differs from sqrt\(\|\|e\|\|² \+ \|\|p\|\|²\) by {N}(–{N})?%",)
    ),
    # ----------------------------------------------------------- encoder playground
    "encoder_playground-Model": NoFinding("counts of the model chosen"),
    "encoder_playground-Attention": Shows(
        (rf"uniform attention \(1/\d+\) would give each {N}, and the largest is {N} times",)
    ),
    "encoder_playground-Residual stream": Shows(
        (ALL3 + r"every sublayer's output is smaller than the stream it reads",)
    ),
    "encoder_playground-Rank collapse": Shows(
        (ALL3 + r'"your model" ends further from rank one after block \d+ than "your model, no',)
    ),
    "encoder_playground-Training": Trained(
        "tests/unit/test_default_findings.py::"
        "test_encoder_training_default_shows_your_model_ending_lower"
    ),
    # -------------------------------------------------------------------- pretrained
    # One checkpoint's fixed weights: no seeds, so no agreement to state.
    "pretrained-Stream norms": Shows(
        (rf"The median token norm goes from {N} \(embeddings\) to {N} after block \d+",)
    ),
    "pretrained-Block influence": Shows((r"Block \d+ changes the direction of the stream most",)),
    "pretrained-Similarity": Shows((rf"The embeddings and the last block's output are {N} apart",)),
    "pretrained-Layer deletion": Trained(
        "tests/app/test_pretrained_page.py::test_deletion_runs_with_progress_and_a_card"
    ),
    "pretrained-Logit lens": Shows((r"it is the top token from block \d+ on",)),
    "pretrained-Rank collapse": Shows(
        (
            rf"After the last block: {N} with shortcuts \(mean cosine between tokens {N}\), {N} "
            r"without",
        )
    ),  # fmt: skip
    "pretrained-Attention sinks": Shows((r"\d+ of \d+ heads put more than half their attention",)),
    "pretrained-Who writes what": Shows((r"The largest single write: block \d+",)),
    "pretrained-Where the answer travels": Trained(
        "tests/app/test_pretrained_page.py::"
        "test_patching_runs_with_progress_and_says_what_it_recovers"
    ),
    "pretrained-Delete, then heal": Trained(
        "tests/app/test_pretrained_page.py::test_heal_runs_with_progress_and_draws_its_finding"
    ),
    "pretrained-Depth ladder": Trained(
        "tests/app/test_pretrained_page.py::test_ladder_runs_with_progress_and_draws_its_finding"
    ),
    # ---------------------------------------------------------------------- workshop
    "workshop-None": NoFinding("the presenter's page: a lesson's steps, no measurement"),
}


def section_id(page: str, section: str | None) -> str:
    """The id ``tests/app/conftest.py`` gives a (page, section) case."""
    return f"{page.removeprefix('app_pages/').removesuffix('.py')}-{section}"


def missing(section: str, text: str, started: bool) -> list[str]:
    """What the default view of ``section`` (an id) fails to show: the patterns of a
    :class:`Shows` not found in ``text``; for a :class:`Trained`, that no run can be
    started (``started``: the view has a start button)."""
    f = FINDINGS[section]
    if isinstance(f, Shows):
        return [p for p in f.patterns if not re.search(p, text)]
    if isinstance(f, Trained) and not started:
        return ["a start button: the finding is said to come with a background run"]
    return []
