"""Schema-driven fuzzing with schemathesis: requests generated from /api/schema/, valid and
invalid, and every response must be a documented status with a body of the documented shape. No
5xx, no schema violation, no invalid request accepted.

The requests go to a real Daphne through real sockets. Each run draws a fresh random seed and
prints it; `FUZZ_SEED=<seed>` replays a failure. Bounded in examples per operation and in time,
so a run takes well under two minutes."""

import os
import random
from collections.abc import Callable
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.conftest import PlayedTurn, play_turn
from tests.api.test_schema import CONTRACT
from tests.conftest import World

EXAMPLES = 6  # per operation and generation mode: 20 operations x 2 modes
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


def run_seed() -> int:
    chosen = os.environ.get("FUZZ_SEED") or random.SystemRandom().getrandbits(32)
    print(f"schemathesis seed {chosen}: replay a failure with FUZZ_SEED={chosen}")
    return int(chosen)


def known_ids(world: World, played: PlayedTurn) -> dict[str, Any]:
    return {
        "campaign_id": str(world.campaign.pk),
        "turn_id": played.turn.pk,
        "invocation_id": str(played.rows[0].pk),
        "creature_id": world.hero.pk,
    }


def owner_token(schema: Any, world: World, **transport: Any) -> str:
    """Signed in as an outside client would be: a token from the API, over the same transport."""
    credentials = {"username": world.owner.username, "password": "pw-owner"}
    case = schema["/api/auth/token/"]["POST"].Case(body=credentials, media_type="application/json")
    answer = case.call(**transport)
    assert answer.status_code == 200, answer.text
    return answer.json()["token"]


def fuzz_every_operation(
    schema: Any, world: World, token: str, call: Callable[[Any], Any], fuzz_seed: int
) -> None:
    """Positive and negative cases for every contract operation, signed in as the owner, with
    the world's real ids in the path (except where the ids are all a GET takes: then they are
    fuzzed too, and malformed ids must be a 404)."""
    ids = known_ids(world, play_turn(world, moves=2))
    for method, path in sorted(CONTRACT):
        operation = schema[path][method.upper()]
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            path_parameters = {k: v for k, v in ids.items() if "{" + k + "}" in path}
            if mode == GenerationMode.NEGATIVE and method == "get" and not len(operation.query):
                path_parameters = {}
            strategy = operation.as_strategy(
                generation_mode=mode,
                path_parameters=path_parameters,
                headers={"Authorization": f"Token {token}"},
            )

            @seed(fuzz_seed)
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=strategy)
            def check(case: Any) -> None:
                call(case)

            check()


@pytest.mark.timeout(110)
def test_fuzzed_requests_to_a_real_server_get_documented_answers(world: World, asgi_server: str):
    fuzz_seed = run_seed()
    schema = schemathesis.openapi.from_url(f"{asgi_server}/api/schema/?format=json")
    token = owner_token(schema, world, base_url=asgi_server)
    with requests.Session() as session:

        def call(case: Any) -> None:
            case.call_and_validate(base_url=asgi_server, session=session, checks=CHECKS)

        fuzz_every_operation(schema, world, token, call, fuzz_seed)
