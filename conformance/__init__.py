"""Language-neutral conformance vectors for Completion Claim verifiers (see README.md)."""
