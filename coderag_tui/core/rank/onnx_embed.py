"""A mean-pooled ONNX text encoder run by onnxruntime itself, for the shipped model's copies.

fastembed runs the same ONNX file to the same vectors, but importing it costs about a second
(its model tables, huggingface_hub and the image stack), and a search in a fresh process needs
one query vector: onnxruntime and the tokenizer alone take ~0.2 s. This encoder reads the
folder `embed.export_onnx` writes (fastembed's layout), tokenizes as fastembed does
(truncation to the tokenizer config's `model_max_length`, padding to the batch's longest) and
pools as fastembed does (the attention-masked mean, then unit length), so its vectors share
the embedding cache's entries with fastembed's (tests hold the two equal).

The query session runs on one thread (one short text runs ~2x faster than split across two);
the documents' session is opened only when documents are embedded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.core.rank import models as mr
from coderag_tui.core.rank.embed import WindowedEmbedder, prefixes_for
from coderag_tui.core.rank.models import read_json_object


def encoding_tokenizer(folder: Path) -> Any:
    """The folder's fast tokenizer set up as fastembed sets it: truncated to the tokenizer
    config's `model_max_length` (or `max_length`, the smaller), padded to the longest text of
    a batch with the pad token. Raises ValueError when the folder does not say them."""
    from tokenizers import Tokenizer

    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ValueError(f"{folder} has no tokenizer.json")
    config = read_json_object(folder / "tokenizer_config.json")
    limits = [
        value
        for value in (config.get("model_max_length"), config.get("max_length"))
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1_000_000
    ]
    if not limits:
        raise ValueError(f"{folder}/tokenizer_config.json does not say the model's window")
    tokenizer = Tokenizer.from_file(str(path))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(
        max_length=min(limits),
        direction=config.get("truncation_side") or truncation.get("direction", "right"),
    )
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or config.get("pad_token")
    if not isinstance(pad_token, str):
        raise ValueError(f"{folder} does not name a pad token")
    pad_id = padding.get("pad_id", read_json_object(folder / "config.json").get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise ValueError(f"{folder}: the pad token {pad_token!r} has no id")
    tokenizer.enable_padding(
        direction=config.get("padding_side") or padding.get("direction", "right"),
        pad_id=pad_id,
        pad_type_id=padding.get("pad_type_id", 0),
        pad_token=pad_token,
        length=None,
    )
    return tokenizer


class OnnxEmbedder(WindowedEmbedder):
    """A BERT-style ONNX model (last hidden state, mean-pooled) run by onnxruntime directly."""

    backend = mr.FASTEMBED  # the same runtime and vectors as fastembed's

    def __init__(self, folder: Path, name: str) -> None:
        model_file = mr.onnx_file(folder)
        if model_file is None:
            raise ValueError(f"{folder} has no model.onnx")
        self.folder = folder
        self.model_path = folder / model_file
        self._encoder = encoding_tokenizer(folder)
        self._sessions: dict[int, Any] = {}
        self._abandoned: mr.ModelTimeout | None = None
        self._lock = threading.Lock()
        max_tokens = int((self._encoder.truncation or {}).get("max_length") or 512)
        self._setup(name, self._encoder, max_tokens, prefixes_for(str(folder)))

    def _session(self, threads: int) -> Any:
        """An onnxruntime session on `threads` threads (0: onnxruntime's choice), made once;
        one that takes longer than `models.LOAD_TIMEOUT_S` to make is abandoned, and so is
        the model (ModelTimeout from then on)."""
        with self._lock:
            if self._abandoned is not None:
                raise self._abandoned
            session = self._sessions.get(threads)
            if session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                if threads:
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = threads
                path = str(self.model_path)
                try:
                    session = mr.bounded(
                        lambda: ort.InferenceSession(
                            path, sess_options=options, providers=["CPUExecutionProvider"]
                        ),
                        f"opening {self.model_path.name}",
                    )
                except mr.ModelTimeout as exc:
                    self._abandoned = exc
                    raise
                self._sessions[threads] = session
            return session

    def _run(self, texts: Sequence[str], threads: int) -> np.ndarray:
        session = self._session(threads)
        encoded = self._encoder.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        names = {node.name for node in session.get_inputs()}
        feed = {"input_ids": ids}
        if "attention_mask" in names:
            feed["attention_mask"] = mask
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        # fastembed's pooling: the masked mean summed in float64, then unit length
        summed = np.sum(hidden, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms, dtype=np.float32)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, 0)

    def _encode_query(self, text: str) -> np.ndarray:
        return np.asarray(self._run([text], 1)[0], dtype=np.float32)
