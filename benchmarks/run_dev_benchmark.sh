#!/usr/bin/env bash
# The development benchmark (../shared/bench/): SWE-bench Lite dev issues -> the file the fix
# changed, over the repositories at each instance's base_commit.
#
#   benchmarks/run_dev_benchmark.sh [bm25|dense|all]      (default: all)
#
#   bm25   BM25 grid: lines:32, lines:64, lines:128, file x tokenizer default, split, split+path
#   dense  BM25, dense (offline MiniLM), fused and rerank (when a cross-encoder is available
#          offline) at 50-line windows and whole files, once with every stripe of each chunk
#          (dense-all-stripes) and once with the default (dense: dense_stripes = auto, the
#          first stripe of a line window, every stripe of a whole file);
#          embedding the five repositories takes tens of minutes per chunking on 2 cores (run
#          it once: the embedding cache makes a rerun fast)
#
# Environment: CODERAG_BENCH_REPOS (default /work/.mirror: owner+name/repo, owner/name or name),
# CODERAG_BENCH_DENSE_CHUNKING (default lines:50,file),
# CODERAG_BENCH_DATASET, CODERAG_BENCH_OUT (results, indexes and trees; never the repository).
# Skips with exit 0 when the repositories or the dataset are absent; CI does not run it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-all}"
repos="${CODERAG_BENCH_REPOS:-/work/.mirror}"
dataset="${CODERAG_BENCH_DATASET:-$here/../shared/bench/swe_bench_lite_dev.jsonl}"
out="${CODERAG_BENCH_OUT:-${XDG_CACHE_HOME:-$HOME/.cache}/coderag/dev-bench}"

case "$what" in bm25|dense|all) ;; *) echo "usage: $0 [bm25|dense|all]" >&2; exit 2 ;; esac
if [ ! -f "$dataset" ]; then
  echo "dev benchmark skipped: no dataset at $dataset (set CODERAG_BENCH_DATASET)."
  exit 0
fi
found=0
for name in marshmallow-code/marshmallow pvlib/pvlib-python pydicom/pydicom pylint-dev/astroid \
            sqlfluff/sqlfluff; do
  plus="${name/\//+}"
  for dir in "$repos/$plus/repo" "$repos/$plus" "$repos/$name" "$repos/${name#*/}"; do
    if [ -e "$dir/HEAD" ] || [ -e "$dir/.git" ]; then found=$((found + 1)); break; fi
  done
done
if [ "$found" -eq 0 ]; then
  echo "dev benchmark skipped: none of its repositories is under $repos (set CODERAG_BENCH_REPOS)."
  exit 0
fi
echo "dev benchmark: $found of 5 repositories found under $repos; results in $out"
mkdir -p "$out"

if command -v coderag >/dev/null 2>&1; then
  coderag=(coderag)
else
  py="$here/.venv/bin/python"; [ -x "$py" ] || py=python3
  coderag=(env "PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH}" "$py" -m coderag_tui)
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
# Candidates as in the README's reference: non-test .py files at base_commit.
common=(eval "$dataset" --repos "$repos" --include '*.py' --exclude-tests
        --index-dir "$out/index" --tree-cache "$out/trees")

run() {  # run NAME ARGS...: table to NAME.txt (and the terminal), JSON to NAME.json, CSV to NAME.csv
  local name="$1"; shift
  local start=$SECONDS
  "${coderag[@]}" "${common[@]}" "$@" --csv "$out/$name.csv" --json-file "$out/$name.json" \
    --markdown "$out/$name.md" \
    | tee "$out/$name.txt"
  echo "$name: $((SECONDS - start)) s wall"
}

if [ "$what" = bm25 ] || [ "$what" = all ]; then
  run bm25 --modes bm25 --chunking lines:32,lines:64,lines:128,file \
    --tokenizer default,split,split+path
fi
if [ "$what" = dense ] || [ "$what" = all ]; then
  nice -n 10 true 2>/dev/null && coderag=(nice -n 10 "${coderag[@]}")
  dense_chunking="${CODERAG_BENCH_DENSE_CHUNKING:-lines:50,file}"
  run dense-all-stripes --modes bm25,dense,fused,rerank --chunking "$dense_chunking" \
    --tokenizer default,split+path --dense-stripes 0
  run dense --modes dense,fused,rerank --chunking "$dense_chunking" --tokenizer split+path
fi
