"""all-MiniLM-L6-v2 run by ONNX Runtime on the CPU.

The graph is written once from the weights shipped in the package (minilm_graph.py, about
a second, offline) into `$HERMES_HOME/cache/embeddings/` and reused by every later process.
Tokenisation is the model's own `tokenizer.json`, read by `tokenizers`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.memory.embedder import DIMENSIONS, MAX_CHARS
from hermes.memory.minilm_graph import GRAPH_VERSION, tokenizer_path, weights_path, write_graph

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
BATCH = 16  # measured: bigger batches pad more and run slower on 2 cores


def graph_path(cache: Path) -> Path:
    """Where the written graph lives: named after the weights' size and the graph's version,
    so new weights or a changed graph are written anew instead of reusing a stale file."""
    size = weights_path().stat().st_size
    return cache / f"all-MiniLM-L6-v2-{size}-{GRAPH_VERSION}.onnx"


def query_graph_path(cache: Path) -> Path:
    """The graph with int8 weights (dynamic quantisation) that encodes search questions."""
    graph = graph_path(cache)
    return graph.with_name(graph.stem + "-int8.onnx")


def quantize_graph(source: Path, target: Path) -> None:
    """Write `source` with its weights quantised to int8 to `target` (atomically)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    root = logging.getLogger()
    advice = _DropAdvice()  # the quantiser logs advice for image models on the root logger
    level = root.level
    root.addFilter(advice)
    root.setLevel(max(level, logging.WARNING))  # and a line per tensor at INFO (--verbose)
    try:
        quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8)
        partial.replace(target)
    finally:
        root.setLevel(level)
        root.removeFilter(advice)
        partial.unlink(missing_ok=True)


class _DropAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


class OnnxMiniLM:
    """Texts to unit-length float32 vectors with ONNX Runtime (thread-safe, no lock)."""

    runtime = "onnxruntime"
    dimensions = DIMENSIONS

    def __init__(self, name: str, cache: Path) -> None:
        import onnxruntime  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        self.name = name
        path = graph_path(cache)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # idle pool threads must not spin: the search's and SQLite's threads share the cores
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if path.exists():
            try:
                self._session = onnxruntime.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # a damaged cache file: made again below
                log.warning("writing the embedding model again: %s did not load (%s)", path, exc)
                path.unlink(missing_ok=True)
        if not path.exists():
            log.info("writing the embedding model's graph to %s (once)", path)
            write_graph(path)
            self._session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        # a question is a few tokens: one thread runs it faster than waking a second one
        # (1.2 vs 2.5 ms beside the search's own threads)
        single = onnxruntime.SessionOptions()
        single.log_severity_level = 3
        single.intra_op_num_threads = 1
        self._query_session = self._query_graph(onnxruntime, single, path, cache)
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path()))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest

    def _query_graph(self, onnxruntime: Any, options: Any, source: Path, cache: Path) -> Any:
        """The int8 graph for questions (made once from the full one): a question is encoded
        in about half the time (2-3 ms less a search) and its vector stays near the full
        model's (cosine 0.95-0.97 in English, 0.91 in Japanese); stored messages keep the
        full model's vectors (bench/recall.py: recall the same or better). The full graph
        answers if this one cannot be made."""
        target = query_graph_path(cache)
        for _ in range(2):
            try:
                if not target.exists():
                    log.info("quantising the embedding model for questions to %s (once)", target)
                    quantize_graph(source, target)
                return onnxruntime.InferenceSession(
                    str(target), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # damaged: made again once; else the full graph asks
                log.warning("the question graph %s did not load (%s)", target, exc)
                target.unlink(missing_ok=True)
        return self._session

    def encode_query(self, text: str) -> np.ndarray:
        """One search question's vector, by the int8 graph."""
        return self._run(self._query_session, [text])[0]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(self._session, texts)

    def _run(self, session: Any, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        texts = [t[:MAX_CHARS] for t in texts]  # past the model's 256 word pieces anyway
        out = np.zeros((len(texts), 384), dtype=np.float32)
        # similar lengths batched together pad less
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            encoded = self._tokenizer.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            (vectors,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
            out[chunk] = vectors
        return out
