"""Proven independence: keys, DSSE envelopes, signed evidence, signed verdicts (docs/spec.md §8).

Modules that need ``cryptography`` (``dsse``, ``keys``, ``evidence``, ``verdicts``) are imported
only where signing or signed mode is used, so an unsigned verification never loads it. This
package imports nothing on its own for the same reason; ``pubkey`` and ``canonical`` are pure.
"""
