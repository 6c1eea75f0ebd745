"""The pure core: indexing, ranking, packing and evaluation. Never imports textual."""
