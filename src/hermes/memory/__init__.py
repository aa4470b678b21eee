"""Memory: curated notes per scope, the memory tool and pass, and session search."""
