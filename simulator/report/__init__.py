"""Reports of a run: one data model (`model.py`) rendered to terminal, HTML, JSON and JUnit."""
