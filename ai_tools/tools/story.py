"""The story and the world around the party: scene, chapters, dungeons, fog, memory, the end."""

from typing import Any

from django.utils import timezone

from ai_tools import entities
from ai_tools.base import EntityMap, Names, Ref, Tier, ToolContext, ToolError, WriteTool
from ai_tools.registry import register
from ai_tools.tools.schema import COORD, ID, NAME, TEXT, obj
from ai_tools.tools.words import clip, counted, listing, spoken
from campaigns.models import (
    Achievement,
    Campaign,
    Chapter,
    Dungeon,
    Episode,
    FogCell,
    GMMemory,
    Membership,
)

SCENE_CLIP = 80  # characters of a new scene its words quote


def slot(ctx: ToolContext, facet: str) -> str:
    return entities.key("campaign", ctx.campaign.pk, facet)


@register
class EndAdventure(WriteTool):
    """Completes the campaign, unlocks achievements for every member and ends the episode: the
    largest blast radius of all tools."""

    name = "end_adventure"
    tier = Tier.CRITICAL
    description = (
        "End the adventure: the campaign is completed, the listed achievement codes are "
        "unlocked for every member, and the current episode ends with the summary."
    )
    schema = obj(
        {
            "summary": TEXT,
            "achievements": {
                "type": "array",
                "items": {"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"},
                "maxItems": 20,
                "uniqueItems": True,
            },
        },
    )
    examples = (
        {"summary": "The keep is cleansed.", "achievements": ["keep_cleansed", "survivor"]},
        {},
    )
    # The episode, the campaign's and the episode's UPDATEs, the members (four); for each member
    # and code, get_or_create (a read, and a savepoint around the INSERT: four); the eight
    # achievements read back.
    example_statements = 44

    @staticmethod
    def _episode(ctx: ToolContext) -> Episode | None:
        return ctx.once(
            "episode",
            lambda: Episode.objects.filter(campaign_id=ctx.campaign.pk, active=True).first(),
        )

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        episode = self._episode(ctx)
        return [slot(ctx, "status")] + ([entities.key("episode", episode.pk)] if episode else [])

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        campaign = ctx.campaign
        if campaign.status == Campaign.Status.COMPLETED:
            raise ToolError("The adventure has already ended.")
        now = timezone.now()
        campaign.status, campaign.completed_at = Campaign.Status.COMPLETED, now
        ctx.save(campaign, ["status", "completed_at"])
        episode = self._episode(ctx)
        if episode:
            episode.active, episode.ended_at = False, now
            episode.summary = data.get("summary", "")
            ctx.save(episode, ["active", "ended_at", "summary"])
        unlocked = []
        members = Membership.objects.filter(campaign=campaign).order_by("user_id")
        for user_id in members.values_list("user_id", flat=True):
            for code in data.get("achievements", []):
                achievement, created = Achievement.objects.get_or_create(
                    campaign=campaign, user_id=user_id, code=code
                )
                if created:
                    ctx.record_created("achievement", achievement.pk)
                    unlocked.append({"user_id": user_id, "code": code})
        return {
            "status": campaign.status,
            "episode_id": episode.pk if episode else None,
            "unlocked": unlocked,
        }

    def summarize(self, data: dict[str, Any]) -> str:
        return "end the adventure"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        lines = ["The adventure ends"]
        if data.get("summary"):
            lines.append(f"The episode closes: “{clip(data['summary'], SCENE_CLIP)}”")
        if data.get("achievements"):
            earned = listing([spoken(code) for code in data["achievements"]])
            lines.append(f"Every member earns {earned}")
        return lines


@register
class AdvanceChapter(WriteTool):
    """Moves the story's chapter progress."""

    name = "advance_chapter"
    tier = Tier.HIGH
    description = "Move the story to chapter `to_chapter` (an id), or to the next chapter."
    schema = obj({"to_chapter": ID})
    examples = ({}, {"to_chapter": Ref("chapters", 2)})
    example_statements = 2  # the chapters, the campaign's UPDATE

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [slot(ctx, "chapter")]

    def _target(self, ctx: ToolContext, data: dict[str, Any]) -> Chapter:
        chapters = Chapter.objects.filter(campaign_id=ctx.campaign.pk)
        if "to_chapter" in data:
            target = chapters.filter(pk=data["to_chapter"]).first()
            if target is None:
                raise ToolError(f"No chapter with id {data['to_chapter']} in this campaign.")
            return target
        ordered = list(chapters.order_by("position", "pk"))
        current = ctx.campaign.current_chapter_id
        ids = [c.pk for c in ordered]
        following = ordered[ids.index(current) + 1 :] if current in ids else ordered
        if not following:
            raise ToolError("There is no next chapter.")
        return following[0]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        target = self._target(ctx, data)
        previous = ctx.campaign.current_chapter_id
        ctx.campaign.current_chapter = target
        ctx.save(ctx.campaign, ["current_chapter"])
        return {"chapter_id": target.pk, "title": target.title, "previous": previous}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"go to chapter {data['to_chapter']}" if "to_chapter" in data else "next chapter"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        """ "The story moves on: Arrival → Depths", the chapters named as the reader is told."""
        was = entities.fields_of(before, "campaign", "chapter").get("current_chapter_id")
        now = entities.fields_of(after, "campaign", "chapter").get("current_chapter_id")
        target = now if now is not None else data.get("to_chapter")
        to = name.of("chapter", target, "the next chapter")
        if not before:
            return [f"The story moves on to {to}"]
        return [f"The story moves on: {name.of('chapter', was, 'the start')} → {to}"]


@register
class ActivateDungeon(WriteTool):
    """Sets the dungeon the party is in."""

    name = "activate_dungeon"
    idempotent = True
    tier = Tier.HIGH
    description = "Make dungeon `dungeon_id` the active dungeon."
    schema = obj({"dungeon_id": ID}, ("dungeon_id",))
    examples = ({"dungeon_id": Ref("dungeon")},)
    example_statements = 2  # the dungeon, the campaign's UPDATE

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [slot(ctx, "dungeon")]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        dungeon = Dungeon.objects.filter(campaign_id=ctx.campaign.pk, pk=data["dungeon_id"]).first()
        if dungeon is None:
            raise ToolError(f"No dungeon with id {data['dungeon_id']} in this campaign.")
        ctx.campaign.active_dungeon = dungeon
        ctx.save(ctx.campaign, ["active_dungeon"])
        return {"dungeon_id": dungeon.pk, "name": dungeon.name}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"enter dungeon {data['dungeon_id']}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        return [f"The party enters {name.of('dungeon', data['dungeon_id'], 'a dungeon')}"]


@register
class SetScene(WriteTool):
    """Describes where the party is."""

    name = "set_scene"
    idempotent = True
    tier = Tier.LOW
    description = "Set the scene description shown to the players, and optionally the location."
    schema = obj({"description": TEXT, "location": {**NAME, "maxLength": 200}}, ("description",))
    examples = (
        {"description": "Water drips in the dark.", "location": "Crypt"},
        {"description": "Dawn breaks."},
    )
    example_statements = 1  # the campaign's UPDATE

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [slot(ctx, "scene")]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        ctx.campaign.scene = data["description"]
        if "location" in data:
            ctx.campaign.location = data["location"]
        ctx.save(ctx.campaign, ["scene", "location"])
        return {"scene": ctx.campaign.scene, "location": ctx.campaign.location}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"scene: {data['description'][:60]}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        if data.get("location"):
            return [
                f"The scene moves to {data['location']}: {clip(data['description'], SCENE_CLIP)}"
            ]
        return [f"The scene is now: {clip(data['description'], SCENE_CLIP)}"]


@register
class WriteMemory(WriteTool):
    """A GM note; with a key it replaces the note of that key."""

    name = "write_memory"
    tier = Tier.MEDIUM
    description = "Remember a note for later turns. A note with an existing key replaces it."
    schema = obj({"content": TEXT, "key": NAME}, ("content",))
    examples = ({"content": "The mayor lies.", "key": "mayor"}, {"content": "A door creaks."})
    example_statements = 3  # the note of its key (none), the note's INSERT, read back

    @staticmethod
    def _existing(ctx: ToolContext, data: dict[str, Any]) -> GMMemory | None:
        if "key" not in data:
            return None
        return ctx.once(
            "memory",
            lambda: GMMemory.objects.filter(campaign_id=ctx.campaign.pk, key=data["key"]).first(),
        )

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        memory = self._existing(ctx, data)
        return [entities.key("memory", memory.pk)] if memory else []

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        memory = self._existing(ctx, data)
        if memory is None:
            memory = GMMemory.objects.create(
                campaign=ctx.campaign, key=data.get("key", ""), content=data["content"]
            )
            ctx.record_created("memory", memory.pk)
        else:
            memory.content = data["content"]
            ctx.save(memory, ["content"])
        return {"memory_id": memory.pk, "key": memory.key}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"remember {data.get('key') or 'a note'}: {data['content'][:50]}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        # The note itself is the GM's: the feed and the card tell the table only that it was
        # written (or rewritten), never what it says.
        rewritten = any(isinstance(f, dict) for _, f in entities.entries(before, "memory"))
        return ["The GM rewrites a note" if rewritten else "The GM makes a note"]


@register
class RevealFog(WriteTool):
    """Reveals map cells; cells already revealed stay as they are."""

    name = "reveal_fog"
    idempotent = True
    tier = Tier.MEDIUM
    description = "Reveal fog-of-war cells, given as [[x, y], ...]."
    schema = obj(
        {
            "cells": {
                "type": "array",
                "minItems": 1,
                "maxItems": 500,
                "items": {
                    "type": "array",
                    "prefixItems": [COORD, COORD],
                    "minItems": 2,
                    "maxItems": 2,
                },
            }
        },
        ("cells",),
    )
    examples = ({"cells": [[1, 1], [1, 2], [1, 1]]},)
    example_statements = 5  # the cells revealed already, two INSERTs, both read back

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        wanted = list(dict.fromkeys((x, y) for x, y in data["cells"]))
        seen = set(FogCell.objects.filter(campaign_id=ctx.campaign.pk).values_list("x", "y"))
        revealed = []
        for x, y in wanted:
            if (x, y) in seen:
                continue
            cell = FogCell.objects.create(campaign=ctx.campaign, x=x, y=y)
            ctx.record_created("fog", cell.pk)
            revealed.append([x, y])
        return {"revealed": revealed}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"reveal {len(data['cells'])} fog cell(s)"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        """How many cells the call uncovered (the fog rows it made; a cell asked twice or
        revealed already counts once, or not at all), or, without its after, asked for."""
        made = entities.entries(after, "fog")
        count = len(made) if after else len({(x, y) for x, y in data["cells"]})
        if not count:
            return ["No new map cells are revealed"]
        return [f"{counted(count, 'map cell')} revealed"]
