"""How chunks are ordered for a query: BM25, dense vectors, fusion, rerank, and their models."""
