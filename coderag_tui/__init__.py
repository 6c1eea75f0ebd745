"""coderag: rank a repository's code for a question and pack it into an LLM prompt."""

__version__ = "0.1.0"
