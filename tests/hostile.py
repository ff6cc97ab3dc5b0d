"""Hostile strings for fuzzing paths and query parameters, shared by the page and API fuzzers."""

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Strings that broke, or could break, a parser of ids and numbers.
TRICKY = [
    "²",
    "¹²",
    "٣",
    "１",
    "-1",
    "0",
    "+1",
    " 1",
    "1.0",
    "1e3",
    str(2**63),
    str(2**64),
    "9" * 40,
    "\x00",
    "1\x00",
    "not-a-uuid",
    "00000000-0000-0000-0000-000000000000",
    "true",
    "",
    "%",
    "%00",
    "../..",
    "🎲",
]
HOSTILE = st.one_of(st.sampled_from(TRICKY), st.integers().map(str), st.text(max_size=40))

# A fresh random seed each run (hypothesis's default); a failure prints the example and a blob to
# replay it with @reproduce_failure. Bounded so each fuzz test takes seconds.
FUZZ = settings(
    max_examples=40,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
