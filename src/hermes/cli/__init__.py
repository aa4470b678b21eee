"""The `hermes` command line: one module per command group."""
