"""OpenAPI 3 at /api/schema/ and Swagger UI at /api/docs/, served without any CDN."""

import json
import re

import pytest
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

CONTRACT = {
    ("post", "/api/auth/token/"),
    ("post", "/api/auth/register/"),
    ("get", "/api/campaigns/"),
    ("post", "/api/campaigns/"),
    ("get", "/api/campaigns/{campaign_id}/"),
    ("patch", "/api/campaigns/{campaign_id}/"),
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
    ("post", "/api/campaigns/{campaign_id}/turns/{turn_id}/cancel/"),
    ("post", "/api/campaigns/{campaign_id}/turns/{turn_id}/retry/"),
    ("get", "/api/campaigns/{campaign_id}/invocations/"),
    ("get", "/api/campaigns/{campaign_id}/invocations/{invocation_id}/"),
    ("post", "/api/campaigns/{campaign_id}/invocations/{invocation_id}/revert/"),
    ("get", "/api/campaigns/{campaign_id}/invocations/{invocation_id}/revert-plan/"),
    ("get", "/api/analytics/tools/"),
}


HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def schema() -> dict:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
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
        if method in ("post", "patch"):
            body = operation["requestBody"]["content"]["application/json"]["schema"]
            assert "$ref" in body, (method, path)
        success = [code for code in operation["responses"] if code.startswith("2")]
        assert success, (method, path)
        for code, response in operation["responses"].items():
            if code == "204":
                assert "content" not in response, (method, path)
                continue
            body = response["content"]["application/json"]["schema"]
            assert "$ref" in body or "$ref" in body.get("items", {}), (path, code)


def test_contract_shapes_in_the_schema(schema):
    components = schema["components"]["schemas"]
    invocation = set(components["Invocation"]["properties"])
    assert {"id", "sequence", "tool_name", "revertible", "reverted_by"} <= invocation
    assert set(components["UndoResult"]["properties"]) == {"reverted", "skipped"}
    assert set(components["Conflict"]["properties"]) == {"detail", "conflicts"}
    assert set(components["PaginatedInvocationList"]["properties"]) == {"results", "next"}
    tool_calls = schema["paths"]["/api/campaigns/{campaign_id}/turns/{turn_id}/tool-calls/"]
    responses = set(tool_calls["post"]["responses"])
    assert {"201", "202", "403", "404", "409", "422", "503"} <= responses
    held = components["ToolCallHeld"]["properties"]
    assert set(held) == {"invocation", "status", "preview"}
    approve = schema["paths"]["/api/campaigns/{campaign_id}/invocations/{invocation_id}/approve/"][
        "post"
    ]["responses"]
    assert {"200", "403", "404", "409"} <= set(approve)


def test_the_schema_names_every_status_rows_reach(schema):
    values = set(_enum_values(schema))
    assert {"pending", "committed", "failed", "reverted"} <= values
    assert {"awaiting_approval", "rejected", "expired"} <= values


def _enum_values(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "enum":
                yield from (v for v in value if isinstance(v, str))
            else:
                yield from _enum_values(value)
    elif isinstance(node, list):
        for value in node:
            yield from _enum_values(value)


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


def request_components(schema: dict):
    """(method, path, component name, component) of every documented request body."""
    for method, path, operation in operations(schema):
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body:
            name = body["schema"]["$ref"].rsplit("/", 1)[-1]
            yield method, path, name, schema["components"]["schemas"][name]


def test_request_bodies_say_unknown_fields_are_refused(schema):
    components = list(request_components(schema))
    assert len(components) >= 12
    for method, path, name, component in components:
        assert component.get("additionalProperties") is False, (method, path, name)


def test_strings_the_server_refuses_blank_say_so(schema):
    """A string property either admits blank (then its default is "") or states minLength, and
    a trimmed one also states it must hold a non-space character."""
    for _, _, name, component in request_components(schema):
        for prop, spec in component.get("properties", {}).items():
            if spec.get("type") != "string" or spec.get("default") == "":
                continue
            assert spec.get("minLength", 0) >= 1, (name, prop)
    campaign = schema["components"]["schemas"]["CampaignCreateInput"]["properties"]["name"]
    assert (campaign["minLength"], campaign["pattern"], campaign["maxLength"]) == (1, r"\S", 200)


@pytest.mark.parametrize("name", ["", "   ", "\t\n", "a" + " " * 200])
def test_the_server_refuses_what_the_name_schema_refuses(name):
    user = User.objects.create_user("maker", password="pw")
    client = APIClient()
    client.force_authenticate(user)
    response = client.post("/api/campaigns/", {"name": name}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["name"]


def test_a_blank_username_for_a_relation_is_refused_not_read_as_null(world):
    """DRF reads "" as null for relations; the schema says minLength 1 (or null)."""
    client = APIClient()
    client.force_authenticate(world.owner)
    body = {"name": "Imp", "kind": "npc", "hp": 3, "max_hp": 3, "controlled_by": ""}
    response = client.post(f"/api/campaigns/{world.campaign.pk}/creatures/", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"controlled_by": ["This field may not be blank."]}
    assert (
        client.post(
            f"/api/campaigns/{world.campaign.pk}/creatures/",
            {**body, "controlled_by": None},
            format="json",
        ).status_code
        == 201
    )


def filled(path: str, world, played) -> str:
    return path.format(
        campaign_id=world.campaign.pk,
        turn_id=played.turn.pk,
        invocation_id=played.rows[0].pk,
        creature_id=world.hero.pk,
    )


@pytest.mark.parametrize("path", sorted(p for m, p in CONTRACT if m == "post"))
def test_every_body_taking_operation_documents_and_answers_415(schema, world, played, path):
    assert "415" in schema["paths"][path]["post"]["responses"], path
    client = APIClient()
    client.force_authenticate(world.owner)
    response = client.post(filled(path, world, played), "name=x", content_type="text/plain")
    assert response.status_code == 415, response.content
    assert response["Content-Type"] == "application/json" and response.json()["detail"]


@pytest.mark.parametrize("path", sorted({p for _, p in CONTRACT}))
def test_a_method_a_path_does_not_list_is_405_with_allow(schema, world, played, path):
    """The API's description says so (OpenAPI has no place for a method a path lacks)."""
    assert "405" in schema["info"]["description"] and "`Allow`" in schema["info"]["description"]
    documented = {m for m in schema["paths"][path] if m in HTTP_METHODS}
    client = APIClient()
    client.force_authenticate(world.owner)
    for method in sorted(HTTP_METHODS - documented):
        response = getattr(client, method)(filled(path, world, played), {}, format="json")
        assert response.status_code == 405, (method, path, response.content)
        assert response.json()["detail"]
        allowed = {m.strip().lower() for m in response["Allow"].split(",")}
        assert allowed - {"head", "options"} == documented, (method, path)
