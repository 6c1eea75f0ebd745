"""Recall at a budget: the changed lines of a patch, what a packed prompt carries of the gold,
and the grep-and-read baseline, each on a hand-made case whose answer is counted by hand."""

from __future__ import annotations

from coderag_tui.core.eval.budget import parse_budgets, prompt_recall, read_whole
from coderag_tui.core.eval.gold_lines import changed_lines, line_sets
from coderag_tui.core.eval.metrics import GoldChunk
from coderag_tui.core.records import PackedBlock, PackedPrompt

PATCH = """diff --git a/pkg/a.py b/pkg/a.py
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -3,4 +3,4 @@ def f():
     x = 1
-    y = 2
+    y = 3
     z = 4
     return x
@@ -20,0 +21,2 @@ def g():
+    added()
+    again()
diff --git a/pkg/q.sql b/pkg/q.sql
--- a/pkg/q.sql
+++ b/pkg/q.sql
@@ -1,2 +1,1 @@
--- a comment removed
 SELECT 1;
diff --git a/pkg/new.py b/pkg/new.py
new file mode 100644
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1,1 @@
+print("new")
"""


def test_a_patch_names_the_original_lines_it_removes_and_where_it_inserts() -> None:
    found = changed_lines(PATCH)
    assert found == (
        GoldChunk("pkg/a.py", 4, 4),  # `y = 2` rewritten
        GoldChunk("pkg/a.py", 20, 21),  # inserted after line 20: lines 20 and 21 around it
        GoldChunk("pkg/q.sql", 1, 1),  # a removed `-- comment` line is not a file header
    )
    assert line_sets(found) == {"pkg/a.py": frozenset({4, 20, 21}), "pkg/q.sql": frozenset({1})}


def test_an_insertion_at_the_top_names_the_first_line() -> None:
    patch = "--- a/m.py\n+++ b/m.py\n@@ -0,0 +1 @@\n+import os\n"
    assert changed_lines(patch) == (GoldChunk("m.py", 1, 1),)


def _block(path: str, start: int, end: int, parts: tuple[tuple[int, int], ...] = ()) -> PackedBlock:
    return PackedBlock(path, start, end, "python", "", 10, (), 1, parts=parts)


def test_prompt_recall_counts_files_with_code_and_the_gold_lines_shown() -> None:
    packed = PackedPrompt(
        text="",
        tokens=900,
        budget=1000,
        encoding="cl100k_base",
        exact=True,
        blocks=(
            _block("a.py", 1, 30, parts=((1, 5), (20, 30))),  # lines 6-19 left out
            _block("c.py", 1, 9),
            _block("a.py", 40, 41),
        ),
    )
    gold_lines = {"a.py": frozenset({3, 4, 10, 41}), "b.py": frozenset({1})}
    score = prompt_recall(packed, ["a.py", "b.py"], gold_lines)
    assert score.file_recall == 0.5  # a.py in, b.py out
    assert score.line_recall == 3 / 5  # 3, 4 and 41 shown; 10 elided; b.py's line absent
    assert (score.tokens, score.blocks, score.files) == (900, 3, 2)
    assert prompt_recall(packed, ["c.py"], {}).line_recall is None  # no gold lines: no figure


def test_reading_whole_files_counts_a_file_once_it_is_read_within_the_budget() -> None:
    sizes = {"big.py": 1500, "gold.py": 400, "other.py": 300, "unreadable.py": None}
    whole = read_whole(
        ["unreadable.py", "big.py", "gold.py", "other.py"],
        sizes.get,
        ["gold.py"],
        {"gold.py": frozenset({2})},
        [1000, 2000, 4000],
    )
    assert whole.tokens_to_gold == 1900
    assert whole.at[1000].file_recall == 0.0 and whole.at[1000].tokens == 0
    assert whole.at[2000].file_recall == 1.0 and whole.at[2000].line_recall == 1.0
    assert (whole.at[2000].tokens, whole.at[2000].files) == (1900, 2)
    assert whole.at[4000].tokens == 2200


def test_budgets_parse_in_tokens_or_thousands() -> None:
    assert parse_budgets("2k, 1000,8k,1000") == (1000, 2000, 8000)


def test_the_account_says_what_the_prompt_saves_and_why_it_stopped() -> None:
    from coderag_tui.core.prompt.account import saved, stopped
    from coderag_tui.core.records import DroppedChunk

    blocks = (_block("a.py", 1, 9), _block("b.py", 1, 9), _block("c.py", 3, 4))
    packed = PackedPrompt(
        text="",
        tokens=40,
        budget=2000,
        encoding="cl100k_base",
        exact=True,
        blocks=(*blocks, PackedBlock("d.py", 1, 1, None, "", 7, (), 9, outline=True)),
        dropped=(
            DroppedChunk("e.py:1-9", 5, 90, "below the relevance floor"),
            DroppedChunk("f.py:1-9", 6, 90, "below the relevance floor"),
            DroppedChunk("g.py:1-9", 7, 90, "over budget"),
        ),
        stopped="relevance ended",
        files_tokens=84_212,
    )
    assert saved(packed) == (
        "3 files in 30 tokens; those files hold 84k tokens; 1 more file outlined (signatures)"
    )
    assert stopped(packed) == (
        "stopped: relevance ended; left out 2 below the relevance floor, 1 over budget"
    )
    small = PackedPrompt(
        text="", tokens=40, budget=2000, encoding="cl100k_base", exact=True, blocks=blocks,
        files_tokens=25,
    )  # fmt: skip
    assert saved(small) == "3 files whole in 30 tokens"
