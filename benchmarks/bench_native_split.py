"""Would a native splitter make the BM25 build faster? coderag's against the candidates.

    PYTHONPATH=. python benchmarks/bench_native_split.py [--source DIR] [--runs 3]

The corpus is every `.py` file under the folder (default: the running interpreter's standard
library without site-packages), cut into the index's 64-line windows. Each way is timed
(wall, median of --runs, in this one process, interleaved) from chunk texts to one number per
word occurrence (the vocabulary numbers BM25 counts), split on what coderag's word splitter
splits on for ASCII text (runs of letters, digits and underscores):

* `coderag words`: `words.split_words` per chunk (str.translate + str.split, in C), then each
  word looked up in a dict that numbers it (`map` over the dict, in C for every word seen).
* `coderag build`: the whole `Postings.from_chunks` of the shipped tokenizer (identifier parts
  and path words added, counted per chunk): what the cold index waits for.
* `hf tokenizers`: Hugging Face `tokenizers` (Rust; installed with fastembed), a WordLevel
  model over a Split pre-tokenizer: its trainer builds the vocabulary, then
  `encode_batch_fast` numbers every word, on every core.
* `pyarrow`, `polars` (C++ and Rust, when installed; neither is a dependency): a regex split
  of the whole column, flattened and dictionary-encoded / exploded.
* `tantivy regex`, `tantivy tokens` (Rust, when installed; not a dependency): tantivy as the
  lexical engine, an index in memory built and committed with 2 threads, either from the raw
  texts with its regex tokenizer (no identifier parts: other tokens) or from coderag's own BM25
  words joined by spaces with its whitespace tokenizer (the same tokens; the time includes
  making them). Their counts are of documents, not words: tantivy does not say.

It prints each median, the words each made (they must agree) and the load average at start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.rank.lexical import BM25Options, Postings, chunk_tokens
from coderag_tui.core.rank.words import split_words
from coderag_tui.core.records import Chunk, ChunkingSpec

ASCII_WORD_GAPS = r"[^A-Za-z0-9_]+"


def stdlib_chunks(source: Path) -> list[Chunk]:
    spec = ChunkingSpec.parse("lines:64")
    chunks: list[Chunk] = []
    for path in sorted(source.rglob("*.py")):
        if "site-packages" in path.parts or "__pycache__" in path.parts or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        chunks += chunk_file(path.relative_to(source).as_posix(), text, "python", spec)
    return chunks


class _Numbers(dict[str, int]):
    """A word's number, given the first time it is looked up (as the BM25 build numbers)."""

    def __missing__(self, word: str) -> int:
        number = self[word] = len(self)
        return number


def coderag_words(texts: list[str]) -> int:
    numbers = _Numbers()
    return sum(len(list(map(numbers.__getitem__, split_words(t, True)))) for t in texts)  # noqa: FBT003


def hf_tokenizers(texts: list[str]) -> int:
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="\x00"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(ASCII_WORD_GAPS), behavior="removed")
    trainer = trainers.WordLevelTrainer(
        vocab_size=1 << 24, min_frequency=0, special_tokens=["\x00"], show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    encoded = tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    return sum(len(e.ids) for e in encoded)


def pyarrow_split(texts: list[str]) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc

    words = pc.list_flatten(pc.split_pattern_regex(pa.array(texts), ASCII_WORD_GAPS))
    words = words.filter(pc.not_equal(words, ""))
    return len(pc.dictionary_encode(words).indices)


def polars_split(texts: list[str]) -> int:
    import polars as pl

    frame = pl.DataFrame({"text": texts}).with_row_index("doc")
    words = frame.select(
        pl.col("doc"), pl.col("text").str.extract_all(r"[A-Za-z0-9_]+").alias("word")
    ).explode("word")
    return int(words.drop_nulls()["word"].cast(pl.Categorical).to_physical().len())


def tantivy_index(docs: list[str], *, regex: bool) -> int:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="code")
    index = tantivy.Index(builder.build())
    split = tantivy.Tokenizer.regex("[A-Za-z0-9_]+") if regex else tantivy.Tokenizer.whitespace()
    analyzer = tantivy.TextAnalyzerBuilder(split)
    index.register_tokenizer(
        "code", (analyzer.filter(tantivy.Filter.lowercase()) if regex else analyzer).build()
    )
    writer = index.writer(heap_size=200_000_000, num_threads=2)
    for doc in docs:
        writer.add_document(tantivy.Document(body=doc))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return int(index.searcher().num_docs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    chunks = stdlib_chunks(args.source)
    texts = [c.text for c in chunks if c.text.isascii()]
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{len(chunks):,} chunks; {len(texts):,} all ASCII ({sum(map(len, texts)) / 1e6:.1f} MB)")
    options = BM25Options(split_identifiers=True, path_in_text=True)
    ways: dict[str, Callable[[], int]] = {
        "coderag words": lambda: coderag_words(texts),
        "coderag build": lambda: int(Postings.from_chunks(chunks, options).lengths.sum()),
        "hf tokenizers": lambda: hf_tokenizers(texts),
        "pyarrow": lambda: pyarrow_split(texts),
        "polars": lambda: polars_split(texts),
        "tantivy regex": lambda: tantivy_index([c.text for c in chunks], regex=True),
        "tantivy tokens": lambda: tantivy_index(
            [" ".join(chunk_tokens(c, options)) for c in chunks], regex=False
        ),
    }
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    made: dict[str, int] = {}
    for _ in range(args.runs):
        for name, way in ways.items():
            if name in made and made[name] < 0:
                continue
            started = time.perf_counter()
            try:
                made[name] = way()
            except ImportError as exc:
                made[name] = -1
                print(f"{name}: not installed ({exc.name}), left out")
                continue
            seconds[name].append(time.perf_counter() - started)
    print(f"{'way':<15} {'median s':>9} {'words':>12}")
    for name, times in seconds.items():
        if times:
            print(f"{name:<15} {statistics.median(times):>9.2f} {made[name]:>12,}")
    split = {
        made[n] for n in ("coderag words", "hf tokenizers", "pyarrow", "polars") if made[n] >= 0
    }
    print("the splitters agree on the words made" if len(split) == 1 else f"they differ: {split}")
    words = sum(len(split_words(t, True)) for t in texts)  # noqa: FBT003
    print(f"(coderag's split alone: {words:,} words; `coderag build` counts the identifier parts")
    print(" and the path words too, for every chunk)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
