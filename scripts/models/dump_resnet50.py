#!/usr/bin/env python3
"""Dump the PyTorch reference that gpuvs' ResNet-50 is checked against (once, on a GPU).

torchvision's resnet50 (weights=None: random init from --seed, no download), fp32 with
TF32 off and deterministic cuDNN, one batch of random input and labels. The order of
the work matters and is part of the file's meaning (docs/model-checks.md):

  1. "<state_dict name>"   every parameter and BN buffer as initialised (before anything
                           ran; num_batches_tracked is left out);
  2. "input", "labels"     (N, 3, 224, 224) F32 drawn from N(0, 1), (N,) I64 in [0, 1000);
  3. "eval/logits"         model.eval() forward on that input: BN with the initial
                           running stats (mean 0, var 1), before any train forward
                           touched them;
  4. "logits", "loss"      model.train() forward, CrossEntropyLoss (mean over the batch);
  5. "after/<bn buffer>"   running_mean / running_var after that one train forward
                           (momentum 0.1, unbiased variance);
  6. "grad/<param name>"   every parameter's gradient from loss.backward();
  7. "sgd/<param name>"    a few parameters after one SGD step (gpuvs' recipe: lr
                           0.1 x N / 256, momentum 0.9, weight decay 1e-4 on conv and fc
                           weights only);
  8. "sgd2/<param name>"   the same after a second forward, backward and step on the same
                           batch (momentum now matters); "sgd2/loss" is that forward's loss.
  9. "pt_<v>/<name>"       PyTorch's own deviation from that reference, the yardstick of
                           the test's tolerances: 4-8 (logits, loss, after/, grad/, sgd/,
                           sgd2/) again from a fresh copy of the initial state, for
                           v = fp32b (fp32 with deterministic algorithms off and
                           cudnn.benchmark on: another summation order), tf32 (TF32 on),
                           bf16 (autocast bfloat16), fp16 (autocast float16, loss scaled
                           by 1024 and the gradients unscaled; a smaller power of 4 if
                           1024 overflows). A tensor with inf/NaN is left out;
 10. "traj/fp32", "traj/bf16"  (20,) losses of 20 SGD steps on the same batch from the
                           initial state (the loss of each forward, before its update).

The file is in the safetensors layout (8-byte little-endian header length, JSON header
{name: {dtype, shape, data_offsets}}, "__metadata__" of strings, then the data), written
by scripts/models/tensorfile.py (struct/json/ctypes: nothing beyond torch and torchvision).
gpuvs reads it with src/models/tensor_file.cpp, which checks
__metadata__ = {"format": "gpuvs.ref", "version": "1", ...}.

It needs a CUDA GPU: the bf16/fp16 yardsticks are CUDA autocast. The file is written
only when it is not up to date (scripts/models/reference_state.py: same arguments,
newer than this script and tensorfile.py; --force rewrites it). Exit codes: 0 written
or up to date, 77 cannot here (no torch, torchvision or CUDA GPU; the reason on
stdout), 1 failed.

Usage: python3 scripts/models/dump_resnet50.py --out build/default/ref/resnet50.safetensors
"""
import argparse
import contextlib
import os
import time

import reference_state  # scripts/models/; needs no torch

# Deterministic cuBLAS needs a fixed workspace configuration, set before CUDA starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="file to write (.safetensors)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--force", action="store_true", help="write even when up to date")
    return ap.parse_args()


# Decided before torch is imported, which takes seconds: up to date, or torch missing.
if __name__ == "__main__":
    ARGS = parse_args()
    reference_state.skip_if_up_to_date(
        "dump_resnet50", ARGS.out, {"model": "resnet50", "batch": ARGS.batch, "seed": ARGS.seed},
        [__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorfile.py")],
        ARGS.force)
try:
    import torch  # noqa: E402
    import torchvision  # noqa: E402
except ImportError as e:
    reference_state.cannot("dump_resnet50", reference_state.import_error_reason(
        e, "the reference needs torch and torchvision"))

from tensorfile import check_file, write_tensor_file  # noqa: E402  (scripts/models/)

# Parameters whose values after one and two SGD steps are dumped ("sgd/", "sgd2/").
SGD_CHECKED = ["conv1.weight", "bn1.weight", "layer1.0.conv1.weight", "layer3.5.bn3.bias",
               "layer4.2.conv3.weight", "fc.weight", "fc.bias"]

# Loss-trajectory length ("traj/<variant>").
TRAJ_STEPS = 20


class Variant:
    """How one run computes: "fp32" (the reference: TF32 off, deterministic
    algorithms), "fp32b" (fp32, TF32 off, deterministic algorithms off and cuDNN
    benchmark on: another summation order, as a PyTorch user without those flags gets),
    "fp32c" (as fp32b with the model and input in channels_last, NHWC: cuDNN's NHWC
    kernels, the layout gpuvs computes in),
    "tf32" (TF32 allowed for cuDNN and matmul), "bf16" / "fp16" (torch.autocast; fp16
    with a fixed loss scale, applied to the loss and removed from the gradients)."""

    def __init__(self, name):
        self.name = name
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(name)
        # fp16: 1024 first; halved by 4 until the gradients are finite (recorded).
        self.scales = [1024.0, 256.0, 64.0, 16.0, 4.0, 1.0] if name == "fp16" else [1.0]
        self.used_scales = []  # one per forward_backward, for the record
        self.channels_last = name == "fp32c"

    def autocast(self):
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast("cuda", dtype=self.dtype)


def set_precision_flags(v):
    tf32 = v.name == "tf32"
    det = v.name not in ("fp32b", "fp32c")
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.deterministic = det
    torch.backends.cudnn.benchmark = not det
    # warn_only: a few backward kernels (adaptive average pool) have no deterministic
    # CUDA version; one run is dumped, so a warning is enough.
    torch.use_deterministic_algorithms(det, warn_only=True)


def fresh_model(state, dev):
    """A new resnet50 with `state` (every state_dict tensor but num_batches_tracked)."""
    m = torchvision.models.resnet50(weights=None)
    m.load_state_dict(state, strict=False)
    return m.to(dev)


def rel_l2(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def forward_backward(model, x, labels, v):
    """One train forward (loss under autocast as PyTorch's AMP recipe has it) and
    backward; gradients unscaled. Returns (logits, loss). For fp16 the loss scale is
    the first of v.scales that gives finite gradients; the running stats are restored
    before a retry so that the retried forward sees the same state."""
    buffers = {k: t.clone() for k, t in model.named_buffers()}
    for scale in v.scales:
        model.zero_grad(set_to_none=True)
        with v.autocast():
            logits = model(x)
            loss = torch.nn.CrossEntropyLoss()(logits, labels)
        (loss.float() * scale).backward()
        grads = [p.grad for p in model.parameters()]
        if all(torch.isfinite(g).all() for g in grads) or scale == v.scales[-1]:
            if scale != 1.0:
                for g in grads:
                    g.div_(scale)
            v.used_scales.append(scale)
            return logits, loss
        with torch.no_grad():
            for k, t in model.named_buffers():
                t.copy_(buffers[k])
    raise AssertionError("unreachable")


def make_sgd(model, lr):
    """gpuvs' recipe (src/models/resnet50/resnet50.h): lr 0.1 x N / 256, momentum 0.9,
    weight decay 1e-4 on conv and fc weights only (the parameters with more than one
    dimension)."""
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    return torch.optim.SGD([{"params": decay, "weight_decay": 1e-4},
                            {"params": no_decay, "weight_decay": 0.0}], lr=lr, momentum=0.9)


def train_outputs(model, x, labels, lr, v):
    """logits, loss, after/<bn buffer>, grad/<param> of one train forward+backward, then
    sgd/<checked param> after one SGD step and sgd2/... (and sgd2/loss) after a second
    forward, backward and step on the same batch. All F32 on the CPU."""
    set_precision_flags(v)
    model.train()
    res = {}
    logits, loss = forward_backward(model, x, labels, v)
    res["logits"] = logits.detach().float().cpu()
    res["loss"] = loss.detach().float().cpu().reshape(())
    for name, t in model.state_dict().items():
        if name.endswith("running_mean") or name.endswith("running_var"):
            res["after/" + name] = t.detach().float().cpu().clone()
    for name, p in model.named_parameters():
        res["grad/" + name] = p.grad.detach().float().cpu().clone()
    # Step 1 starts from zero momentum; step 2 (after a second forward and backward)
    # checks the momentum.
    opt = make_sgd(model, lr)
    params = dict(model.named_parameters())
    opt.step()
    for name in SGD_CHECKED:
        res["sgd/" + name] = params[name].detach().float().cpu().clone()
    _, loss2 = forward_backward(model, x, labels, v)
    opt.step()
    res["sgd2/loss"] = loss2.detach().float().cpu().reshape(())
    for name in SGD_CHECKED:
        res["sgd2/" + name] = params[name].detach().float().cpu().clone()
    return res


def trajectory(model, x, labels, lr, v):
    """(TRAJ_STEPS,) F32: the loss of each forward of TRAJ_STEPS SGD steps."""
    set_precision_flags(v)
    model.train()
    opt = make_sgd(model, lr)
    losses = []
    for _ in range(TRAJ_STEPS):
        _, loss = forward_backward(model, x, labels, v)
        opt.step()
        losses.append(loss.detach().float().item())
    return torch.tensor(losses, dtype=torch.float32)


def main(args):
    if not torch.cuda.is_available():
        reference_state.cannot("dump_resnet50", f"PyTorch {torch.__version__} sees no CUDA GPU "
                               "(torch.cuda.is_available() is False); the bf16 and fp16 "
                               "yardsticks are CUDA autocast")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    # warn_only: a few backward kernels (adaptive average pool) have no deterministic
    # CUDA version; one run is dumped, so a warning is enough.
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(args.seed)

    t0 = time.time()
    model = torchvision.models.resnet50(weights=None).to(dev)
    out = {}
    # 1. weights and BN buffers before anything ran.
    for name, t in model.state_dict().items():
        if name.endswith("num_batches_tracked"):
            continue
        out[name] = t.detach().float().cpu().clone()

    # 2. inputs, from their own generator so they do not depend on the init's draws.
    g = torch.Generator().manual_seed(args.seed + 1)
    x = torch.randn(args.batch, 3, 224, 224, generator=g)
    labels = torch.randint(0, 1000, (args.batch,), generator=g, dtype=torch.int64)
    out["input"] = x
    out["labels"] = labels
    x, labels_dev = x.to(dev), labels.to(dev)

    # 3. eval-mode logits with the initial running stats.
    model.eval()
    with torch.no_grad():
        out["eval/logits"] = model(x).float().cpu()

    # 4-8. one train step's forward and backward, then two SGD steps, from the state
    # the model is in now (eval mode left the weights and running stats as initialised).
    lr = 0.1 * args.batch / 256
    out.update(train_outputs(model, x, labels_dev, lr, Variant("fp32")))

    # 9. PyTorch's own error, the yardstick of the reduced precisions (and of fp32's
    # summation order): the same work from a fresh copy of the initial state, once per
    # variant, under "pt_<variant>/".
    state_names = set(model.state_dict().keys())
    init = {k: t for k, t in out.items() if k in state_names}
    scales = {}
    for name in ["fp32b", "fp32c", "tf32", "bf16", "fp16"]:
        v = Variant(name)
        t1 = time.time()
        m = fresh_model(init, dev)
        xv = x
        if v.channels_last:
            m = m.to(memory_format=torch.channels_last)
            xv = x.contiguous(memory_format=torch.channels_last)
        res = train_outputs(m, xv, labels_dev, lr, v)
        dropped = [k for k, t in res.items() if not torch.isfinite(t).all()]
        for k, t in res.items():
            if k not in dropped:
                out[f"pt_{name}/{k}"] = t
        scales[name] = v.used_scales
        print(f"dump_resnet50: pt_{name}: loss {res['loss'].item():.6f}, logits rel_l2 "
              f"{rel_l2(res['logits'], out['logits']):.3e}, grad/conv1.weight rel_l2 "
              f"{rel_l2(res['grad/conv1.weight'], out['grad/conv1.weight']):.3e}, "
              f"grad/fc.bias rel_l2 {rel_l2(res['grad/fc.bias'], out['grad/fc.bias']):.3e}"
              + (f", loss scales {v.used_scales}" if name == "fp16" else "")
              + (f", NOT dumped (non-finite): {dropped}" if dropped else "")
              + f", {time.time() - t1:.1f} s")

    # 10. loss trajectories: TRAJ_STEPS SGD steps on the same batch from the initial
    # state; traj[i] is the loss of the i-th forward (before the i-th update).
    for name in ["fp32", "bf16"]:
        losses = trajectory(fresh_model(init, dev), x, labels_dev, lr, Variant(name))
        out[f"traj/{name}"] = losses
        print(f"dump_resnet50: traj/{name}: " + " ".join(f"{v:.4f}" for v in losses.tolist()))
    set_precision_flags(Variant("fp32"))

    meta = {
        "format": "gpuvs.ref",
        "version": "1",
        "model": "resnet50",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "batch": args.batch,
        "seed": args.seed,
        "device": torch.cuda.get_device_name(dev),
        "precision": "fp32, TF32 off, deterministic algorithms (unprefixed names)",
        "loss": "CrossEntropyLoss, mean over the batch",
        "order": "state before anything ran; eval/logits (eval mode, initial running stats); "
                 "logits, loss, after/ (running stats), grad/ from one train forward+backward; "
                 "sgd/ after one SGD step, sgd2/ (and sgd2/loss) after a second forward, "
                 "backward and step on the same batch",
        "variants": "pt_<v>/ holds logits, loss, after/, grad/, sgd/, sgd2/ computed as the "
                    "reference from a fresh copy of the initial state with v = fp32b (fp32, "
                    "deterministic off, cudnn.benchmark on), fp32c (as fp32b in channels_last), "
                    "tf32 (TF32 on for cuDNN and "
                    "matmul), bf16 (torch.autocast bfloat16), fp16 (torch.autocast float16, "
                    "fixed loss scale removed from the gradients); a non-finite tensor is "
                    "left out",
        "fp16_loss_scales": str(scales.get("fp16")),
        "traj": f"traj/fp32, traj/bf16: ({TRAJ_STEPS},) losses of {TRAJ_STEPS} SGD steps on "
                "the same batch from the initial state (loss of each forward, before its "
                "update)",
        "sgd": f"lr {lr:g} (0.1 x batch / 256), momentum 0.9, weight decay 1e-4 on "
               "parameters with more than one dimension (conv and fc weights), 0 on the others",
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    size = write_tensor_file(args.out, out, meta)
    check_file(args.out, out)
    n_params = sum(p.numel() for p in model.parameters())
    lg = out["logits"]
    print(f"dump_resnet50: {args.out}: {len(out)} tensors, {size / 1e6:.1f} MB, "
          f"{n_params} parameters, batch {args.batch}, seed {args.seed}, on {meta['device']}, "
          f"{time.time() - t0:.1f} s")
    print(f"dump_resnet50: loss {out['loss'].item():.6f}, logits mean {lg.mean().item():.4g} "
          f"std {lg.std().item():.4g}, eval logits std {out['eval/logits'].std().item():.4g}, "
          f"|grad fc.weight| {out['grad/fc.weight'].norm().item():.4g}, "
          f"|grad conv1.weight| {out['grad/conv1.weight'].norm().item():.4g}")


if __name__ == "__main__":
    main(ARGS)
