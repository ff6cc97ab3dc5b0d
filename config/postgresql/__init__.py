"""Django's PostgreSQL backend with a checkout that survives a server restart (`base.py`)."""
