"""Running a suite: the conversation loop, the worker pool, progress."""
