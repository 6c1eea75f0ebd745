"""The Textual face over the core."""
