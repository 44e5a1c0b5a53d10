#!/usr/bin/env python3
"""transformers' LlamaForCausalLM.generate at a published Llama shape, as the peer of
`gpuvs model llama --mode infer`: random weights in place on the GPU (nothing is
downloaded), a random prompt, greedy decoding with a static KV cache. Prints one JSON
object: time to first token (a generate of one new token), and decode tokens/s over the
batch from the difference of a generate of N tokens and of one.

  python3 scripts/peers/llama_generate.py --size 8b --batch 64 --prompt 128 --generate 64
"""
import argparse
import json
import sys
import time

from llama_shapes import SHAPES, llama_config  # scripts/peers/


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SHAPES), default="1b")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--generate", type=int, default=128)
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--compile", action="store_true", help="torch.compile the forward")
    a = p.parse_args()
    if a.generate < 2:
        p.error("--generate must be 2 or more")
    import torch
    from transformers import LlamaForCausalLM

    cfg = llama_config(a.size)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
    torch.manual_seed(1)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(dtype).eval()
    if a.compile:
        model.forward = torch.compile(model.forward, mode="reduce-overhead")
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt), device="cuda")

    def generate(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                                 min_new_tokens=n, do_sample=False, eos_token_id=None,
                                 pad_token_id=0, cache_implementation="static")
        torch.cuda.synchronize()
        assert out.shape[1] == a.prompt + n, out.shape
        return time.perf_counter() - t0

    generate(a.generate)  # warm-up (and compilation)
    first = min(generate(1) for _ in range(3))
    full = min(generate(a.generate) for _ in range(2))
    decode = a.batch * (a.generate - 1) / max(full - first, 1e-9)
    print(json.dumps({
        "peer": "transformers LlamaForCausalLM.generate, static cache" +
                (", torch.compile" if a.compile else ""),
        "torch": torch.__version__, "size": a.size, "dtype": a.dtype, "batch": a.batch,
        "prompt": a.prompt, "generate": a.generate, "ttft_s": first,
        "generate_s": full, "decode_tokens_per_s": decode,
        "decode_tokens_per_s_per_sequence": decode / a.batch,
    }))


if __name__ == "__main__":
    sys.exit(main())
