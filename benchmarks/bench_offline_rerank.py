"""Offline rerank on the two dev sets: the shipped all-MiniLM-L6-v2 over every window of the top
fused candidates (`windows`) or by late interaction over its token vectors (`late`), blended
with the fused order, against the fused list.

Usage:
  PYTHONPATH=. HF_HUB_OFFLINE=1 python benchmarks/bench_offline_rerank.py \
      [--sets swe,nl] [--variants windows:max@20,windows:rrf@20,...] \
      [--repos /work/.mirror] [--index-dir /tmp/rerank-idx] [--out /tmp/rerank-out]

No cross-encoder ships offline, so this measures rerankers made of what does ship, the
bi-encoder all-MiniLM-L6-v2. `windows` embeds every window (stripe) of each of the top N
fused candidates (the dense stage embeds only the first) and scores a candidate by its best
window's cosine to the query; `late` scores a window by late interaction (each query token's
best cosine among the window's token vectors, the ONNX model's last_hidden_state, averaged)
and keeps the best window. BLEND mixes that score with the fused order the candidates come in:
`max` (the model alone), `rrf` (RRF, k = 60, of fused order and model order) or `weighted`
(half min-max model score, half linearly falling fused position).

Each variant `SCORER:BLEND@N` is one `run_eval` of modes bm25, fused and rerank with
rerank_candidates = N, the eval CLI's defaults (lines:64, split+path; SWE-bench: '*.py'
without tests) and the paired bootstrap against fused (file MRR on SWE-bench dev, semble's
NDCG@10 on the NL dev set), as `coderag eval ... --modes bm25,fused,rerank --baseline fused`
would if coderag had this reranker: `offline_reranker` stands it in for the cross-encoder
resolution. None of the variants beat fused on both sets, so the package keeps none of them
(benchmarks/README.md, "Offline rerank: measured, not adopted").

The first variant of a scorer embeds the windows the dense index lacks (its rerank
time is the cold one); later variants read them from the embedding cache (warm). The rerank
ranking keeps only its N candidates, so a gold file outside the fused top N counts as
missed for rerank where fused still credits its deeper rank (MRR only; Acc@1/5 are fair).
Prints one table per set and writes each run's JSON to --out. Asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.core.eval.datasets import CandidateFilter, load_dataset
from coderag_tui.core.eval.evaluation import TOKENIZERS, EvalReport, Grid, run_eval
from coderag_tui.core.eval.metrics import SEMBLE_NDCG
from coderag_tui.core.hashing import text_hash
from coderag_tui.core.index.store import EmbeddingCache
from coderag_tui.core.rank import rerank as rerank_module
from coderag_tui.core.rank.dense import STRIPE_OVERLAP, VectorCache, split_stripes, stripe_window
from coderag_tui.core.rank.embed import WindowedEmbedder
from coderag_tui.core.rank.embedders import resolve_embedder
from coderag_tui.core.rank.rerank import RerankerChoice
from coderag_tui.settings import Settings

WINDOWS = "windows"
LATE = "late"
OFFLINE_RERANKERS = (WINDOWS, LATE)
BLEND_RRF_K = 60  # the pipeline's own RRF constant
BLEND_WEIGHT = 0.5  # share of the window score in the weighted blend


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each score, higher first; ties keep the earlier (better fused) one."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def blend_max(model: np.ndarray) -> np.ndarray:
    """The model's score alone (the fused order only breaks ties, as the sort is stable)."""
    return model


def blend_rrf(model: np.ndarray) -> np.ndarray:
    """Reciprocal rank fusion of the fused order and the model's order."""
    fused = np.arange(1, len(model) + 1, dtype=np.float64)
    return 1.0 / (BLEND_RRF_K + fused) + 1.0 / (BLEND_RRF_K + _ranks(model))


def blend_weighted(model: np.ndarray) -> np.ndarray:
    """Min-max scaled model score and linearly falling fused position, half each."""
    n = len(model)
    fused = 1.0 - np.arange(n, dtype=np.float64) / max(n, 1)
    span = float(model.max() - model.min()) if n else 0.0
    scaled = (model - model.min()) / span if span > 0 else np.zeros(n)
    return BLEND_WEIGHT * scaled + (1.0 - BLEND_WEIGHT) * fused


BLENDS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "max": blend_max,
    "rrf": blend_rrf,
    "weighted": blend_weighted,
}
DEFAULT_BLEND = "rrf"


def parse_spec(spec: str) -> tuple[str, str] | None:
    """`windows:rrf` -> ("windows", "rrf"); None when `spec` names no offline reranker.

    Raises ValueError for a known reranker with an unknown blend.
    """
    scorer, _, blend = spec.strip().lower().partition(":")
    if scorer not in OFFLINE_RERANKERS:
        return None
    blend = blend or DEFAULT_BLEND
    if blend not in BLENDS:
        raise ValueError(
            f"unknown blend {blend!r} in rerank model {spec!r}: use {', '.join(BLENDS)}"
        )
    return scorer, blend


class WindowReranker:
    """Reranks fused candidates with the shipped bi-encoder over every window of each.

    `score` expects the texts in fused order, best first, as the Searcher passes them: the
    blend reads a candidate's position as its fused rank.
    """

    def __init__(
        self,
        embedder: WindowedEmbedder,
        *,
        scorer: str = WINDOWS,
        blend: str = DEFAULT_BLEND,
        cache: VectorCache | None = None,
        overlap: int = STRIPE_OVERLAP,
    ) -> None:
        if scorer not in OFFLINE_RERANKERS:
            raise ValueError(f"unknown scorer {scorer!r}: use {', '.join(OFFLINE_RERANKERS)}")
        if blend not in BLENDS:
            raise ValueError(f"unknown blend {blend!r}: use {', '.join(BLENDS)}")
        self.embedder = embedder
        self.scorer = scorer
        self.blend = blend
        self.cache = cache
        self.overlap = overlap
        self.tokenizer, self.window = stripe_window(embedder)
        self.name = f"{scorer}:{blend} ({embedder.name})"
        self._query: tuple[str, np.ndarray] | None = None
        self._session: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text (higher is better): the blend of fused position and model score."""
        if not texts:
            return []
        model = self.model_scores(query, texts)
        return [float(x) for x in BLENDS[self.blend](model)]

    def model_scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's own score of each text, before blending with the fused order."""
        stripes = split_stripes(texts, self.tokenizer, self.window, self.overlap)
        if self.scorer == LATE:
            raw = self._late_scores(query, stripes.texts)
        else:
            raw = self._stripe_vectors(stripes.texts) @ self._query_vector(query)
        best = np.full(len(texts), -np.inf)
        np.maximum.at(best, stripes.chunk_of, raw.astype(np.float64))
        return best

    # ---------------------------------------------------------------- windows (cosine)
    def _query_vector(self, query: str) -> np.ndarray:
        """The query's vector; the last one is kept (the dense stage just embedded it too)."""
        if self._query is None or self._query[0] != query:
            self._query = (query, np.asarray(self.embedder.embed_query(query), dtype=np.float32))
        return self._query[1]

    def _stripe_vectors(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of the stripes: cached ones looked up, the rest embedded and cached."""
        hashes = [text_hash(t) for t in texts]
        known: dict[str, np.ndarray] = {}
        if self.cache is not None:
            known.update(self.cache.get_many(self.embedder.name, hashes))
        missing = list(dict.fromkeys(h for h in hashes if h not in known))
        if missing:
            first = {h: i for i, h in reversed(list(enumerate(hashes)))}
            rows = self.embedder.embed_documents([texts[first[h]] for h in missing])
            fresh = [np.asarray(r, dtype=np.float32) for r in rows]
            known.update(zip(missing, fresh, strict=True))
            if self.cache is not None:
                self.cache.put_many(self.embedder.name, list(zip(missing, fresh, strict=True)))
        return np.stack([np.asarray(known[h], dtype=np.float32).reshape(-1) for h in hashes])

    # ---------------------------------------------------------------- late interaction
    def _late_scores(self, query: str, texts: list[str]) -> np.ndarray:
        """Each query token's best cosine over a stripe's tokens, averaged over the query."""
        [q] = self._token_vectors([query])
        out = np.empty(len(texts), dtype=np.float64)
        for i, d in enumerate(self._token_vectors(texts)):
            out[i] = float((q @ d.T).max(axis=1).mean())
        return out

    def _token_vectors(self, texts: list[str]) -> list[np.ndarray]:
        """Unit last-hidden-state vectors of each text's tokens ([CLS]/[SEP] left out)."""
        session = self._onnx_session()
        specials = self.tokenizer.encode("", add_special_tokens=True).ids
        cls_id, sep_id = specials[0], specials[-1]
        out: list[np.ndarray] = []
        for text in texts:
            ids = self.tokenizer.encode(text, add_special_tokens=False).ids[: self.window]
            full = np.asarray([[cls_id, *ids, sep_id]], dtype=np.int64)
            feeds = {"input_ids": full, "attention_mask": np.ones_like(full)}
            if "token_type_ids" in {i.name for i in session.get_inputs()}:
                feeds["token_type_ids"] = np.zeros_like(full)
            hidden = np.asarray(session.run(None, feeds)[0][0, 1:-1], dtype=np.float32)
            if not len(hidden):
                hidden = np.zeros((1, hidden.shape[-1] or 1), dtype=np.float32)
            norms = np.linalg.norm(hidden, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            out.append(hidden / norms)
        return out

    def _onnx_session(self) -> Any:
        """The embedder's onnxruntime session (late interaction needs the ONNX export)."""
        if self._session is None:
            inner = getattr(getattr(self.embedder, "model", None), "model", None)
            session = getattr(inner, "model", None)
            if session is None or not hasattr(session, "run"):
                raise ValueError(
                    "late-interaction reranking needs the ONNX copy of all-MiniLM-L6-v2: "
                    "install fastembed so coderag can export it"
                )
            self._session = session
        return self._session


HERE = Path(__file__).resolve().parent.parent
SETS = {
    "swe": (
        HERE.parent / "shared" / "bench" / "swe_bench_lite_dev.jsonl",
        CandidateFilter(include=("*.py",), exclude_tests=True),
    ),
    "nl": (HERE.parent / "shared" / "bench" / "nl_dev.jsonl", CandidateFilter()),
}
TOKENIZER_NAMES = {flags: name for name, flags in TOKENIZERS.items()}
DEFAULT_VARIANTS = (
    "windows:max@20",
    "windows:rrf@20",
    "windows:weighted@20",
    "windows:rrf@30",
    "late:rrf@20",
)


@contextlib.contextmanager
def offline_reranker(reranker: WindowReranker) -> Iterator[None]:
    """Make `run_eval` rerank with `reranker`: coderag's own resolution knows cross-encoders
    only (no offline reranker is kept in the package; see benchmarks/README.md)."""
    original = rerank_module.resolve_reranker
    rerank_module.resolve_reranker = lambda settings: RerankerChoice(reranker, "")
    try:
        yield
    finally:
        rerank_module.resolve_reranker = original


def _parse_variant(text: str) -> tuple[str, int]:
    spec, _, n = text.partition("@")
    return spec, int(n or 20)


def _row(report: EvalReport, mode: str) -> dict[str, float | str | None]:
    """The main numbers of one mode of a report, and its verdict against fused."""
    summary = next(s for s in report.summaries if s.mode == mode)
    out: dict[str, float | str | None] = {
        "mrr": summary.scores.get("mrr"),
        "acc@1": summary.scores.get("acc@1"),
        "acc@5": summary.scores.get("acc@5"),
        SEMBLE_NDCG: summary.semble.overall.ndcg10 if summary.semble is not None else None,
        "stage_ms": summary.stage_ms.get("rerank"),
        "verdict": "",
    }
    for c in report.comparisons:
        if c.candidate[0] == mode:
            i = c.interval
            out["verdict"] = f"{i.verdict} ({i.mean_diff:+.3f} [{i.low:+.3f}, {i.high:+.3f}])"
    return out


def _fmt(value: float | str | None, scale: float = 1.0) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, str):
        return value
    return f"{value * scale:.3f}" if scale == 1.0 else f"{value * scale:.1f}"


def _ms(value: float | str | None) -> str:
    return f"{value:.0f}" if isinstance(value, float) else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--sets", default="swe,nl")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    parser.add_argument("--repos", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--index-dir", type=Path, default=Path("/tmp/rerank-idx"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/rerank-out"))
    parser.add_argument("--limit", type=int, default=None, help="only the first N rows")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    variants = [_parse_variant(v) for v in args.variants.split(",") if v.strip()]
    base = Settings(repo=Path.cwd()).with_(index_dir=args.index_dir)
    shape = base.chunking_spec
    chunking = shape.strategy if shape.strategy == "file" else f"{shape.strategy}:{shape.lines}"
    tokenizer = TOKENIZER_NAMES[(base.split_identifiers, base.path_in_text)]
    choice = resolve_embedder(base)  # loaded once, shared by dense and every reranker
    embedder = choice.embedder
    if not isinstance(embedder, WindowedEmbedder):
        raise SystemExit(f"no embedding model to rerank with: {choice.reason}")
    cache = EmbeddingCache.open(base.embed_cache_path)
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        dataset, candidates = SETS[name]
        rows = load_dataset(dataset)[: args.limit]
        grid = Grid(
            modes=("bm25", "fused", "rerank"),
            chunkings=(chunking,),
            tokenizers=(tokenizer,),
            candidates=candidates,
        )
        lines = [
            f"## {name}: {dataset.name} ({len(rows)} rows)",
            "| variant | N | MRR | Acc@1 | Acc@5 | NDCG@10 semble | rerank p50 ms | vs fused |",
            "|---|---|---|---|---|---|---|---|",
        ]
        fused_row: dict[str, float | str | None] | None = None
        for spec, n in variants:
            parsed = parse_spec(spec)
            if parsed is None:
                raise SystemExit(f"unknown variant {spec!r}: use windows:BLEND@N or late:BLEND@N")
            scorer, blend = parsed
            reranker = WindowReranker(embedder, scorer=scorer, blend=blend, cache=cache)
            settings = base.with_(rerank_candidates=n)
            started = time.perf_counter()
            with offline_reranker(reranker):
                report = run_eval(
                    rows,
                    settings,
                    grid,
                    repos_dir=args.repos,
                    embedder=embedder,
                    baseline=("fused", chunking, tokenizer),
                )
            wall = time.perf_counter() - started
            tag = f"{name}-{spec.replace(':', '-')}-{n}"
            (args.out / f"{tag}.json").write_text(json.dumps(report.to_json(), indent=1))
            if fused_row is None:
                fused_row = _row(report, "fused")
                lines.append(
                    f"| fused | - | {_fmt(fused_row['mrr'])} | {_fmt(fused_row['acc@1'], 100)} "
                    f"| {_fmt(fused_row['acc@5'], 100)} | {_fmt(fused_row[SEMBLE_NDCG])} | - | - |"
                )
            r = _row(report, "rerank") if any(s.mode == "rerank" for s in report.summaries) else {}
            if not r:
                lines.append(f"| {spec} | {n} | rerank unavailable: {'; '.join(report.notes)} |")
                continue
            lines.append(
                f"| {spec} | {n} | {_fmt(r['mrr'])} | {_fmt(r['acc@1'], 100)} "
                f"| {_fmt(r['acc@5'], 100)} | {_fmt(r[SEMBLE_NDCG])} "
                f"| {_ms(r['stage_ms'])} | {r['verdict']} |"
            )
            print(lines[-1], f"(wall {wall:.0f} s)", flush=True)
        text = "\n".join(lines)
        print(text, flush=True)
        (args.out / f"{name}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
