"""Authoring at scale, a feature slice: the coverage map of a suite against its hazard log and runs (which
cells have how many distinct vignettes, which are thin), and the checks a clinical team writes against."""
