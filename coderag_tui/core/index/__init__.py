"""What is in the repository: walk the files, chunk them, store files and chunks in SQLite."""
