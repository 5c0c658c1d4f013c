"""`simulator collect`: the live service's traces received over OTLP/HTTP, assembled into conversations,
redacted, written to rolling run folders, judged on a sample, watched for drift (docs/collect.md)."""
