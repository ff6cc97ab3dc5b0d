"""Project-wide plumbing every layer may import: the application error types, the outage
classifier, and the REST plumbing (parsers, error handler, base views, pagination). It imports
no project package."""
