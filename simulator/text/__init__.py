"""Words and their meaning, below the roles: what a message says (content words, whether it gives an outcome,
which fact or topic it answers, which option a fact supports), which language it is in, the speaker's voice,
persona styles and the end sentinel's misuse.

The offline user speaks with these functions and the judges read with the same ones, so a judge never imports
the simulated user (tests/test_layers.py) and the two cannot read a message two ways.
"""
