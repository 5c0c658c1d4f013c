"""`python -m simulator` runs the command line."""

from simulator.cli import run

run()
