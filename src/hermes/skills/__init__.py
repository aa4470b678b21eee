"""Skills: procedural memory on disk (SKILL.md files) that the agent reads on demand and writes."""
