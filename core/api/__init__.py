"""REST plumbing shared by every API surface: strict JSON parsing, the error handler and its
documented bodies, base views and serializers, cursor pagination, the schema class."""
