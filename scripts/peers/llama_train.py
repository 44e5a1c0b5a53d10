#!/usr/bin/env python3
"""transformers' LlamaForCausalLM training at a published Llama shape, as the PyTorch
peer of `gpuvs model llama --mode train`: random weights in place on the GPU (nothing is
downloaded), FP32 weights under torch.autocast bf16, SDPA attention (causal), the
shifted next-token loss (labels = input_ids), torch.optim.AdamW(fused=True) with the
settings gpuvs uses (lr 3e-4, betas 0.9 / 0.95, eps 1e-5, weight decay 0.1), random
tokens. Times whole steps (forward, backward, optimizer) after warm-up steps and prints
one JSON object: tokens/s, step time (median of the timed steps), MFU as gpuvs counts it
(6 N per token plus 12 L h s, over --peak), peak memory.

  python3 scripts/peers/llama_train.py --size 1b --seq 2048 --batch 8 [--compile]
"""
import argparse
import json
import statistics
import sys
import time

from llama_shapes import SHAPES, llama_config, parameter_count  # scripts/peers/


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SHAPES), default="1b")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--peak", type=float, default=989e12,
                   help="dense bf16 FLOP/s for MFU (default 989e12, the H100/H200 SXM "
                        "datasheet's)")
    a = p.parse_args()
    if a.batch < 1 or a.seq < 1 or a.steps < 1 or a.warmup < 0:
        p.error("--batch, --seq and --steps must be 1 or more, --warmup 0 or more")
    import torch
    from transformers import LlamaForCausalLM

    cfg = llama_config(a.size, attn_implementation="sdpa")
    torch.manual_seed(1)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-5,
                            weight_decay=0.1, fused=True)
    forward = torch.compile(model) if a.compile else model
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - t0
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    step_s = statistics.median(times)
    tokens = a.batch * a.seq
    n = parameter_count(cfg)
    flops_per_token = 6 * n + 12 * cfg.num_hidden_layers * cfg.hidden_size * a.seq
    print(json.dumps({
        "peer": "transformers LlamaForCausalLM training, SDPA, autocast bf16, fused AdamW" +
                (", torch.compile" if a.compile else ""),
        "torch": torch.__version__, "size": a.size, "batch": a.batch, "seq": a.seq,
        "parameters": n, "steps": a.steps, "warmup_s": warmup_s, "step_s": step_s,
        "step_s_all": times, "tokens_per_s": tokens / step_s,
        "mfu": flops_per_token * tokens / step_s / a.peak, "peak_flops": a.peak,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(), "loss": float(loss),
    }))


if __name__ == "__main__":
    sys.exit(main())
