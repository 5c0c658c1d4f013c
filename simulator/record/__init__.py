"""The run record: typed, versioned files that are the only link between writing and reading a run."""
