"""SQL conditions on `messages` rows that the schema, search and vectors all use: one leaf
module they import, so none of them imports another for a string."""

CONVERSATIONAL = "role IN ('user', 'assistant') AND coalesce(content, '') <> ''"
"""A message that is part of the conversation (not tool traffic, not empty)."""
ONLY_ASKS = "(m.content ~ '[?？][[:space:]]*$' AND m.content !~ '[.!。！]')"
"""`store.base.only_asks` in SQL: a question and nothing else (ends with "?", no "." or "!")."""
