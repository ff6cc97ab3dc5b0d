"""Odd paths and query parameters on the people's pages get a 4xx (or a page), never a 500.

Hypothesis draws hostile strings (Unicode digits such as "²" that `str.isdigit` accepts and
`int` refuses, numbers past a bigint, NUL, non-UUIDs, arbitrary text) into every path segment and
query parameter of the pages (web/pages/urls.py, the accounts pages), signed in as a member and
signed out. A fresh random seed each run; a failure prints the example and how to replay it."""

from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import World
from tests.hostile import FUZZ, HOSTILE

# Every page, with the query parameters it reads (each drawn in every example) or that a
# careless view might read.
PAGES = {
    "/": ["next"],
    "/campaigns/": ["page", "q"],
    "/campaigns/{campaign}/": ["turn", "seq"],
    "/campaigns/{campaign}/feed/": ["turn", "roll"],
    "/accounts/login/": ["next"],
    "/accounts/signup/": ["next"],
    "/accounts/logout/": ["next"],
}


# Every page path with a segment a client controls.
PATH_TEMPLATES = ["/campaigns/{}/", "/campaigns/{}/feed/", "/accounts/{}/", "/{}/"]


def assert_no_server_error(response, url: str, query: dict) -> None:
    assert response.status_code < 500, (url, query, response.status_code)


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [True, False])
@pytest.mark.parametrize("page", list(PAGES))
def test_query_parameters_of_every_page_never_500(world: World, page: str, signed_in: bool):
    client = Client()
    if signed_in:
        client.force_login(world.player)
    path = page.format(campaign=world.campaign.pk)
    query = st.fixed_dictionaries(
        {name: HOSTILE for name in PAGES[page]},
        optional={"extra": HOSTILE},
    )

    @FUZZ
    @given(query=query)
    def check(query: dict) -> None:
        assert_no_server_error(client.get(path, query), path, query)

    check()


@pytest.mark.django_db
def test_path_segments_of_the_pages_never_500(world: World):
    client = Client()
    client.force_login(world.player)

    @FUZZ
    @given(template=st.sampled_from(PATH_TEMPLATES), segment=HOSTILE)
    def check(template: str, segment: str) -> None:
        url = template.format(quote(segment, safe=""))
        assert_no_server_error(client.get(url), url, {})

    check()


def test_a_superscript_turn_id_is_404_not_500(world: World, player_client: Client):
    """The case that was found: `"²".isdigit()` is true, `int("²")` raises."""
    feed = f"/campaigns/{world.campaign.pk}/feed/"
    for value in ("²", "١", str(10**30), "1\x00"):
        assert player_client.get(feed, {"turn": value}).status_code == 404, value
