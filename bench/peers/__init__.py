"""A bench-only Django app: the same creature row tracked by each peer history library, for
bench/peer_overhead.py. Installed only by `peers.settings`, never by the project's settings."""
