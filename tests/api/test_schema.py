"""OpenAPI 3 at /api/schema/ and Swagger UI at /api/docs/, served without any CDN."""

import json
import re

import pytest
from django.contrib.staticfiles import finders
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

CONTRACT = {
    ("post", "/api/auth/token/"),
    ("post", "/api/auth/register/"),
    ("get", "/api/campaigns/"),
    ("post", "/api/campaigns/"),
    ("get", "/api/campaigns/{campaign_id}/"),
    ("get", "/api/campaigns/{campaign_id}/state/"),
    ("post", "/api/campaigns/{campaign_id}/members/"),
    ("post", "/api/campaigns/{campaign_id}/creatures/"),
    ("post", "/api/campaigns/{campaign_id}/creatures/{creature_id}/resources/"),
    ("post", "/api/campaigns/{campaign_id}/chapters/"),
    ("post", "/api/campaigns/{campaign_id}/dungeons/"),
    ("post", "/api/campaigns/{campaign_id}/turns/"),
    ("get", "/api/campaigns/{campaign_id}/turns/"),
    ("post", "/api/campaigns/{campaign_id}/turns/{turn_id}/tool-calls/"),
    ("post", "/api/campaigns/{campaign_id}/turns/{turn_id}/undo/"),
    ("get", "/api/campaigns/{campaign_id}/turns/{turn_id}/undo-plan/"),
    ("get", "/api/campaigns/{campaign_id}/invocations/"),
    ("get", "/api/campaigns/{campaign_id}/invocations/{invocation_id}/"),
    ("post", "/api/campaigns/{campaign_id}/invocations/{invocation_id}/revert/"),
    ("get", "/api/campaigns/{campaign_id}/invocations/{invocation_id}/revert-plan/"),
}


@pytest.fixture
def schema() -> dict:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield method, path, operation


def test_the_schema_is_openapi_3_and_describes_every_contract_endpoint(schema):
    assert schema["openapi"].startswith("3.")
    documented = {(method, path) for method, path, _ in operations(schema)}
    assert documented >= CONTRACT
    assert {"tokenAuth", "cookieAuth"} <= set(schema["components"]["securitySchemes"])


def test_every_operation_documents_its_request_and_response_shapes(schema):
    for method, path, operation in operations(schema):
        if path == "/api/schema/":
            continue
        if method == "post":
            body = operation["requestBody"]["content"]["application/json"]["schema"]
            assert "$ref" in body, (method, path)
        success = [code for code in operation["responses"] if code.startswith("2")]
        assert success, (method, path)
        for code, response in operation["responses"].items():
            if code == "204":
                assert "content" not in response, (method, path)
                continue
            assert "$ref" in response["content"]["application/json"]["schema"], (path, code)


def test_contract_shapes_in_the_schema(schema):
    components = schema["components"]["schemas"]
    invocation = set(components["Invocation"]["properties"])
    assert {"id", "sequence", "tool_name", "revertible", "reverted_by"} <= invocation
    assert set(components["UndoResult"]["properties"]) == {"reverted", "skipped"}
    assert set(components["Conflict"]["properties"]) == {"detail", "conflicts"}
    assert set(components["PaginatedInvocationList"]["properties"]) == {"results", "next"}
    tool_calls = schema["paths"]["/api/campaigns/{campaign_id}/turns/{turn_id}/tool-calls/"]
    assert {"201", "202", "403", "404", "409", "422", "503"} <= set(tool_calls["post"]["responses"])


def test_swagger_ui_is_served_with_local_assets():
    response = APIClient().get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "cdn" not in html.lower()
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    names = {asset.rsplit("/", 1)[-1] for asset in assets}
    assert {"swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"} <= names
    for asset in assets:
        relative = asset.removeprefix("/static/")
        assert finders.find(relative), f"{asset} is not a static file of the app"
    assert "/api/schema/" in html
