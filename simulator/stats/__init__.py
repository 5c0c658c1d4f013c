"""Statistics primitives, free of run records: intervals and bounds (Wilson, rule of three, scenario-clustered),
paired and two-sample tests, agreement, effect sizes, corrections, and the one shape of a rate as report data."""
