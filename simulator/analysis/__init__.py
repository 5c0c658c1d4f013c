"""Reading a run: the run's data with its labels, the one verdict selector, and the metrics the report is built from."""
