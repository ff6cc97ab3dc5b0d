"""Odd path segments and query parameters on every API operation get a JSON 4xx, never a 500.

Each `{parameter}` of each contract path gets either a real id of the test world or a hostile
string (Unicode digits, numbers past a bigint, NUL, non-UUIDs, arbitrary text), and each GET gets
its query parameters (and stray ones) drawn the same way. Schemathesis (test_fuzz.py) fuzzes what
the schema describes; this covers what a client can put in a URL whatever the schema says."""

import re
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.api.conftest import client_for, play_turn
from tests.api.test_schema import CONTRACT
from tests.hostile import FUZZ, HOSTILE

QUERY = ["status", "tier", "tool", "turn", "cascade", "page_size", "cursor", "format"]


def fill(path: str, real: dict[str, str], draw) -> str:
    """Each `{name}` becomes the real id or a URL-quoted hostile string."""

    def value(match: re.Match) -> str:
        return quote(draw(st.sampled_from([real[match[1]]]) | HOSTILE), safe="")

    return re.sub(r"\{(\w+)\}", value, path)


@pytest.mark.django_db
@pytest.mark.parametrize("method,path", sorted(CONTRACT))
def test_path_and_query_parameters_never_500(world, method, path):
    played = play_turn(world, moves=2)
    real = {
        "campaign_id": str(world.campaign.pk),
        "turn_id": str(played.turn.pk),
        "invocation_id": str(played.rows[0].pk),
        "creature_id": str(world.hero.pk),
    }
    client = client_for(world.owner)
    query = st.dictionaries(st.sampled_from(QUERY) | st.text(max_size=8), HOSTILE, max_size=4)

    @FUZZ
    @given(data=st.data(), params=query)
    def check(data, params: dict) -> None:
        url = fill(path, real, data.draw)
        if method == "get":
            response = client.get(url, params)
        else:
            response = client.post(url + "?" + _encode(params), {}, format="json")
        assert response.status_code < 500, (method, url, params, response.content[:300])
        assert response["Content-Type"] == "application/json", (url, response["Content-Type"])

    check()


def _encode(params: dict) -> str:
    return "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in params.items())
