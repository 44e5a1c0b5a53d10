#!/usr/bin/env python3
"""Dump the PyTorch reference that gpuvs' Llama decoder is checked against (once, on a GPU).

transformers' LlamaForCausalLM at a small shape with every part of the published ones:
hidden 256, 4 layers, 8 query heads on 2 key/value heads (grouped-query attention, head
size 32), SwiGLU of 768, vocabulary 8192, RMSNorm eps 1e-5, rotary theta 500000 with the
llama3 scaling (factor 8, low/high frequency factors 1 and 4, an original context of 64,
so that all three bands of the scaling, kept, blended and divided by 8, are among the 16
frequencies and matter within the check's 48 positions), 256 positions, untied
embeddings, no biases, eager attention, no end token. Random init from --seed (no
download) with initializer_range 0.08 instead of transformers' 0.02: the scale of
tests/gpu/test_llama_decoder.cpp's weights (uniform +-0.15, standard deviation 0.087),
where the layers move the residual stream well beyond the token's own embedding, the
attention is far from uniform and the logits spread (standard deviation about 1.3), so
that a greedy choice mostly has a margin that rounding does not reach; the summary line
prints the margins. The RMSNorm weights, which transformers initialises to 1, are drawn
from U(0.5, 1.5) (generator --seed + 2): with weights of 1 a decoder that skipped or
misplaced the norm's multiplication would pass. FP32 with TF32 off, deterministic
algorithms. The order of the work is part of the file's meaning (docs/model-checks.md):

  1. "<state_dict name>"          every weight, FP32, as the model below uses it;
  2. "input_ids" (B, T)           I64 in [1, V), from generator --seed + 1;
     "rope_inv_freq" (D/2)        the model's own rotary frequencies after the scaling;
  3. per precision p of fp32, bf16, fp16 (the whole model cast with model.to(dtype), as
     gpuvs keeps weights, activations and the KV cache in that type; the rotary
     frequency buffers then put back to FP32, as from_pretrained(dtype=...) leaves them
     and gpuvs keeps them: model.to rounds them too, an error of 0.04 rad at
     position 47 in bf16 that is no part of bf16's rounding elsewhere):
     "<p>/prefill_logits" (B, T, V)   one forward over the prompt, FP32;
     "<p>/generated" (B, G)           I64, G = --generate tokens of model.generate
                                      (do_sample False, max/min_new_tokens G, its own KV
                                      cache, no end token, pad 0);
     "<p>/step_logits" (G, B, V)      the raw logits each of them was chosen from
                                      (output_logits), FP32; step 0 is the prompt's last
                                      position;
  4. for the training checks: a second model of TRAIN_SHAPE (4 query heads on 2
     key/value heads, head size 64, everything else as above; weights from --seed + 3)
     as "train/<state_dict name>" (FP32), "train/input_ids" (B, --train-seq) I64 in
     [0, V) from generator --seed + 4, and per p of fp32 (TF32 off) and bf16 (the model
     cast with model.to(bfloat16), rotary frequencies kept FP32): "train/<p>/loss"
     (labels = input_ids: transformers' shifted cross-entropy over B (T - 1) positions,
     on logits upcast to FP32), "train/<p>/logits" (B, T, V) and "train/<p>/grad/<name>"
     every parameter's gradient from loss.backward(), as FP32.

The file is in the safetensors layout of scripts/models/tensorfile.py (__metadata__
{"format": "gpuvs.ref", "version": "1", "model": "llama-tiny", the shape, the
arguments, the versions, ...}); read by src/models/tensor_file.cpp. It needs a CUDA GPU
and transformers. The file is written only when it is not up to date
(scripts/models/reference_state.py: same arguments, newer than this script and
tensorfile.py; --force rewrites it). Exit codes: 0 written or up to date, 77 cannot here
(no torch, no transformers, no CUDA GPU; the reason on stdout), 1 failed.

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
             mlp_bias=False, hidden_act="silu", initializer_range=0.08, bos_token_id=None,
             eos_token_id=None, pad_token_id=None)
ROPE = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
            original_max_position_embeddings=64)
THETA = 500000.0
PRECISIONS = ("fp32", "bf16", "fp16")
# The training checks' model: the same but 4 query heads on 2 key/value heads, head size
# 64 (gpuvs's fused attention takes 64 and 128), over sequences of --train-seq tokens (a
# multiple of 64, as gpuvs's training takes them).
TRAIN_SHAPE = dict(SHAPE, num_attention_heads=4, num_key_value_heads=2)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="file to write (.safetensors)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--generate", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--train-seq", type=int, default=64)
    ap.add_argument("--force", action="store_true", help="write even when up to date")
    return ap.parse_args()


# Decided before torch is imported, which takes seconds: up to date, or torch or
# transformers missing.
if __name__ == "__main__":
    ARGS = parse_args()
    reference_state.skip_if_up_to_date(
        "dump_llama", ARGS.out,
        {"model": "llama-tiny", "batch": ARGS.batch, "prompt": ARGS.prompt,
         "generate": ARGS.generate, "seed": ARGS.seed, "train_seq": ARGS.train_seq},
        [__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorfile.py")],
        ARGS.force)
try:
    import torch  # noqa: E402
    import transformers  # noqa: E402
except ImportError as e:
    reference_state.cannot("dump_llama", reference_state.import_error_reason(
        e, "the reference needs torch and transformers"))

from tensorfile import check_file, write_tensor_file  # noqa: E402  (scripts/models/)


def fail(why):
    raise SystemExit(f"dump_llama: failed: {why}")


def rope_settings(cfg):
    """The rotary settings the config ended up with: transformers 5 keeps them in
    rope_parameters (theta included), transformers 4 in rope_theta and rope_scaling."""
    params = getattr(cfg, "rope_parameters", None)
    if params:
        return dict(params)
    scaling = dict(getattr(cfg, "rope_scaling", None) or {})
    scaling.setdefault("rope_type", scaling.get("type"))
    return dict(scaling, rope_theta=getattr(cfg, "rope_theta", None))


def build_model(seed, shape=SHAPE):
    # rope_theta and rope_scaling as in every Llama 3 config.json: transformers 4 takes
    # them as they are, transformers 5 converts them into rope_parameters.
    cfg = transformers.LlamaConfig(**shape, rope_theta=THETA, rope_scaling=dict(ROPE))
    got = rope_settings(cfg)
    for key, want in dict(ROPE, rope_theta=THETA).items():
        value = got.get(key)
        if value != want and not (isinstance(want, float) and isinstance(value, (int, float))
                                  and abs(value - want) <= 1e-12 * abs(want)):
            fail(f"transformers {transformers.__version__} made the rotary setting {key} "
                 f"{value!r} of {want!r} (all: {got})")
    try:
        cfg._attn_implementation = "eager"
    except Exception:  # versions without the setter: checked below
        pass
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg)
    if getattr(model.config, "_attn_implementation", None) != "eager" and \
            hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    attention = getattr(model.config, "_attn_implementation", None)
    if attention != "eager":
        print(f"dump_llama: warning: attention implementation {attention!r}, not eager",
              flush=True)
    attn = model.model.layers[0].self_attn
    head = shape["hidden_size"] // shape["num_attention_heads"]
    if getattr(attn, "head_dim", head) != head:
        fail(f"head size {attn.head_dim}, not {head}")
    if model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr():
        fail("the LM head is tied to the embeddings (tie_word_embeddings False was ignored)")
    # No end token (generate runs every step) and pad 0, in the generation config the
    # model carries, so that no default of generate's overrides them.
    gc = model.generation_config
    gc.eos_token_id = None
    gc.bos_token_id = None
    gc.pad_token_id = 0
    # RMSNorm weights in U(0.5, 1.5): transformers' 1 would hide their multiplication.
    g = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.copy_(0.5 + torch.rand(p.shape, generator=g))
    return model, attention


def keep_rotary_fp32(model, base):
    """model.to(dtype) rounded the rotary frequency buffers: back to base's FP32 ones."""
    fp32 = dict(base.named_buffers())
    restored = 0
    for name, buf in list(model.named_buffers()):
        if name.endswith("inv_freq"):
            owner, _, leaf = name.rpartition(".")
            model.get_submodule(owner)._buffers[leaf] = fp32[name].detach().clone()
            restored += 1
    if restored == 0:
        fail("the model has no rotary frequency buffer (*inv_freq) to keep in FP32")


def margins(step_logits):
    """(G, B) top-1 minus top-2 logit of each step."""
    top = step_logits.topk(2, dim=-1).values
    return top[..., 0] - top[..., 1]


def main(args):
    if not torch.cuda.is_available():
        reference_state.cannot("dump_llama", f"PyTorch {torch.__version__} sees no CUDA GPU "
                               "(torch.cuda.is_available() is False)")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    t0 = time.time()

    base, attention = build_model(args.seed)
    base = base.to(dev).eval()
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
    total = args.prompt + args.generate

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    for p in PRECISIONS:
        model = copy.deepcopy(base).to(dtypes[p]).eval()
        keep_rotary_fp32(model, base)
        with torch.no_grad():
            logits = model(input_ids=d_ids, attention_mask=mask).logits
            gen = model.generate(d_ids, attention_mask=mask, do_sample=False,
                                 max_new_tokens=args.generate, min_new_tokens=args.generate,
                                 use_cache=True, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=0)
        if tuple(gen.sequences.shape) != (args.batch, total) or len(gen.logits) != args.generate:
            fail(f"{p}: generate gave sequences {tuple(gen.sequences.shape)} and "
                 f"{len(gen.logits)} steps of logits, not ({args.batch}, {total}) and "
                 f"{args.generate} (an end token?)")
        if not torch.equal(gen.sequences[:, :args.prompt], d_ids):
            fail(f"{p}: generate's sequences do not start with the prompt")
        steps = torch.stack([x.float() for x in gen.logits]).cpu()
        tokens = gen.sequences[:, args.prompt:].cpu()
        # Greedy: each token is its step's largest logit (equal ones: the first).
        if not torch.equal(steps.argmax(-1), tokens.t()):
            fail(f"{p}: generate's tokens are not the argmax of its logits")
        out[f"{p}/prefill_logits"] = logits.float().cpu()
        out[f"{p}/generated"] = tokens
        out[f"{p}/step_logits"] = steps
        del model

    # Training: one forward and backward of the training model at fp32 (TF32 off) and
    # after model.to(bfloat16) (rotary frequencies kept FP32, as above): what gpuvs's bf16
    # training keeps in bf16, PyTorch keeps in bf16 too (weights, activations, the
    # residual stream, gradients), so the distance between the two is PyTorch's own
    # bf16 error. transformers' loss upcasts the logits to FP32.
    if args.train_seq < 64 or args.train_seq % 64 != 0:
        fail(f"--train-seq {args.train_seq}: a multiple of 64")
    train_base, _ = build_model(args.seed + 3, TRAIN_SHAPE)
    train_base = train_base.to(dev)
    for name, t in train_base.state_dict().items():
        if t.dtype.is_floating_point and not name.endswith("inv_freq"):
            out[f"train/{name}"] = t.detach().float().cpu().clone()
    g = torch.Generator().manual_seed(args.seed + 4)
    train_ids = torch.randint(0, SHAPE["vocab_size"], (args.batch, args.train_seq), generator=g)
    out["train/input_ids"] = train_ids
    t_ids = train_ids.to(dev)
    for p in ("fp32", "bf16"):
        model = copy.deepcopy(train_base).to(dtypes[p]).train()  # dropout 0
        keep_rotary_fp32(model, train_base)
        model.zero_grad(set_to_none=True)
        res = model(input_ids=t_ids, labels=t_ids)
        res.loss.backward()
        out[f"train/{p}/loss"] = res.loss.detach().float().cpu().reshape(())
        out[f"train/{p}/logits"] = res.logits.detach().float().cpu()
        for name, param in model.named_parameters():
            if param.grad is None:
                fail(f"train/{p}: no gradient for {name}")
            out[f"train/{p}/grad/{name}"] = param.grad.detach().float().cpu().clone()
        del model

    for name, t in out.items():  # tensor_file.cpp refuses a non-finite value
        if t.dtype.is_floating_point and not bool(torch.isfinite(t).all()):
            fail(f"{name} has a non-finite value")

    meta = {
        "format": "gpuvs.ref",
        "version": "1",
        "model": "llama-tiny",
        "implementation": f"transformers {transformers.__version__} LlamaForCausalLM, "
                          f"{attention} attention",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "attention": attention,
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
        "rope_type": ROPE["rope_type"],
        "rope_factor": ROPE["factor"],
        "rope_low_freq_factor": ROPE["low_freq_factor"],
        "rope_high_freq_factor": ROPE["high_freq_factor"],
        "rope_original_context": ROPE["original_max_position_embeddings"],
        "initializer_range": SHAPE["initializer_range"],
        "rms_norm_weights": "U(0.5, 1.5), generator seed + 2",
        "precisions": ",".join(PRECISIONS),
        "precision": "fp32 with TF32 off; bf16 and fp16 by model.to(dtype), rotary "
                     "frequencies kept FP32",
        "generation": "generate(do_sample=False, max_new_tokens=min_new_tokens=generate, "
                      "use_cache=True, output_logits=True), no end token, pad 0",
        "loss": "labels = input_ids, shifted cross-entropy, mean over batch x (train_seq - 1)",
        "train_heads": TRAIN_SHAPE["num_attention_heads"],
        "train_kv_heads": TRAIN_SHAPE["num_key_value_heads"],
        "train_seq": args.train_seq,
        "train_precision": "fp32 with TF32 off; bf16 by model.to(bfloat16), rotary "
                           "frequencies kept FP32",
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    size = write_tensor_file(args.out, out, meta)
    check_file(args.out, out)
    print(f"dump_llama: {args.out}: {len(out)} tensors, {size / 1e6:.1f} MB, batch "
          f"{args.batch}, prompt {args.prompt}, {args.generate} generated, seed {args.seed}, "
          f"{meta['implementation']}, torch {torch.__version__}, on {meta['device']}, "
          f"{time.time() - t0:.1f} s")
    ref = out["fp32/prefill_logits"]
    for p in PRECISIONS:
        own = (out[f"{p}/prefill_logits"] - ref).abs()
        same = (out[f"{p}/generated"] == out["fp32/generated"]).long()
        first = [int(row.argmin()) if not bool(row.all()) else args.generate for row in same]
        m = margins(out[f"{p}/step_logits"])
        print(f"dump_llama: {p}: prefill max|{p} - fp32| {own.max().item():.4g} (last "
              f"position {own[:, -1].max().item():.4g}; max|fp32| {ref.abs().max().item():.4g}),"
              f" greedy tokens equal to fp32's up to step {first} of {args.generate}, "
              f"top-2 margins min {m.min().item():.4g} median {m.median().item():.4g}, "
              f"{int((m == 0).sum())} exact ties")
    own = max((out[f"train/bf16/grad/{n}"] - out[f"train/fp32/grad/{n}"]).abs().max().item()
              / max(out[f"train/fp32/grad/{n}"].abs().max().item(), 1e-30)
              for n, _ in train_base.named_parameters())
    print(f"dump_llama: training loss fp32 {out['train/fp32/loss'].item():.6f}, bf16 "
          f"{out['train/bf16/loss'].item():.6f}; bf16 gradients' largest max|bf16 - fp32| / "
          f"max|fp32| over the tensors {own:.4g}")


if __name__ == "__main__":
    main(ARGS)
