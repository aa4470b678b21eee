"""SQL conditions on `messages` rows that the schema, search and vectors all use: one leaf
module they import, so none of them imports another for a string."""

from hermes.store.vector_sql import PG_ASKS_BACK, PG_ONLY_ASKS, PG_TELLS_WHEN, conversational

CONVERSATIONAL = conversational("")
"""A message that is part of the conversation (not tool traffic, not empty)."""
ONLY_ASKS = PG_ONLY_ASKS
"""`store.base.only_asks` in SQL: a question and nothing else (ends with "?", no "." or "!")."""
ASKS_BACK = PG_ASKS_BACK
"""`search_contract.asks_back` in SQL: ends with a question mark."""
TELLS_WHEN = PG_TELLS_WHEN
"""`search_contract.tells_when` in SQL: says when something happened."""
