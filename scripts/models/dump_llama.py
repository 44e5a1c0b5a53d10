#!/usr/bin/env python3
"""Dump the PyTorch reference that gpuvs' Llama decoder is checked against (once, on a GPU).

transformers' LlamaForCausalLM at a small shape with every part of the published ones:
hidden 256, 4 layers, 8 query heads on 2 key/value heads (grouped-query attention, head
size 32), SwiGLU of 768, vocabulary 8192, RMSNorm eps 1e-5, rotary theta 500000 with the
llama3 scaling (factor 8, low/high frequency factors 1 and 4, an original context of 64
so that the scaled and blended frequencies are reached within the check's 48 positions),
untied embeddings, no biases, eager attention. Random init from --seed (no download),
initializer_range 0.08: at transformers' 0.02 and hidden 256 the logits are so flat that
bf16's rounding flips greedy choices; at 0.08 the choices have a margin. FP32 with TF32
off. The order of the work is part of the file's meaning (docs/model-checks.md):

  1. "<state_dict name>"          every weight as initialised, FP32;
  2. "input_ids" (B, T)           I64, from --seed; "rope_inv_freq" (D/2) the model's own
                                  rotary frequencies after its scaling;
  3. per precision p of fp32, bf16, fp16 (the whole model cast with model.to(dtype), as
     gpuvs keeps weights, activations and the cache in that type):
     "<p>/prefill_logits" (B, T, V)   one forward over the prompt, FP32;
     "<p>/generated" (B, G)           G = --generate greedy tokens of `generate`
                                      (do_sample False, its own KV cache, no end token);
     "<p>/step_logits" (G, B, V)      the logits each of them was chosen from, FP32 (the
                                      first is the prompt's last position);
  4. for training: "train/fp32/loss" and "train/fp32/grad/<name>" (labels = input_ids,
     transformers' shifted cross-entropy, FP32), and "train/bf16/loss" and
     "train/bf16/grad/<name>" (the FP32 model under torch.autocast bf16).

The file is in the safetensors layout of scripts/models/tensorfile.py (__metadata__
{"format": "gpuvs.ref", "version": "1", "model": "llama-tiny", the shape, ...}); read by
src/models/tensor_file.cpp. It needs a CUDA GPU and transformers. The file is written
only when it is not up to date (scripts/models/reference_state.py; --force rewrites it).
Exit codes: 0 written or up to date, 77 cannot here (no torch, no transformers, no CUDA
GPU; the reason on stdout), 1 failed.

Usage: python3 scripts/models/dump_llama.py --out build/default/ref/llama.safetensors
"""
import argparse
import copy
import os
import time

import reference_state  # scripts/models/; needs no torch

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

SHAPE = dict(vocab_size=8192, hidden_size=256, intermediate_size=768, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
             rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False,
             mlp_bias=False, initializer_range=0.08)
ROPE = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
            original_max_position_embeddings=64)
THETA = 500000.0
PRECISIONS = ("fp32", "bf16", "fp16")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="file to write (.safetensors)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--generate", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--force", action="store_true", help="write even when up to date")
    return ap.parse_args()


if __name__ == "__main__":
    ARGS = parse_args()
    reference_state.skip_if_up_to_date(
        "dump_llama", ARGS.out,
        {"model": "llama-tiny", "batch": ARGS.batch, "prompt": ARGS.prompt,
         "generate": ARGS.generate, "seed": ARGS.seed},
        [__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorfile.py")],
        ARGS.force)
try:
    import torch  # noqa: E402
    import transformers  # noqa: E402
except ImportError as e:
    reference_state.cannot("dump_llama", reference_state.import_error_reason(
        e, "the reference needs torch and transformers"))

from tensorfile import check_file, write_tensor_file  # noqa: E402  (scripts/models/)


def build_model(seed):
    cfg = transformers.LlamaConfig(**SHAPE, rope_theta=THETA, rope_scaling=dict(ROPE))
    # transformers 5 keeps the rotary settings in rope_parameters (theta included).
    if hasattr(cfg, "rope_parameters"):
        cfg.rope_parameters = dict(ROPE, rope_theta=THETA)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg)
    model.generation_config.eos_token_id = None
    model.generation_config.bos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def main(args):
    if not torch.cuda.is_available():
        reference_state.cannot("dump_llama", f"PyTorch {torch.__version__} sees no CUDA GPU "
                               "(torch.cuda.is_available() is False)")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    t0 = time.time()

    base = build_model(args.seed).to(dev).eval()
    out = {}
    for name, t in base.state_dict().items():
        if t.dtype.is_floating_point and not name.endswith("inv_freq"):
            out[name] = t.detach().float().cpu().clone()
    g = torch.Generator().manual_seed(args.seed + 1)
    ids = torch.randint(1, SHAPE["vocab_size"], (args.batch, args.prompt), generator=g)
    out["input_ids"] = ids
    out["rope_inv_freq"] = base.model.rotary_emb.inv_freq.detach().float().cpu().clone()
    d_ids = ids.to(dev)
    mask = torch.ones_like(d_ids)

    for p in PRECISIONS:
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[p]
        model = copy.deepcopy(base).to(dtype).eval()
        with torch.no_grad():
            logits = model(input_ids=d_ids, attention_mask=mask).logits
            gen = model.generate(d_ids, attention_mask=mask, do_sample=False,
                                 max_new_tokens=args.generate, min_new_tokens=args.generate,
                                 use_cache=True, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=0)
        out[f"{p}/prefill_logits"] = logits.float().cpu()
        out[f"{p}/generated"] = gen.sequences[:, args.prompt:].cpu()
        out[f"{p}/step_logits"] = torch.stack([x.float() for x in gen.logits]).cpu()
        assert out[f"{p}/generated"].shape == (args.batch, args.generate), p
        del model

    for p, autocast in (("fp32", False), ("bf16", True)):
        model = copy.deepcopy(base).train()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=d_ids, attention_mask=mask, labels=d_ids).loss
        loss.backward()
        out[f"train/{p}/loss"] = loss.detach().float().cpu().reshape(())
        for name, param in model.named_parameters():
            out[f"train/{p}/grad/{name}"] = param.grad.detach().float().cpu().clone()
        del model

    meta = {
        "format": "gpuvs.ref",
        "version": "1",
        "model": "llama-tiny",
        "implementation": f"transformers {transformers.__version__} LlamaForCausalLM, eager "
                          "attention",
        "torch": torch.__version__,
        "batch": args.batch,
        "prompt": args.prompt,
        "generate": args.generate,
        "seed": args.seed,
        "device": torch.cuda.get_device_name(dev),
        "hidden": SHAPE["hidden_size"],
        "layers": SHAPE["num_hidden_layers"],
        "heads": SHAPE["num_attention_heads"],
        "kv_heads": SHAPE["num_key_value_heads"],
        "intermediate": SHAPE["intermediate_size"],
        "vocab": SHAPE["vocab_size"],
        "rms_norm_eps": SHAPE["rms_norm_eps"],
        "max_context": SHAPE["max_position_embeddings"],
        "tied_embeddings": int(SHAPE["tie_word_embeddings"]),
        "rope_theta": THETA,
        "rope_factor": ROPE["factor"],
        "rope_low_freq_factor": ROPE["low_freq_factor"],
        "rope_high_freq_factor": ROPE["high_freq_factor"],
        "rope_original_context": ROPE["original_max_position_embeddings"],
        "precision": "fp32 with TF32 off; bf16 and fp16 by model.to(dtype)",
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    size = write_tensor_file(args.out, out, meta)
    check_file(args.out, out)
    same = [(out[f"{p}/generated"] == out["fp32/generated"]).float().mean().item()
            for p in PRECISIONS]
    print(f"dump_llama: {args.out}: {len(out)} tensors, {size / 1e6:.1f} MB, batch "
          f"{args.batch}, prompt {args.prompt}, {args.generate} generated, seed {args.seed}, "
          f"{meta['implementation']}, on {meta['device']}, {time.time() - t0:.1f} s")
    print("dump_llama: greedy tokens equal to fp32's: " +
          ", ".join(f"{p} {s:.3f}" for p, s in zip(PRECISIONS, same)) +
          f"; loss fp32 {out['train/fp32/loss'].item():.6f}, bf16 autocast "
          f"{out['train/bf16/loss'].item():.6f}")


if __name__ == "__main__":
    main(ARGS)
