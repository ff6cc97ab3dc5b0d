"""Schema-driven fuzzing: schemathesis generates requests from /api/schema/, valid and invalid,
and every response must be a documented status with a body matching the documented shape.
No 500, no schema violation. The example count is bounded so the suite stays fast."""

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.conftest import play_turn
from tests.api.test_schema import CONTRACT

EXAMPLES = 15
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


@pytest.fixture
def wsgi_app():
    """Django's WSGI handler, without the per-request connection recycling that would close the
    test's transaction (Django's own test client disconnects it the same way)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("method,path", sorted(CONTRACT))
def test_fuzzed_requests_get_documented_answers(world, wsgi_app, method, path, mode):
    played = play_turn(world, moves=2)
    schema = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app)
    operation = schema[path][method.upper()]
    known_ids = {
        "campaign_id": str(world.campaign.pk),
        "turn_id": played.turn.pk,
        "invocation_id": str(played.rows[0].pk),
        "creature_id": world.hero.pk,
    }
    path_parameters = {k: v for k, v in known_ids.items() if "{" + k + "}" in path}
    if mode == GenerationMode.NEGATIVE and method == "get" and not len(operation.query):
        path_parameters = {}  # the ids are its only input: fuzz them (malformed ids -> 404)
    token = Token.objects.create(user=world.owner).key
    strategy = operation.as_strategy(
        generation_mode=mode,
        path_parameters=path_parameters,
        headers={"Authorization": f"Token {token}"},
    )

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def check(case):
        case.call_and_validate(checks=CHECKS)

    check()
