"""all-MiniLM-L6-v2 as an ONNX graph, written from its weights with nothing but `onnx`.

The model is a six-layer BERT encoder followed by mean pooling and L2 normalisation (what
sentence-transformers does on top of it). Writing the graph node by node from the weights
Hermes ships means the default install needs no PyTorch to search by meaning: ONNX Runtime
runs the graph, `tokenizers` reads the model's own tokenizer.json.

Weights are stored as float16 (half the size in the wheel) and widened to float32 here, so
the graph computes in float32 exactly as the original model does.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

HIDDEN = 384
HEADS = 12
HEAD_SIZE = HIDDEN // HEADS
LAYERS = 6
LAYER_NORM_EPS = 1e-12
OPSET = 17  # LayerNormalization is an ONNX operator from 17 on
GRAPH_VERSION = "g1"  # part of the cached graph's file name: bump when the graph changes
MASKED = -1.0e9  # added to the scores of padding tokens: their softmax weight becomes 0


def bundle_dir() -> Path:
    """The model files shipped inside the package: weights, tokenizer, licence."""
    return Path(__file__).resolve().parent / "minilm"


def weights_path() -> Path:
    return bundle_dir() / "model.safetensors"


def tokenizer_path() -> Path:
    return bundle_dir() / "tokenizer.json"


def load_weights(path: Path | None = None) -> dict[str, np.ndarray]:
    """The bundled tensors by their original (Hugging Face BertModel) names, as float32."""
    import numpy as np
    from safetensors.numpy import load_file

    tensors = load_file(str(path or weights_path()))
    return {name: np.asarray(t, dtype=np.float32) for name, t in tensors.items()}


class _Graph:
    """Collects nodes and initialisers with unique names while the encoder is written."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        value = self.weights[key]
        return self.const(key, value.T.copy() if transpose else value)

    def op(self, kind: str, *inputs: str, **attributes: Any) -> str:
        from onnx import helper

        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attributes))
        return out

    def linear(self, x: str, prefix: str) -> str:
        """x @ W^T + b, as torch.nn.Linear stores W as (out, in)."""
        product = self.op("MatMul", x, self.weight(f"{prefix}.weight", transpose=True))
        return self.op("Add", product, self.weight(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(f"{prefix}.weight"),
            self.weight(f"{prefix}.bias"),
            axis=-1,
            epsilon=LAYER_NORM_EPS,
        )


def _embeddings(g: _Graph, input_ids: str) -> str:
    """Word + position (+ token type 0, folded into the positions) embeddings, normalised."""
    import numpy as np

    w = g.weights
    positions = (
        w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    )
    words = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), input_ids, axis=0)
    length = g.op(
        "Gather",
        g.op("Shape", input_ids),
        g.const("one", np.array([1], dtype=np.int64)),
        axis=0,
    )
    table = g.const("positions", positions.astype(np.float32))
    used = g.op("Slice", table, g.const("zero", np.array([0], dtype=np.int64)), length)
    return g.layer_norm(g.op("Add", words, used), "embeddings.LayerNorm")


def _split_heads(g: _Graph, x: str, heads_shape: str) -> str:
    """(batch, tokens, hidden) -> (batch, heads, tokens, head_size)."""
    return g.op("Transpose", g.op("Reshape", x, heads_shape), perm=[0, 2, 1, 3])


def _attention(g: _Graph, x: str, mask_bias: str, prefix: str) -> str:
    import numpy as np

    heads_shape = g.const("heads_shape", np.array([0, 0, HEADS, HEAD_SIZE], dtype=np.int64))
    merged_shape = g.const("merged_shape", np.array([0, 0, HIDDEN], dtype=np.int64))
    q = _split_heads(g, g.linear(x, f"{prefix}.self.query"), heads_shape)
    k = _split_heads(g, g.linear(x, f"{prefix}.self.key"), heads_shape)
    v = _split_heads(g, g.linear(x, f"{prefix}.self.value"), heads_shape)
    scale = g.const("scale", np.array(1.0 / math.sqrt(HEAD_SIZE), dtype=np.float32))
    scores = g.op("Mul", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2])), scale)
    weights = g.op("Softmax", g.op("Add", scores, mask_bias), axis=-1)
    context = g.op("Transpose", g.op("MatMul", weights, v), perm=[0, 2, 1, 3])
    attended = g.linear(g.op("Reshape", context, merged_shape), f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", attended, x), f"{prefix}.output.LayerNorm")


def _gelu(g: _Graph, x: str) -> str:
    """The exact GELU BERT uses: x * (1 + erf(x / sqrt 2)) / 2."""
    import numpy as np

    root2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    one = g.const("one_f", np.array(1.0, dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))
    erf = g.op("Erf", g.op("Div", x, root2))
    return g.op("Mul", g.op("Mul", x, g.op("Add", erf, one)), half)


def _layer(g: _Graph, x: str, mask_bias: str, index: int) -> str:
    prefix = f"encoder.layer.{index}"
    attended = _attention(g, x, mask_bias, f"{prefix}.attention")
    hidden = _gelu(g, g.linear(attended, f"{prefix}.intermediate.dense"))
    out = g.linear(hidden, f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", out, attended), f"{prefix}.output.LayerNorm")


def _mean_pool_normalised(g: _Graph, tokens: str, mask: str) -> str:
    """The mean of the real (unpadded) tokens' vectors, scaled to unit length."""
    import numpy as np

    weights = g.op("Unsqueeze", mask, g.const("last", np.array([-1], dtype=np.int64)))
    axis = g.const("axis1", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", g.op("Mul", tokens, weights), axis, keepdims=0)
    counts = g.op("ReduceSum", weights, axis, keepdims=0)
    tiny = g.const("tiny", np.array(1e-9, dtype=np.float32))
    mean = g.op("Div", summed, g.op("Max", counts, tiny))
    norm = g.op("ReduceL2", mean, axes=[-1], keepdims=1)  # axes an attribute until opset 18
    eps = g.const("eps", np.array(1e-12, dtype=np.float32))
    return g.op("Div", mean, g.op("Max", norm, eps))


def build_model(weights: dict[str, np.ndarray]) -> Any:
    """The whole encoder as an onnx ModelProto: inputs input_ids and attention_mask (int64,
    batch x tokens), output embedding (float32, batch x 384, unit length)."""
    import numpy as np
    from onnx import TensorProto, helper

    g = _Graph(weights)
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    # (batch, 1, 1, tokens): 0 where a token is real, MASKED where it is padding
    broadcast = g.op("Unsqueeze", mask, g.const("axes12", np.array([1, 2], dtype=np.int64)))
    one = g.const("one_f", np.array(1.0, dtype=np.float32))
    masked = g.const("masked", np.array(MASKED, dtype=np.float32))
    mask_bias = g.op("Mul", g.op("Sub", one, broadcast), masked)
    x = _embeddings(g, "input_ids")
    for index in range(LAYERS):
        x = _layer(g, x, mask_bias, index)
    pooled = _mean_pool_normalised(g, x, mask)
    g.nodes.append(helper.make_node("Identity", [pooled], ["embedding"]))
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", HIDDEN])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8  # read by every ONNX Runtime since 1.10
    return model


def write_graph(target: Path, weights_file: Path | None = None) -> None:
    """Write the graph built from the bundled weights to `target` (atomically: a concurrent
    process sees either no file or a whole one)."""
    import onnx

    model = build_model(load_weights(weights_file))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        onnx.save_model(model, str(partial))
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
