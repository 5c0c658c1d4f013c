"""Example bots for the simulator: a rule-based triage bot (python adapter) and the same bot over HTTP."""
