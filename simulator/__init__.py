"""simulator: test LLM chatbots with simulated users, per-criterion judges and defensible error rates."""

__version__ = "0.1.0"
__all__ = ["__version__"]
