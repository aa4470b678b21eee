"""The texts whose every version is kept (a scope's notes, the owner's SOUL.md and skills),
read and reverted as one kind of thing. It sits above `memory` and `skills`, which each write
their own texts, so neither needs the other to find a text by name."""
