"""`simulator new hazards`: a whole hazard log shaped as DCB0129 asks (system definition, clinical risk
management, hazards with status, owner and dates, a test control and a control verified by review)."""

from __future__ import annotations

__all__ = ["HAZARD_LOG_TEMPLATE"]

HAZARD_LOG_TEMPLATE = """\
# A hazard log shaped as DCB0129 asks (docs/safety-case.md). Fill in every line; `simulator safety-case RUN
# --hazards THIS_FILE` judges its test controls on the runs and prints the document a CSO signs.
title: Hazard log
system:
  name: The assistant under test
  version: "0.1"                      # the release this log is about (the run records the bot's own identity)
  intended_use: What it is for and what it must never do.
  clinical_setting: Where and when it is used, by which service.
  users: [patients]
  interfaces: [web chat]
  exclusions: [who or what it is not for]
owner: Clinical Safety Officer
risk_management:
  plan: CRM-PLAN-001 v1.0             # your clinical risk management plan
  roles:
    - {role: Clinical Safety Officer, name: Your name (registration number)}
    - {role: Hazard log owner, name: Your name}
# Optional: expected use, to project incidents a month (a projection, not a measurement).
# exposure: {conversations_per_month: 10000, case_mix: {cardiac: 0.05}}
matrix: dcb0129   # severity minor..catastrophic x likelihood very_low..very_high, ratings 1-5
hazards:
  - id: HAZ-01
    title: What can go wrong
    cause: What in the system leads to it.
    effect: What happens to the patient.
    severity: catastrophic            # initial (uncontrolled) estimates on the matrix
    likelihood: medium
    status: open                      # open, monitoring, closed or transferred
    owner: Clinical Safety Officer
    raised: 2026-01-01
    reviewed: 2026-01-01
    # The CSO's residual estimate, used only when every control is verified by review:
    # residual_likelihood: low
    controls:
      - id: CTL-01a                   # a test control: verified by the runs' verdicts
        description: What the assistant does that keeps it from happening.
        criteria: [outcome.decision]      # outcome.<KEY>: your suite's outcome key
        tags: []                      # scenario tags of the verifying scenarios; none: every scenario
        threshold: under_triage <= 2%
      - id: CTL-01b                   # design, process, training or labelling: verified by review
        kind: process
        description: A clinician reviews the assistant's escalation rules before each release.
        evidence:
          document: release-review.md # a reference, or a file beside this log (its sha256 is recorded)
          reviewer: Your name
          reviewed: 2026-01-01
          judgement: The review is in place and recorded for every release.
"""
