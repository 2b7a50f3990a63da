"""Load a ~124M-parameter GPT-2 (GPT-2 small's config, random weights saved to a
temporary folder) and run one full page of measurements on a 128-token text.

Prints peak memory (resident set, from the kernel's high-water mark) and the time of
each step, as a Markdown table for benchmarks/RESULTS.md. Each repeat runs in a fresh
process, so the load is a cold load and the memory is the whole page's.

    .venv/bin/python benchmarks/pretrained_page.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEXT_TOKENS = 128


def make_model(folder: Path) -> None:
    """GPT-2 small's shape (12 blocks, width 768, vocabulary 50257), random weights, with
    the Sonnets GPT-2's tokenizer (its ids are all below 50257)."""
    import torch
    import transformers

    from resviz.pretrained import tiny_gpt2_path

    torch.manual_seed(0)
    cfg = transformers.GPT2Config()  # the defaults are GPT-2 small's
    model = transformers.GPT2LMHeadModel(cfg)
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(tiny_gpt2_path()).save_pretrained(folder)


def one_run(folder: str, threads: int) -> dict[str, float]:
    import resource

    import torch

    torch.set_num_threads(threads)
    from resviz import pretrained as P

    def rss_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    out: dict[str, float] = {"rss_import_mb": rss_mb()}
    t = time.perf_counter()
    m = P.load(folder)
    out["load_s"] = time.perf_counter() - t
    out["rss_loaded_mb"] = rss_mb()
    out["weights_mb"] = m.weight_bytes / 2**20
    text = (P.tiny_gpt2_path() / "sonnets.txt").read_text()
    ids = m.tokenizer(text)["input_ids"][:TEXT_TOKENS]
    text = m.tokenizer.decode(ids)
    t0 = time.perf_counter()
    tr = P.trace(m, text, max_tokens=TEXT_TOKENS)
    out["tokens"] = tr.n_tokens
    out["trace_s"] = time.perf_counter() - t0
    out["rss_after_trace_mb"] = rss_mb()
    for name in ("stream_norms", "block_influence", "layer_similarity", "attention_sinks",
                 "massive_activations"):  # fmt: skip
        t = time.perf_counter()
        getattr(P, name)(tr)
        out[f"{name}_s"] = time.perf_counter() - t
    out["one_pass_sections_s"] = time.perf_counter() - t0
    for name in ("logit_lens", "rank_collapse"):
        t = time.perf_counter()
        getattr(P, name)(tr)
        out[f"{name}_s"] = time.perf_counter() - t
        out[f"rss_after_{name}_mb"] = rss_mb()
    t = time.perf_counter()
    P.layer_deletion(tr)
    out["layer_deletion_s"] = time.perf_counter() - t
    out["per_deleted_block_s"] = out["layer_deletion_s"] / m.n_layers
    out["rss_peak_mb"] = rss_mb()
    out["params_m"] = m.n_params / 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--child", default=None)
    ap.add_argument("--make", default=None)
    args = ap.parse_args()
    if args.make:
        make_model(Path(args.make))
        return
    if args.child:
        print(json.dumps(one_run(args.child, args.threads)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-small-random"
        # In its own process: the kernel's high-water mark of resident memory passes from
        # a parent to its children, so the parent stays small.
        subprocess.run([sys.executable, __file__, "--make", str(folder)], check=True)
        runs = []
        for _ in range(args.repeats):
            res = subprocess.run(
                [sys.executable, __file__, "--child", str(folder), "--threads", str(args.threads)],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    keys = list(runs[0])
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
          f"torch threads {args.threads}, {args.repeats} fresh processes")  # fmt: skip
    print("| measure | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | median |")
    print("|---|" + "---|" * (len(runs) + 1))
    for k in keys:
        vals = sorted(r[k] for r in runs)
        med = vals[len(vals) // 2]
        print(f"| {k} | " + " | ".join(f"{r[k]:.3g}" for r in runs) + f" | {med:.3g} |")


if __name__ == "__main__":
    main()
