"""Recall: finding what was said before, for the model's `session_search` and the CLI.

- `contract`: what a backend answers (`Searcher` as `store.search`, `VectorStore` as
  `store.vectors`), the only part the store imports;
- `scripts`: the scripts written without spaces, defined once for every backend;
- `query`: words, dates and hints read from a question;
- `ranking`: which views to ask and how the answers are combined;
- `semantic`: the nearest messages by meaning, over vectors the indexer stores;
- `search`: the `session_search` tool and the batch search the CLI runs.

Importing this package imports nothing else: the store depends on `contract` alone.
"""
