"""Sub-commands of the `simulator` CLI, one module per group."""
