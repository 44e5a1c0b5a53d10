#!/usr/bin/env python3
"""Dump the PyTorch reference that gpuvs' BERT-large is checked against (once, on a GPU).

transformers' BertForPreTraining with a BERT-large BertConfig (24 layers, hidden 1024,
16 heads, FFN 4096, vocabulary 30522, 512 positions, 2 types, LayerNorm eps 1e-12,
GELU erf), random init from --seed (no download), dropout 0 (hidden and attention),
fp32 with TF32 off, eager attention. With --plain-torch, where transformers is not
installed, the same model written here in plain torch (same state_dict names, init and
math; the metadata says which one ran). The order of the work is part of the file's meaning
(docs/model-checks.md):

  1. "<state_dict name>"       every tensor of the state_dict as initialised (including
                               the tied cls.predictions.decoder.weight/.bias);
  2. inputs                    "input_ids", "token_type_ids", "attention_mask", "labels"
                               (B, T) and "next_sentence_label" (B), I64: [CLS] words
                               [SEP] words [SEP], segment 1 after the first [SEP], 15 %
                               of the words masked ([MASK] 103, label = the word, others
                               -100); sequence 1 padded over its last 16 positions
                               (mask 0, id 0, label -100) so that the mask matters;
  3. "prediction_logits", "seq_relationship_logits", "loss", "loss/mlm", "loss/nsp"
                               from one forward (MLM cross-entropy, mean over the
                               labelled positions, + NSP cross-entropy);
  4. "grad/<param name>"       every parameter's gradient from loss.backward() (tied
                               state_dict names included);
  5. "adamw/<param name>"      a few parameters after one torch.optim.AdamW step (lr
                               1e-4, betas 0.9/0.999, eps 1e-6, weight decay 0.01 on every
                               weight but LayerNorm's and the biases).

The file is in the safetensors layout of scripts/models/dump_resnet50.py (8-byte
little-endian header length, JSON header, __metadata__ {"format": "gpuvs.ref",
"version": "1", "model": "bert-large", ...}); read by src/models/tensor_file.cpp.

It needs a CUDA GPU, as the GPU test it is made for. The file is written only when it
is not up to date (scripts/models/reference_state.py: same arguments, newer than this
script and tensorfile.py; --force rewrites it). Exit codes: 0 written or up to date,
77 cannot here (no torch, no transformers without --plain-torch, no CUDA GPU; the
reason on stdout), 1 failed.

Usage: python3 scripts/models/dump_bert.py --out build/default/ref/bert.safetensors
"""
import argparse
import math
import os
import time

import reference_state  # scripts/models/; needs no torch

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="file to write (.safetensors)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--plain-torch", action="store_true",
                    help="without transformers, use this script's plain-torch copy of the model")
    ap.add_argument("--force", action="store_true", help="write even when up to date")
    return ap.parse_args()


# Decided before torch is imported, which takes seconds: up to date, or torch or
# transformers missing.
if __name__ == "__main__":
    ARGS = parse_args()
    reference_state.skip_if_up_to_date(
        "dump_bert", ARGS.out,
        {"model": "bert-large", "batch": ARGS.batch, "seq": ARGS.seq, "seed": ARGS.seed},
        [__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorfile.py")],
        ARGS.force)
try:
    import torch  # noqa: E402
    if __name__ == "__main__" and not ARGS.plain_torch:
        import transformers  # noqa: E402, F401
except ImportError as e:
    reference_state.cannot("dump_bert", reference_state.import_error_reason(
        e, "the reference needs torch and transformers (or --plain-torch)"))

from tensorfile import check_file, write_tensor_file  # noqa: E402  (scripts/models/)

ADAM_CHECKED = ["bert.embeddings.word_embeddings.weight",
                "bert.encoder.layer.0.attention.self.query.weight",
                "bert.encoder.layer.23.output.LayerNorm.weight",
                "cls.predictions.bias",
                "cls.seq_relationship.weight"]

LARGE = dict(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
             intermediate_size=4096, hidden_act="gelu", hidden_dropout_prob=0.0,
             attention_probs_dropout_prob=0.0, max_position_embeddings=512, type_vocab_size=2,
             initializer_range=0.02, layer_norm_eps=1e-12)


# ---- plain-torch BertForPreTraining (only where transformers is missing) ----------
class _Cfg:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _plain_model(cfg):
    nn = torch.nn
    C, H, F, V = cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size, cfg.vocab_size

    def gelu(x):
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    class Embeddings(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(V, C, padding_idx=0)
            self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, C)
            self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, C)
            self.LayerNorm = nn.LayerNorm(C, eps=cfg.layer_norm_eps)

        def forward(self, ids, types):
            pos = torch.arange(ids.shape[1], device=ids.device)
            e = self.word_embeddings(ids) + self.position_embeddings(pos)[None] + \
                self.token_type_embeddings(types)
            return self.LayerNorm(e)

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)

        def forward(self, x, bias):
            B, T, _ = x.shape
            split = lambda t: t.view(B, T, H, C // H).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            s = q @ k.transpose(-1, -2) / math.sqrt(C // H) + bias
            return (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)

    class DenseLn(nn.Module):  # BertSelfOutput / BertOutput
        def __init__(self, fan_in):
            super().__init__()
            self.dense = nn.Linear(fan_in, C)
            self.LayerNorm = nn.LayerNorm(C, eps=cfg.layer_norm_eps)

        def forward(self, h, x):
            return self.LayerNorm(self.dense(h) + x)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.self = SelfAttention()
            self.output = DenseLn(C)

        def forward(self, x, bias):
            return self.output(self.self(x, bias), x)

    class Intermediate(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(C, F)

        def forward(self, x):
            return gelu(self.dense(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.intermediate = Intermediate()
            self.output = DenseLn(F)

        def forward(self, x, bias):
            a = self.attention(x, bias)
            return self.output(self.intermediate(a), a)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.ModuleList([Layer() for _ in range(cfg.num_hidden_layers)])

    class Pooler(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(C, C)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.embeddings = Embeddings()
            self.encoder = Encoder()
            self.pooler = Pooler()

    class Transform(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(C, C)
            self.LayerNorm = nn.LayerNorm(C, eps=cfg.layer_norm_eps)

    class LMHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.transform = Transform()
            self.decoder = nn.Linear(C, V, bias=False)
            self.bias = nn.Parameter(torch.zeros(V))
            self.decoder.bias = self.bias

    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.predictions = LMHead()
            self.seq_relationship = nn.Linear(C, 2)

    class PreTraining(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = Bert()
            self.cls = Heads()
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight
            for m in self.modules():  # BertPreTrainedModel._init_weights
                if isinstance(m, nn.Linear):
                    m.weight.data.normal_(0.0, cfg.initializer_range)
                    if m.bias is not None:
                        m.bias.data.zero_()
                elif isinstance(m, nn.Embedding):
                    m.weight.data.normal_(0.0, cfg.initializer_range)
                    if m.padding_idx is not None:
                        m.weight.data[m.padding_idx].zero_()
                elif isinstance(m, nn.LayerNorm):
                    m.weight.data.fill_(1.0)
                    m.bias.data.zero_()
            self.cls.predictions.bias.data.zero_()

        def forward(self, input_ids, token_type_ids, attention_mask):
            bias = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
            x = self.bert.embeddings(input_ids, token_type_ids)
            for layer in self.bert.encoder.layer:
                x = layer(x, bias)
            t = self.cls.predictions.transform
            h = t.LayerNorm(gelu(t.dense(x)))
            logits = self.cls.predictions.decoder(h)
            pooled = torch.tanh(self.bert.pooler.dense(x[:, 0]))
            return logits, self.cls.seq_relationship(pooled)

    return PreTraining()


def build_model(seed, plain_torch):
    torch.manual_seed(seed)
    try:
        if plain_torch:
            raise ImportError("--plain-torch")
        import transformers
        config = transformers.BertConfig(**LARGE)
        try:
            config._attn_implementation = "eager"
        except Exception:  # older or newer versions without the attribute
            pass
        model = transformers.BertForPreTraining(config)

        def run(ids, types, mask):
            out = model(input_ids=ids, token_type_ids=types, attention_mask=mask)
            return out.prediction_logits, out.seq_relationship_logits
        return model, run, f"transformers {transformers.__version__} BertForPreTraining"
    except ImportError:
        model = _plain_model(_Cfg(**LARGE))
        return model, model, "plain-torch BertForPreTraining (--plain-torch)"


def make_inputs(batch, seq, seed):
    g = torch.Generator().manual_seed(seed + 1)
    ids = torch.randint(999, 30522, (batch, seq), generator=g)
    half = seq // 2
    ids[:, 0] = 101
    ids[:, half - 1] = 102
    ids[:, seq - 1] = 102
    types = torch.zeros(batch, seq, dtype=torch.int64)
    types[:, half:] = 1
    word = torch.ones(batch, seq, dtype=torch.bool)
    word[:, [0, half - 1, seq - 1]] = False
    masked = (torch.rand(batch, seq, generator=g) < 0.15) & word
    labels = torch.where(masked, ids, torch.full_like(ids, -100))
    ids = torch.where(masked, torch.full_like(ids, 103), ids)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if batch > 1:  # sequence 1 padded over its last 16 positions
        mask[1, seq - 16:] = 0
        ids[1, seq - 16:] = 0
        labels[1, seq - 16:] = -100
    nsp = torch.randint(0, 2, (batch,), generator=g)
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask,
            "labels": labels, "next_sentence_label": nsp}


def main(args):
    if not torch.cuda.is_available():
        reference_state.cannot("dump_bert", f"PyTorch {torch.__version__} sees no CUDA GPU "
                               "(torch.cuda.is_available() is False)")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)

    t0 = time.time()
    model, run, impl = build_model(args.seed, args.plain_torch)
    model = model.to(dev)
    model.train()  # dropout probabilities are 0: train and eval compute the same
    out = {}
    for name, t in model.state_dict().items():
        if t.dtype.is_floating_point:
            out[name] = t.detach().float().cpu().clone()

    inputs = make_inputs(args.batch, args.seq, args.seed)
    out.update(inputs)
    d = {k: v.to(dev) for k, v in inputs.items()}

    model.zero_grad(set_to_none=True)
    logits, nsp_logits = run(d["input_ids"], d["token_type_ids"], d["attention_mask"])
    ce = torch.nn.CrossEntropyLoss()  # mean over labels != -100, as transformers
    mlm = ce(logits.reshape(-1, logits.shape[-1]), d["labels"].reshape(-1))
    nsp = ce(nsp_logits.reshape(-1, 2), d["next_sentence_label"].reshape(-1))
    loss = mlm + nsp
    loss.backward()
    out["prediction_logits"] = logits.detach().float().cpu()
    out["seq_relationship_logits"] = nsp_logits.detach().float().cpu()
    out["loss"] = loss.detach().float().cpu().reshape(())
    out["loss/mlm"] = mlm.detach().float().cpu().reshape(())
    out["loss/nsp"] = nsp.detach().float().cpu().reshape(())
    # Every state_dict name of a parameter, tied aliases included (keep_vars: the
    # Parameters themselves, with their gradients).
    for name, p in model.state_dict(keep_vars=True).items():
        if isinstance(p, torch.nn.Parameter) and p.grad is not None:
            out["grad/" + name] = p.grad.detach().float().cpu().clone()

    # One AdamW step with gpuvs' recipe (src/models/bert/bert.h).
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith(".bias") or "LayerNorm" in name else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-6)
    opt.step()
    params = dict(model.named_parameters())
    for name in ADAM_CHECKED:
        out["adamw/" + name] = params[name].detach().float().cpu().clone()

    meta = {
        "format": "gpuvs.ref",
        "version": "1",
        "model": "bert-large",
        "implementation": impl,
        "torch": torch.__version__,
        "batch": args.batch,
        "seq": args.seq,
        "seed": args.seed,
        "device": torch.cuda.get_device_name(dev),
        "precision": "fp32, TF32 off, dropout 0",
        "loss": "MLM cross-entropy (mean over labels != -100) + NSP cross-entropy",
        "adamw": "lr 1e-4, betas 0.9/0.999, eps 1e-6, weight decay 0.01 except biases and "
                 "LayerNorm",
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    size = write_tensor_file(args.out, out, meta)
    check_file(args.out, out)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"dump_bert: {args.out}: {len(out)} tensors, {size / 1e6:.1f} MB, {n_params} "
          f"parameters, batch {args.batch}, seq {args.seq}, seed {args.seed}, {impl}, on "
          f"{meta['device']}, {time.time() - t0:.1f} s")
    print(f"dump_bert: loss {loss.item():.6f} (mlm {mlm.item():.6f}, nsp {nsp.item():.6f}), "
          f"logits std {logits.std().item():.4g}, |grad word| "
          f"{out['grad/bert.embeddings.word_embeddings.weight'].norm().item():.4g}")


if __name__ == "__main__":
    main(ARGS)
