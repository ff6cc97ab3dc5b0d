"""The live table: one websocket per player, on its campaign's feed.

The consumer is deliberately thin. It asks `campaigns.services.feed_join` whether its viewer may
join (members only; a signed-in stranger's attempt is recorded there) and how they see the
world (`campaigns.visibility`: the GM through the fog, a player not), once, then joins the
process's feed of the campaign (`web.feeds`, one channel-layer subscription for all its sockets)
and forwards every envelope that `campaigns.realtime` publishes, as that viewer may see it.
Clients never write through it: changes go through the REST API, whose services are where
permissions, audit and undo live.

A page that opens it as `?fragments=board,turn,roll,change,approvals` is also sent the board,
the turns, the entries outside any turn and the approval card, drawn for its viewer, after the
events that changed them (`web.feeds`), instead of fetching them: with the rights read here, at
the handshake, as its sight is.
"""

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from audit.selectors import Rights, viewer_rights
from campaigns.realtime import LAYER_UNAVAILABLE, hello
from campaigns.selectors import campaign_event_seq, campaign_get_for_member
from campaigns.services import feed_join
from campaigns.visibility import Sight
from core.errors import NotFound
from web.feeds import CampaignFeed, campaign_feed
from web.pages.fragments import ENTRIES

logger = logging.getLogger(__name__)

# The fragments a page may ask to be sent (`?fragments=board,turn,roll,change,approvals`): the
# board, the turns, the entries outside any turn (web/pages/fragments.py, `ENTRIES`) and the
# approval card.
SENT_FRAGMENTS = frozenset({"board", "turn", "approvals"}) | ENTRIES

# Application close codes (4000-4999 are free for applications), after the HTTP statuses.
REFUSED = 4403
NOT_FOUND = 4404
UNAVAILABLE = 4503


def refusal(code: int) -> Callable[..., Awaitable[None]]:
    """An ASGI app that refuses every handshake with `code`. It needs no channel layer, so a
    refusal still works while the layer is down."""

    async def refuse(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.close", "code": code})

    return refuse


# Every websocket path that names no feed (a malformed campaign id among them) is refused,
# instead of the router's error that the server would answer with a 500.
refuse_unknown_path = refusal(NOT_FOUND)


class CampaignConsumer(AsyncWebsocketConsumer):
    """A member's socket on the campaign's feed. It has no channel of its own: the process's
    feed of the campaign (`web.feeds`) subscribes once for all its sockets and forwards each
    event batch here, held back until this socket's `hello` has gone out."""

    channel_layer_alias = None  # no channel per socket (`get_channel_layer(None)` is None)
    feed: CampaignFeed | None = None
    sight = Sight.PLAYER  # until `connect` decides it
    rights: Rights | None = None  # the viewer's, once `connect` finds fragments wanted
    fragments: frozenset[str] = frozenset()  # the fragments the page asked to be sent

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held: list[str] | None = []  # events before `hello`; None once it has gone out

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """An unreachable channel layer at the handshake ends the socket with UNAVAILABLE and a
        logged traceback, not with a server error (HTTP 500 or close 1011); later, the feed
        ends it the same way (`feed_lost`). Before the handshake is accepted the close is a
        refusal (Daphne answers HTTP 403); a socket already closed (a refused non-member) is
        not closed twice."""
        closed = False

        async def send_noting_close(message: dict[str, Any]) -> None:
            nonlocal closed
            closed = closed or message["type"] == "websocket.close"
            await send(message)

        try:
            await super().__call__(scope, receive, send_noting_close)
        except LAYER_UNAVAILABLE:
            logger.exception("channel layer unavailable; websocket %s closed", scope["path"])
            if not closed:
                await send({"type": "websocket.close", "code": UNAVAILABLE})

    async def connect(self) -> None:
        campaign_id = self.scope["url_route"]["kwargs"]["campaign_id"]
        client = self.scope.get("client") or [None]
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        wanted = set(",".join(query.get("fragments", [])).split(",")) & SENT_FRAGMENTS
        sight, rights = await database_sync_to_async(_join)(
            campaign_id=campaign_id, user=self.scope.get("user"), ip=client[0], rights=bool(wanted)
        )
        if sight is None:
            await self.close(code=REFUSED)
            return
        self.sight, self.rights, self.fragments = sight, rights, frozenset(wanted)
        feed = campaign_feed(campaign_id)
        await feed.join(self)
        self.feed = feed
        try:
            await self.accept()
            # Read after joining: an event committed meanwhile arrives after `hello` and is one
            # the client may already count as seen (seq <= hello's), never one it misses.
            seq = await database_sync_to_async(campaign_event_seq)(campaign_id=campaign_id)
            await self.send(text_data=json.dumps(hello(campaign_id, seq)))
            while self.held:
                await self.send(text_data=self.held.pop(0))
            self.held = None
        except BaseException:  # no disconnect follows a failed connect: leave here
            await self.feed.leave(self)
            raise

    async def disconnect(self, code: int) -> None:
        if self.feed is not None:
            await self.feed.leave(self)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The feed is one-way; what a client sends is ignored rather than trusted."""

    async def forward(self, texts: list[str]) -> None:
        """A transaction's events as this viewer may see them, already JSON
        (`campaigns.realtime._send`), in seq order."""
        if self.held is not None:
            self.held.extend(texts)
            return
        for text in texts:
            await self.send(text_data=text)

    async def feed_lost(self) -> None:
        self.feed = None
        await self.close(code=UNAVAILABLE)


def _join(*, campaign_id: Any, user: Any, ip: str | None, rights: bool) -> tuple[Any, Any]:
    """The viewer's sight (None: refused, `feed_join`), and with `rights` their rights at the
    table, which draw the fragments sent to them (the board's draggable tokens and the owner's
    member list, a turn's Undo offers); `gm` is read now, as the sight is, so a push asks
    nothing of them again."""
    sight = feed_join(campaign_id=campaign_id, user=user, ip=ip)
    if sight is None or not rights:
        return sight, None
    try:
        campaign = campaign_get_for_member(campaign_id=campaign_id, user=user)
    except NotFound:  # no longer a member, a moment after
        return None, None
    rights = viewer_rights(campaign=campaign, user=user)
    rights.gm  # noqa: B018 (the cached answer, read here rather than in a push)
    return sight, rights
