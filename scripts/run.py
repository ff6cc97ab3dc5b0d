"""`make run`: the Procfile's web server and task worker on one machine, in one command, on
the embedded default (README.md, "Two commands").

    .venv/bin/python scripts/run.py [--port PORT]        (what `make run PORT=8001` runs)

A port something else listens on is refused at once, before anything starts: the web server
(uvicorn) would find out only after the migrations, and its one line would scroll by in honcho's
output. Then the embedded PostgreSQL and Redis start if they are not running (unless
DATABASE_URL / REDIS_URL name servers of one's own; config/embedded.py), the database is
prepared (migrate, seed_demo) and this process becomes honcho, which starts `web` and `worker`
and, on Ctrl-C, stops both (SIGTERM to each one's process group, SIGKILL to what is left after 5
seconds); the embedded engines keep running (`make stop`). Nothing here imports Django, so a
refusal is quick.
"""

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREPARE = (("migrate", "--noinput"), ("seed_demo",))
sys.path.insert(0, str(ROOT))

from config import embedded  # noqa: E402 (the checkout's, which imports no Django)


def port_number(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def why_busy(host: str, port: int) -> str | None:
    """Why the web server could not listen on host:port, or None. The probe binds as uvicorn
    does (SO_REUSEADDR), so a port left in TIME_WAIT by a server that just stopped counts as free
    and one with a listener, on this address or on all of them, does not."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def prepare(env: dict[str, str]) -> int:
    for command in PREPARE:
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env)
        if done.returncode != 0:
            print(f"run: manage.py {command[0]} failed (exit {done.returncode}).", file=sys.stderr)
            return done.returncode
    return 0


def engines(data_dir: Path) -> None:
    """The embedded engines the environment does not replace, started now if need be: a server
    that will not start is said here, in one line, before anything else runs."""
    up = []
    if not os.environ.get("DATABASE_URL"):
        embedded.postgres_url(data_dir)
        up.append("PostgreSQL")
    if not os.environ.get("REDIS_URL"):
        embedded.redis_url(data_dir)
        up.append("Redis")
    if up:
        print(f"run: {' and '.join(up)} up under {data_dir} (`make stop` stops them).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=port_number, default=port_number("8000"))
    port = parser.parse_args(argv).port
    host = os.environ.get("WEB_BIND", "127.0.0.1")
    problem = why_busy(host, port)
    if problem is not None:
        print(
            f"run: cannot serve on {host}:{port}: {problem}. Another server (an earlier "
            f"`make run`?) is listening there: stop it, or pick another port: "
            f"make run PORT={port + 1}",
            file=sys.stderr,
        )
        return 1
    # The Procfile's `python` and `uvicorn` are this virtualenv's; output unbuffered, so each
    # line shows up in honcho's output as it is printed.
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "PYTHONUNBUFFERED": "1",
    }
    try:
        engines(embedded.data_dir_from_env(ROOT))
    except embedded.EngineError as exc:
        print(f"run: {exc.code}", file=sys.stderr)
        return 1
    status = prepare(env)
    if status != 0:
        return status
    print(f"run: serving http://{host}:{port}/ — Ctrl-C stops the web server and the worker.")
    sys.stdout.flush()
    os.chdir(ROOT)
    os.execve(sys.executable, [sys.executable, "-m", "honcho", "start", "--port", str(port)], env)


if __name__ == "__main__":
    sys.exit(main())
