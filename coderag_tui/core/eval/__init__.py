"""How well it works: datasets, retrieval metrics, evaluation grids and speed benchmarks."""
