"""Observers: look at the world from outside the agent loop and write evidence (I/O lives here).

One module per check type; ``_common`` builds and records the evidence item.
"""
