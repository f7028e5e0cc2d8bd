"""Executing jaxprs through XLA: planning (segments, host-driven control flow) and caches."""
