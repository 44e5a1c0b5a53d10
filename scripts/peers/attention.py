#!/usr/bin/env python3
"""PyTorch's fused causal attention (scaled_dot_product_attention) through each of its
backends, cuDNN's SDPA among them, at a decoder's training shape: the peer of the
attention regions of `gpuvs model llama --mode train --profile`. Queries (batch, heads,
seq, head_dim) and keys and values of kv_heads heads in bf16; grouped-query attention
through the backend's own support where it has one (enable_gqa), else with the keys and
values repeated to every query head before the timing (the repeat is not timed). Prints
one JSON object: per backend the forward and the forward-plus-backward time of one call
(median of CUDA-event timings) and their rates by the causal FLOPs (4 x batch x heads x
seq^2 x head_dim / 2 forward, 2.5 times that backward), or why the backend refused.

  python3 scripts/peers/attention.py --batch 8 --seq 2048 --heads 32 --kv-heads 8 --head-dim 64
"""
import argparse
import json
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--repeats", type=int, default=20)
    a = p.parse_args()
    if a.heads % a.kv_heads != 0:
        p.error("--heads must be a multiple of --kv-heads")
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(1)
    dev, dt = "cuda", torch.bfloat16
    q = torch.randn(a.batch, a.heads, a.seq, a.head_dim, device=dev, dtype=dt)
    k = torch.randn(a.batch, a.kv_heads, a.seq, a.head_dim, device=dev, dtype=dt)
    v = torch.randn_like(k)
    group = a.heads // a.kv_heads
    k_full = k.repeat_interleave(group, dim=1)
    v_full = v.repeat_interleave(group, dim=1)
    grad = torch.randn_like(q)
    fwd_flops = 4.0 * a.batch * a.heads * a.seq * a.seq * a.head_dim / 2

    def timed(fn):
        fn()  # warm-up (and the backend's own setup)
        torch.cuda.synchronize()
        times = []
        for _ in range(a.repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
        return statistics.median(times)

    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    out = {"peer": "torch.nn.functional.scaled_dot_product_attention, causal, bf16",
           "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "gpu": torch.cuda.get_device_name(), "batch": a.batch, "seq": a.seq,
           "heads": a.heads, "kv_heads": a.kv_heads, "head_dim": a.head_dim,
           "forward_flops": fwd_flops, "backward_flops": 2.5 * fwd_flops, "backends": {}}
    for name, backend in backends.items():
        row = {}
        for gqa in (True, False):
            qq = q.detach().requires_grad_()
            kk = (k if gqa else k_full).detach().requires_grad_()
            vv = (v if gqa else v_full).detach().requires_grad_()
            kwargs = {"enable_gqa": True} if gqa and group > 1 else {}

            def fwd():
                with torch.no_grad(), sdpa_kernel(backend):
                    F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, **kwargs)

            def fwd_bwd():
                with sdpa_kernel(backend):
                    o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, **kwargs)
                o.backward(grad)

            try:
                f = timed(fwd)
                fb = timed(fwd_bwd)
            except RuntimeError as e:
                row["refused" if not row else "refused_gqa"] = str(e).splitlines()[0][:300]
                continue
            row.update({"gqa": "enable_gqa" if gqa and group > 1 else "repeated keys and values",
                        "forward_s": f, "forward_and_backward_s": fb,
                        "forward_tflops": fwd_flops / f / 1e12,
                        "forward_and_backward_tflops": 3.5 * fwd_flops / fb / 1e12})
            break
        out["backends"][name] = row
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
