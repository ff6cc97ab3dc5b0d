"""Without Chromium, the run stops with one line saying what to install, before any test runs.
(Not a browser test itself: it needs no browser.)"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pytest_without_chromium(*args: str) -> subprocess.CompletedProcess:
    """pytest collecting the browser tests on a machine whose Chromium is not where the tests
    look for it."""
    script = (
        "import sys, pytest; import tests.browser.support as support; "
        "support.CHROMIUM = '/nonexistent/chromium'; "
        f"sys.exit(pytest.main({list(args)!r}))"
    )
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_browser_tests_without_chromium_stop_with_one_line_saying_what_to_install():
    result = pytest_without_chromium("tests/browser/test_live_table.py", "-q")
    output = result.stdout + result.stderr
    assert result.returncode == 4, output
    problem = [line for line in output.splitlines() if "/nonexistent/chromium" in line]
    assert len(problem) == 1, output
    assert "apt-get install chromium" in problem[0]
    assert "Traceback" not in output
    assert " passed" not in output and " failed" not in output


def test_leaving_the_browser_tests_out_runs_without_chromium():
    result = pytest_without_chromium(
        "tests/browser/test_live_table.py", "-q", "-m", "not browser", "--collect-only"
    )
    assert result.returncode == 5, result.stdout  # nothing collected, and no stop
    assert "/nonexistent/chromium" not in result.stdout + result.stderr
