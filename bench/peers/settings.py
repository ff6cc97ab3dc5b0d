"""The project's settings plus the peer history libraries and the bench's `peers` app (models
tracked by each library). Only bench/peer_overhead.py uses them."""

from config.settings import *  # noqa: F403
from config.settings import INSTALLED_APPS

INSTALLED_APPS = [
    *INSTALLED_APPS,
    "simple_history",
    "pgtrigger",
    "pghistory",
    "reversion",
    "peers",
]
