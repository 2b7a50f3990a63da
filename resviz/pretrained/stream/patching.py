"""Where the answer travels: activation patching of the residual stream.

Two prompts of the same length in tokens, a clean one and a corrupted one (one word
changed). The model runs on the corrupted prompt with the stream ``x_l`` at one
position replaced by its value on the clean prompt (a hook on block ``l``'s output;
``x_0`` on block 1's input). The logit difference ``LD = logit(token) -
logit(versus)`` at the read position then moves from the corrupted run's value
towards the clean run's; the share recovered is
``(LD_patched - LD_corrupted) / (LD_clean - LD_corrupted)``. Every block's output at
every position: ``(L + 1) x T`` passes.

Checks that hold on any model: patching ``x_0`` at every position at once, or ``x_L``
at every position at once, recovers exactly 100% (the corrupted run becomes the clean
one); patching ``x_0`` where the two prompts hold the same token recovers 0%.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from resviz.pretrained.families import Args, Kwargs, block_input, first, replace_first
from resviz.pretrained.loading import Pretrained, PretrainedError
from resviz.pretrained.observe import forward, token_texts, tokenize
from resviz.pretrained.stream.attribution import check_position, token_id

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]
COLUMNS = ["block", "position", "clean_token", "corrupted_token", "logit_diff", "recovered"]


@contextmanager
def patched(
    p: Pretrained, block: int, positions: Sequence[int], source: torch.Tensor
) -> Iterator[None]:
    """While inside, ``x_block`` (0 = the embeddings, block 1's input) at ``positions``
    is replaced by ``source`` (T, C) there. Holds the model's lock."""
    if not 0 <= block <= p.n_layers:
        raise ValueError(f"block must be 0 to {p.n_layers}")
    pos = list(positions)

    def swap(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[0, pos] = source[pos].to(x.dtype)
        return x

    def pre(_m: torch.nn.Module, args: Args, kwargs: Kwargs) -> tuple[Args, Kwargs]:
        x = swap(block_input(args, kwargs))
        if args:
            return (x, *args[1:]), kwargs
        return args, dict(kwargs, hidden_states=x)

    def post(_m: torch.nn.Module, _a: Args, _k: Kwargs, out: object) -> object:
        return replace_first(out, swap(first(out)))

    with p.lock:
        if block == 0:
            h = p.blocks[0].register_forward_pre_hook(pre, with_kwargs=True)
        else:
            h = p.blocks[block - 1].register_forward_hook(post, with_kwargs=True)
        try:
            yield
        finally:
            h.remove()


@dataclass(eq=False)
class Patching:
    """:func:`patching`'s answer."""

    frame: pd.DataFrame
    token: str
    versus: str
    read_position: int
    clean_diff: float  # LD on the clean prompt
    corrupted_diff: float  # LD on the corrupted prompt
    differs: list[int]  # positions whose tokens differ
    stopped: bool


@dataclass(eq=False)
class Setup:
    """The two prompts' tokens and runs, and what is read: :func:`setup`."""

    ids_clean: torch.Tensor
    ids_corrupted: torch.Tensor
    clean_stream: torch.Tensor  # (L + 1, T, C)
    k: int
    k2: int
    t: int
    clean_diff: float
    corrupted_diff: float


def _diff(logits: torch.Tensor, t: int, k: int, k2: int) -> float:
    row = logits[t].double()
    return float(row[k] - row[k2])


def setup(
    p: Pretrained,
    clean: str,
    corrupted: str,
    position: int = -1,
    token: str | None = None,
    versus: str | None = None,
) -> Setup:
    """Tokenize and run both prompts; choose the tokens read: ``token`` (default the
    clean run's top prediction at ``position``) against ``versus`` (default the
    corrupted run's top prediction there, or the clean run's runner-up where the two
    agree). Refuses prompts of different lengths, and pairs whose answer does not flip
    (:func:`refusal`)."""
    if p.unembedding is None:
        raise PretrainedError(
            f"Patching reads a logit difference: it needs a model with an output head; "
            f"{p.architecture} has none.",
            "architecture",
        )
    ids_c, _ = tokenize(p, clean)
    ids_x, _ = tokenize(p, corrupted)
    if len(ids_c) != len(ids_x):
        raise PretrainedError(
            f"The clean prompt makes {len(ids_c)} tokens and the corrupted one "
            f"{len(ids_x)}: patching swaps position for position, so they must make the "
            "same number. Change one word for another of as many tokens.",
            "text",
        )
    t = check_position(position, len(ids_c))
    run_c, run_x = forward(p, ids_c), forward(p, ids_x)
    assert run_c.logits is not None and run_x.logits is not None
    lc, lx = run_c.logits[t], run_x.logits[t]
    k = int(lc.argmax()) if not token else token_id(p, token)
    if versus:
        k2 = token_id(p, versus, "The second token")
    else:
        k2 = int(lx.argmax())
        if k2 == k:
            order = lc.argsort(descending=True)
            k2 = int(order[1]) if int(order[0]) == k else int(order[0])
    if k == k2:
        raise PretrainedError("The two tokens read are the same token: pick two.", "text")
    d_c, d_x = _diff(run_c.logits, t, k, k2), _diff(run_x.logits, t, k, k2)
    refused = refusal(p, d_c, d_x, k, k2, same_top=int(lc.argmax()) == int(lx.argmax()))
    if refused:  # kind "answer": the prompts are fine, the model gives nothing to move
        raise PretrainedError(refused, "answer")
    return Setup(ids_c, ids_x, run_c.stream, k, k2, t, d_c, d_x)


# The smallest gap (clean LD - corrupted LD, in logits) patching is measured against: a
# logit computed in float32 carries an error of about 1e-5 here, which over a gap of 0.01
# would move a share recovered by 1e-3, the third decimal shown.
MIN_GAP = 0.01


def refusal(
    p: Pretrained, clean_diff: float, corrupted_diff: float, k: int, k2: int, same_top: bool
) -> str | None:
    """Why this pair has no answer for patching to move (None: it has one). The answer
    moves when the clean run prefers ``k`` to ``k2`` and the corrupted run ``k2`` to ``k``
    (the prediction the changed word flips), by a gap of at least :data:`MIN_GAP`."""
    a, b = token_texts(p, torch.tensor([k, k2]))
    if not (math.isfinite(clean_diff) and math.isfinite(corrupted_diff)):
        return "The logit difference is not a finite number on these prompts."
    if same_top and not clean_diff > 0 > corrupted_diff:
        return (
            f"Both prompts predict the same token ({a!r}): the changed word does not change "
            "the answer, so there is no answer for patching to move. Change a word that "
            "changes the prediction."
        )
    if not clean_diff > 0 > corrupted_diff:
        return (
            f"The clean prompt must prefer {a!r} to {b!r} and the corrupted one {b!r} to "
            f"{a!r}; here the logit difference is {clean_diff:+.3f} on the clean prompt and "
            f"{corrupted_diff:+.3f} on the corrupted one: the answer does not flip, so there "
            "is no answer for patching to move. Change the word, or the two tokens read."
        )
    if clean_diff - corrupted_diff < MIN_GAP:
        return (
            f"The logit difference moves by {clean_diff - corrupted_diff:.2g} between the "
            f"prompts, under {MIN_GAP}: a share of so small a gap would be rounding noise. "
            "Change a word that changes the prediction more."
        )
    return None


def patched_diff(p: Pretrained, s: Setup, block: int, positions: Sequence[int]) -> float:
    """LD of the corrupted run with ``x_block`` patched from the clean run at ``positions``."""
    with patched(p, block, positions, s.clean_stream[block]):
        run = forward(p, s.ids_corrupted)
    assert run.logits is not None
    return _diff(run.logits, s.t, s.k, s.k2)


def recovered(s: Setup, diff: float) -> float:
    """The share of the logit difference recovered: 0 = corrupted, 1 = clean."""
    return (diff - s.corrupted_diff) / (s.clean_diff - s.corrupted_diff)


def patching(
    p: Pretrained,
    clean: str,
    corrupted: str,
    position: int = -1,
    token: str | None = None,
    versus: str | None = None,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Patching:
    """Patch ``x_l`` at each position from the clean run into the corrupted one.

    Frame: ``block`` (0..L: 0 the embeddings), ``position`` (from 0),
    ``clean_token``, ``corrupted_token``, ``logit_diff`` (the patched run's LD at the
    read position) and ``recovered`` (:func:`recovered`). ``progress(done, total)``
    after each block (``total`` = L + 1); when ``should_stop()`` turns true the blocks
    done so far are returned (``stopped``)."""
    s = setup(p, clean, corrupted, position, token, versus)
    T = len(s.ids_clean)
    tc, tx = token_texts(p, s.ids_clean), token_texts(p, s.ids_corrupted)
    rows = []
    total = p.n_layers + 1
    stopped = False
    for b in range(total):
        if should_stop is not None and should_stop():
            stopped = True
            break
        for t in range(T):
            d = patched_diff(p, s, b, [t])
            rows.append(
                {
                    "block": b, "position": t, "clean_token": tc[t], "corrupted_token": tx[t],
                    "logit_diff": d, "recovered": recovered(s, d),
                }
            )  # fmt: skip
        if progress is not None:
            progress(b + 1, total)
    differs = [int(i) for i in np.flatnonzero((s.ids_clean != s.ids_corrupted).numpy())]
    return Patching(
        frame=pd.DataFrame(rows, columns=COLUMNS),
        token=p.tokenizer.decode([s.k]),
        versus=p.tokenizer.decode([s.k2]),
        read_position=s.t,
        clean_diff=s.clean_diff,
        corrupted_diff=s.corrupted_diff,
        differs=differs,
        stopped=stopped,
    )
