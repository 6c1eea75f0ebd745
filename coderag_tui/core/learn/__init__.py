"""Learning to rank from commit history: the pairs a repository's history carries, the
features the engine computes for them, and the fit of the learned reranker's model
(`core.rank.learned`). `coderag tune` and training/train_ranker.py are its faces."""
