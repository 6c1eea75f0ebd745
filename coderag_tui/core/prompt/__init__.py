"""What the LLM sees: token counts, greedy packing into a budget, templates, the clipboard."""
