#!/usr/bin/env bash
# The development benchmarks (../shared/bench/): SWE-bench Lite dev issues -> the file the fix
# changed, and semble's plain questions (nl_dev.jsonl) -> the code that answers them, over the
# repositories at each row's base_commit.
#
#   benchmarks/run_dev_benchmark.sh [bm25|dense|nl|nl-dense|signals|ltr|ltr-dense|grid|all]
#                                                           (default: all = bm25, dense, nl)
#
#   bm25      SWE-bench: BM25 grid: lines:32, lines:64, lines:128, file x tokenizer default,
#             split, split+path
#   dense     SWE-bench: BM25, dense (offline MiniLM), fused and rerank (when a cross-encoder is
#             available offline) at 50-line windows and whole files, once with every stripe of
#             each chunk (dense-all-stripes) and once with the default (dense: dense_stripes =
#             auto, the first stripe of a line window, every stripe of a whole file);
#             embedding the five repositories takes tens of minutes per chunking on 2 cores (run
#             it once: the embedding cache makes a rerun fast)
#   nl        NL dev set: BM25 at the default chunking and tokenizer, scored by semble's
#             chunk-level NDCG@10 (per repository, category and language) beside the file-level
#             metrics; each row's benchmark_root is its candidate scope (no --include or
#             --exclude-tests)
#   nl-dense  NL dev set: bm25, dense and fused, with paired bootstrap intervals against bm25
#             (embeds ten repositories: tens of minutes the first time)
#   signals   both sets with dense off, so fused = BM25 + the code signals: bm25 and fused in
#             one run with a paired bootstrap against bm25 (signals.txt, nl-signals.txt), then
#             the ablation: fused with each signal off in turn (CODERAG_SIGNAL_*=0; roles and
#             same_file =1), one run per signal and set (signals-no-*.txt,
#             nl-signals-no-*.txt); ~1 min
#   ltr       both sets with dense off: the fused list and the learned reranker
#             (rerank_backend = learned) in one run, with a paired bootstrap against fused
#             (ltr.txt, nl-ltr.txt); ~1 min
#   ltr-dense the same with dense on (ltr-dense.txt, nl-ltr-dense.txt; embeds like nl-dense)
#   grid      the seed paper's splitter x scorer grid with dense off (issue 27): tokenizers
#             default, split+path, line, bpe x scorers bm25, iou on both sets (grid.txt,
#             nl-grid.txt), then a code-to-code check drawn from the NL set's repositories
#             (benchmarks/code_to_code_rows.py: 20 completion points each) with the
#             path-distance and imports lists beside them (code-grid.txt) and beside the
#             fused list (code-fused.txt); ~3 min
#
# Environment: CODERAG_BENCH_REPOS (default /work/.mirror: owner+name/repo, owner/name or name),
# CODERAG_BENCH_DENSE_CHUNKING (default lines:50,file),
# CODERAG_BENCH_DATASET (SWE-bench), CODERAG_BENCH_NL_DATASET (NL dev set),
# CODERAG_BENCH_OUT (results, indexes and trees; never the repository).
# Skips a benchmark with exit 0 when its repositories or dataset are absent; CI does not run it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-all}"
repos="${CODERAG_BENCH_REPOS:-/work/.mirror}"
dataset="${CODERAG_BENCH_DATASET:-$here/../shared/bench/swe_bench_lite_dev.jsonl}"
nl_dataset="${CODERAG_BENCH_NL_DATASET:-$here/../shared/bench/nl_dev.jsonl}"
out="${CODERAG_BENCH_OUT:-${XDG_CACHE_HOME:-$HOME/.cache}/coderag/dev-bench}"
# The script's own variables, read; unset so that coderag does not warn of unknown settings.
unset CODERAG_BENCH_OUT CODERAG_BENCH_DATASET CODERAG_BENCH_NL_DATASET

case "$what" in bm25|dense|nl|nl-dense|signals|ltr|ltr-dense|grid|all) ;;
  *) echo "usage: $0 [bm25|dense|nl|nl-dense|signals|ltr|ltr-dense|grid|all]" >&2; exit 2 ;; esac

ready() {  # ready LABEL DATASET VAR OWNER/NAME...: whether the dataset and a repository are here
  local label="$1" data="$2" var="$3"; shift 3
  if [ ! -f "$data" ]; then
    echo "$label skipped: no dataset at $data (set $var)."
    return 1
  fi
  local found=0 name plus dir
  for name in "$@"; do
    plus="${name/\//+}"
    for dir in "$repos/$plus/repo" "$repos/$plus" "$repos/$name" "$repos/${name#*/}"; do
      if [ -e "$dir/HEAD" ] || [ -e "$dir/.git" ]; then found=$((found + 1)); break; fi
    done
  done
  if [ "$found" -eq 0 ]; then
    echo "$label skipped: none of its repositories is under $repos (set CODERAG_BENCH_REPOS)."
    return 1
  fi
  echo "$label: $found of $# repositories found under $repos; results in $out"
}

swe=0; nl=0
case "$what" in bm25|dense|signals|ltr|ltr-dense|grid|all)
  ready "dev benchmark" "$dataset" CODERAG_BENCH_DATASET marshmallow-code/marshmallow \
    pvlib/pvlib-python pydicom/pydicom pylint-dev/astroid sqlfluff/sqlfluff && swe=1 ;; esac
case "$what" in nl|nl-dense|signals|ltr|ltr-dense|grid|all)
  ready "NL dev benchmark" "$nl_dataset" CODERAG_BENCH_NL_DATASET Seldaek/monolog \
    colinhacks/zod expressjs/express fastapi/fastapi gin-gonic/gin google/gson pallets/click \
    psf/requests sinatra/sinatra tokio-rs/axum && nl=1 ;; esac
if [ "$swe" -eq 0 ] && [ "$nl" -eq 0 ]; then
  exit 0
fi
mkdir -p "$out"

if command -v coderag >/dev/null 2>&1; then
  coderag=(coderag)
else
  py="$here/.venv/bin/python"; [ -x "$py" ] || py=python3
  coderag=(env "PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH}" "$py" -m coderag_tui)
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
shared=(--repos "$repos" --index-dir "$out/index" --tree-cache "$out/trees")
# SWE-bench candidates as in benchmarks/README.md's reference: non-test .py files at base_commit.
common=(eval "$dataset" "${shared[@]}" --include '*.py' --exclude-tests)
# NL dev set: each row's benchmark_root scopes the candidates.
nl_common=(eval "$nl_dataset" "${shared[@]}")

run() {  # run NAME ARGS...: table to NAME.txt (and the terminal), JSON to NAME.json, CSV to NAME.csv
  local name="$1"; shift
  local start=$SECONDS
  "${coderag[@]}" "$@" --csv "$out/$name.csv" --json-file "$out/$name.json" \
    --markdown "$out/$name.md" \
    | tee "$out/$name.txt"
  echo "$name: $((SECONDS - start)) s wall"
}

if [ "$swe" -eq 1 ] && { [ "$what" = bm25 ] || [ "$what" = all ]; }; then
  run bm25 "${common[@]}" --modes bm25 --chunking lines:32,lines:64,lines:128,file \
    --tokenizer default,split,split+path
fi
if [ "$nl" -eq 1 ] && { [ "$what" = nl ] || [ "$what" = all ]; }; then
  run nl "${nl_common[@]}" --modes bm25
fi
if [ "$swe" -eq 1 ] && { [ "$what" = dense ] || [ "$what" = all ]; }; then
  nice -n 10 true 2>/dev/null && coderag=(nice -n 10 "${coderag[@]}")
  dense_chunking="${CODERAG_BENCH_DENSE_CHUNKING:-lines:50,file}"
  unset CODERAG_BENCH_DENSE_CHUNKING
  run dense-all-stripes "${common[@]}" --modes bm25,dense,fused,rerank \
    --chunking "$dense_chunking" --tokenizer default,split+path --dense-stripes 0
  run dense "${common[@]}" --modes dense,fused,rerank --chunking "$dense_chunking" \
    --tokenizer split+path
fi
if [ "$nl" -eq 1 ] && [ "$what" = nl-dense ]; then
  nice -n 10 true 2>/dev/null && coderag=(nice -n 10 "${coderag[@]}")
  run nl-dense "${nl_common[@]}" --modes bm25,dense,fused --baseline bm25
fi
if [ "$what" = signals ]; then
  # Dense off: the fused list is BM25 plus the signals at their default weights.
  export CODERAG_EMBED_BACKEND=none
  if [ "$swe" -eq 1 ]; then
    run signals "${common[@]}" --modes bm25,fused --baseline bm25
  fi
  if [ "$nl" -eq 1 ]; then
    run nl-signals "${nl_common[@]}" --modes bm25,fused --baseline bm25
  fi
  for off in definitions=0 forms=0 path=0 coherence=0 roles=1 same_file=1 issue_terms=0; do
    name="${off%%=*}"
    var="CODERAG_SIGNAL_$(echo "$name" | tr '[:lower:]' '[:upper:]')"
    if [ "$swe" -eq 1 ]; then
      env "$var=${off#*=}" "${coderag[@]}" "${common[@]}" --modes fused \
        --json-file "$out/signals-no-$name.json" > "$out/signals-no-$name.txt"
    fi
    if [ "$nl" -eq 1 ]; then
      env "$var=${off#*=}" "${coderag[@]}" "${nl_common[@]}" --modes fused \
        --json-file "$out/nl-signals-no-$name.json" > "$out/nl-signals-no-$name.txt"
    fi
    echo "ablation: $name off -> $out/signals-no-$name.txt, $out/nl-signals-no-$name.txt"
  done
fi
if [ "$what" = ltr ] || [ "$what" = ltr-dense ]; then
  export CODERAG_RERANK_BACKEND=learned
  suffix=""
  if [ "$what" = ltr ]; then
    export CODERAG_EMBED_BACKEND=none
  else
    suffix="-dense"
    nice -n 10 true 2>/dev/null && coderag=(nice -n 10 "${coderag[@]}")
  fi
  if [ "$swe" -eq 1 ]; then
    run "ltr$suffix" "${common[@]}" --modes fused,rerank --baseline fused
  fi
  if [ "$nl" -eq 1 ]; then
    run "nl-ltr$suffix" "${nl_common[@]}" --modes fused,rerank --baseline fused
  fi
fi
if [ "$what" = grid ]; then
  export CODERAG_EMBED_BACKEND=none
  grid=(--tokenizer default,split+path,line,bpe --scorer bm25,iou --baseline "bm25 split+path")
  if [ "$swe" -eq 1 ]; then
    run grid "${common[@]}" --modes bm25 "${grid[@]}"
  fi
  if [ "$nl" -eq 1 ]; then
    run nl-grid "${nl_common[@]}" --modes bm25 "${grid[@]}"
    # the interpreter coderag runs in (its script's #! line when it is installed)
    [ -n "${py:-}" ] || py="$(head -1 "$(command -v coderag)" | sed 's/^#!//')"
    env "PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH}" "$py" \
      "$here/benchmarks/code_to_code_rows.py" "$out/code_rows.jsonl" --dataset "$nl_dataset" \
      --repos "$repos" --tree-cache "$out/trees"
    run code-grid eval "$out/code_rows.jsonl" "${shared[@]}" \
      --modes bm25,path-distance,imports "${grid[@]}"
    run code-fused eval "$out/code_rows.jsonl" "${shared[@]}" \
      --modes bm25,fused,path-distance,imports --baseline fused
  fi
fi
