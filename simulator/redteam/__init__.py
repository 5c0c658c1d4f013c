"""Adversarial patients, a feature slice: attack success per strategy and per clinical group, clustered over
vignettes, as a registered report analysis whose metrics gates and hazard controls can name."""
