"""The published Llama shapes as transformers' LlamaConfig, for the PyTorch peers of
`gpuvs model llama`: the config.json of each model on the Hugging Face hub
(meta-llama/Llama-3.2-1B, meta-llama/Llama-3.2-3B, meta-llama/Llama-3.1-8B), as gpuvs's
src/models/llama/shapes.cpp gives them."""

SHAPES = {
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=8192, tie_word_embeddings=True,
               factor=32.0),
    "3b": dict(hidden_size=3072, num_hidden_layers=28, num_attention_heads=24,
               num_key_value_heads=8, intermediate_size=8192, tie_word_embeddings=True,
               factor=32.0),
    "8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=14336, tie_word_embeddings=False,
               factor=8.0),
}


def llama_config(size, **extra):
    """LlamaConfig of a published size (imports transformers)."""
    from transformers import LlamaConfig

    s = dict(SHAPES[size])
    factor = s.pop("factor")
    return LlamaConfig(vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
                       rms_norm_eps=1e-5,
                       rope_scaling={"rope_type": "llama3", "factor": factor,
                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192},
                       **s, **extra)


def parameter_count(cfg):
    """Trainable parameters, as gpuvs's parameter_count counts them."""
    c, layers, f, v = (cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size,
                       cfg.vocab_size)
    kv = cfg.num_key_value_heads * (c // cfg.num_attention_heads)
    per_layer = 2 * c * c + 2 * c * kv + 3 * c * f + 2 * c
    return v * c * (1 if cfg.tie_word_embeddings else 2) + layers * per_layer + c
