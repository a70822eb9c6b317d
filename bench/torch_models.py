"""The four models of bench/models.py with random weights, and their inputs.

case(name, size, dtype, device, tiny=False) -> Case: the module (eval mode,
on the device, in the dtype), example inputs, and a label. `tiny` shrinks
the configs (same op patterns) for CPU smoke tests of the benchmark's code.
"""

from dataclasses import dataclass

import torch

MODELS = ("bert", "gpt2", "llama", "resnet50")
SIZES = {"bert": ("b1", "large"), "gpt2": ("b1", "large"), "llama": ("b1", "large", "decode"),
         "resnet50": ("b1", "large")}
# (batch, sequence) or images: batch 1 is launch-bound, large is bandwidth-bound.
SHAPES = {"bert": {"b1": (1, 128), "large": (16, 512)}, "gpt2": {"b1": (1, 128), "large": (8, 1024)},
          "llama": {"b1": (1, 128), "large": (8, 1024), "decode": (1, 512)},
          "resnet50": {"b1": (1,), "large": (64,)}}


@dataclass
class Case:
    name: str
    size: str
    dtype: torch.dtype
    module: torch.nn.Module
    inputs: tuple

    @property
    def label(self):
        return f"{self.name}-{self.size}-{str(self.dtype).replace('torch.', '')}"


class LastHidden(torch.nn.Module):
    """An HF model returning last_hidden_state only (a plain tensor for tracing)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).last_hidden_state


class LlamaDecodeStep(torch.nn.Module):
    """One new token against a KV cache given as tensors (k0, v0, k1, v1, ...)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, position_ids, *kv):
        from transformers import DynamicCache
        cache = DynamicCache()
        for layer in range(len(kv) // 2):
            cache.update(kv[2 * layer], kv[2 * layer + 1], layer)
        return self.model(input_ids=input_ids, position_ids=position_ids, past_key_values=cache,
                          use_cache=True).last_hidden_state


def _bert(tiny):
    from transformers import BertConfig, BertModel
    cfg = BertConfig() if not tiny else BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                                   intermediate_size=128, vocab_size=512)
    return LastHidden(BertModel(cfg, add_pooling_layer=False)), cfg.vocab_size


def _gpt2(tiny):
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config() if not tiny else GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=512, n_positions=256)
    return LastHidden(GPT2Model(cfg)), cfg.vocab_size


def _llama_config(tiny):
    from transformers import LlamaConfig
    if tiny:
        return LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, vocab_size=512, max_position_embeddings=1024)
    return LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4, num_attention_heads=16,
                       num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)


def case(name, size, dtype=torch.float16, device="cuda", tiny=False):
    torch.manual_seed(0)
    shape = SHAPES[name][size]
    if tiny:
        shape = tuple(min(s, 16) for s in shape)
    if name == "resnet50":
        import torchvision
        module = torchvision.models.resnet50(weights=None)
        inputs = (torch.randn(shape[0], 3, 64 if tiny else 224, 64 if tiny else 224),)
    elif name in ("bert", "gpt2"):
        module, vocab = (_bert if name == "bert" else _gpt2)(tiny)
        inputs = (torch.randint(0, vocab, shape),)
    elif size == "decode":
        from transformers import LlamaModel
        cfg = _llama_config(tiny)
        module = LlamaDecodeStep(LlamaModel(cfg))
        heads, dim = cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads
        past = shape[1]
        kv = [torch.randn(1, heads, past, dim) for _ in range(2 * cfg.num_hidden_layers)]
        inputs = (torch.randint(0, cfg.vocab_size, (1, 1)), torch.tensor([[past]]), *kv)
    else:
        from transformers import LlamaModel
        cfg = _llama_config(tiny)
        module, inputs = LastHidden(LlamaModel(cfg)), (torch.randint(0, cfg.vocab_size, shape),)
    module = module.eval().to(device=device, dtype=dtype)
    inputs = tuple(t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device) for t in inputs)
    return Case(name, size, dtype, module, inputs)


def all_cases(dtypes=("float16", "bfloat16")):
    """(name, size, dtype) of every case the benchmark runs: Llama in bf16, the others in f16, unless asked."""
    out = []
    for name in MODELS:
        for size in SIZES[name]:
            for dt in dtypes:
                out.append((name, size, getattr(torch, dt)))
    return out
