"""`manage.py seed_demo`: a living table a newcomer can log into on the first run.

Demo accounts with published passwords, a campaign with a party (resources and gear), monsters,
an NPC, chapters, a dungeon and a scene, and a staff account for the admin that may read and
revert the whole log. Running it again changes nothing and prints the same logins. It refuses
to run in production (DJANGO_DEBUG=0) unless forced: published passwords do not belong on a real
server.
"""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from campaigns.models import Campaign, Creature, InventoryItem
from campaigns.services import (
    campaign_create,
    chapter_create,
    creature_create,
    dungeon_create,
    membership_add,
    resource_create,
)

CAMPAIGN = "The Sunken Keep"
SCENE = (
    "Rain hammers the broken gate of the Sunken Keep. Beyond it, worn stairs vanish into black "
    "water, and something small and green is watching you from the dark."
)
CHAPTERS = ("The Drowned Gate", "Halls of the Keep", "The Sunken Throne")


@dataclass(frozen=True)
class Player:
    username: str
    role: str
    character: str | None
    hp: int
    position: tuple[int, int]
    resources: tuple[tuple[str, int, str], ...] = ()
    gear: tuple[tuple[str, int], ...] = ()


OWNER = Player("gm", "owner: runs the table, may undo any turn", None, 0, (0, 0))
STAFF = Player("staff", "staff: the admin at /admin/, reads and reverts the log", None, 0, (0, 0))
# What the demo staff account holds, of the audit app: the log's and the security log's pages,
# and reverting any call.
STAFF_PERMISSIONS = ("revert_toolinvocation", "view_toolinvocation", "view_securityevent")
PLAYERS = (
    Player(
        "alice",
        "player",
        "Thorin",
        28,
        (2, 3),
        (("second_wind", 1, "short_rest"), ("hit_dice", 3, "long_rest")),
        (("longsword", 1), ("shield", 1), ("rope", 1)),
    ),
    Player(
        "bob",
        "player",
        "Lia",
        22,
        (3, 3),
        (("spell_slot", 3, "long_rest"), ("channel_divinity", 1, "short_rest")),
        (("mace", 1), ("holy_symbol", 1), ("healing_potion", 2)),
    ),
    Player(
        "carol",
        "player and co-GM: may undo any turn",
        "Nyx",
        18,
        (2, 4),
        (("ki", 2, "short_rest"), ("hit_dice", 2, "long_rest")),
        (("dagger", 2), ("thieves_tools", 1), ("healing_potion", 1)),
    ),
)
MONSTERS = (
    ("Goblin", "monster", 7, (6, 3)),
    ("Goblin Archer", "monster", 9, (7, 5)),
    ("Orc Brute", "monster", 15, (8, 4)),
    ("Skeleton", "monster", 13, (9, 6)),
    ("Old Maren", "npc", 6, (1, 1)),
)


def demo_password(username: str) -> str:
    return f"{username}-at-the-keep"


class Command(BaseCommand):
    help = "Create demo users and a living demo campaign (idempotent); prints the logins."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Seed even with DEBUG off (the demo passwords are published).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError(
                "seed_demo creates accounts with published passwords; refusing with DEBUG off. "
                "Use --force to seed anyway."
            )
        with transaction.atomic():
            users = {p.username: self._user(p.username) for p in (OWNER, *PLAYERS, STAFF)}
            self._staff(users[STAFF.username])
            campaign = Campaign.objects.filter(owner=users["gm"], name=CAMPAIGN).first()
            created = campaign is None
            if created:
                campaign = self._campaign(users)
        self._report(campaign, created)

    def _user(self, username: str) -> Any:
        """Create the demo user, or put its published password back (only if it changed, so
        a run does not sign out players who are already at the table)."""
        user, _ = get_user_model().objects.get_or_create(username=username)
        if not user.check_password(demo_password(username)):
            user.set_password(demo_password(username))
            user.save(update_fields=["password"])
        return user

    @staticmethod
    def _staff(user: Any) -> None:
        """Staff with the audit permissions (granting again changes nothing)."""
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        user.user_permissions.add(
            *Permission.objects.filter(
                content_type__app_label="audit", codename__in=STAFF_PERMISSIONS
            )
        )

    def _campaign(self, users: dict[str, Any]) -> Campaign:
        gm = users["gm"]
        campaign = campaign_create(owner=gm, name=CAMPAIGN)
        for player in PLAYERS:
            membership_add(
                campaign=campaign,
                by=gm,
                username=player.username,
                can_revert_any=player.username == "carol",
            )
            self._character(campaign, player, users[player.username])
        for name, kind, hp, (x, y) in MONSTERS:
            creature_create(
                campaign=campaign, by=gm, name=name, kind=kind, hp=hp, max_hp=hp, x=x, y=y
            )
        for title in CHAPTERS:
            chapter_create(campaign=campaign, by=gm, title=title)
        dungeon = dungeon_create(campaign=campaign, by=gm, name="The Flooded Crypt")
        Campaign.objects.filter(pk=campaign.pk).update(
            active_dungeon=dungeon, scene=SCENE, location="The Drowned Gate"
        )
        return campaign

    @staticmethod
    def _character(campaign: Campaign, player: Player, user: Any) -> None:
        x, y = player.position
        character = creature_create(
            campaign=campaign,
            by=campaign.owner,
            name=player.character,
            kind=Creature.Kind.PC,
            hp=player.hp,
            max_hp=player.hp,
            controlled_by=user,
            x=x,
            y=y,
        )
        for name, amount, recharge in player.resources:
            resource_create(
                campaign=campaign,
                creature=character,
                by=campaign.owner,
                name=name,
                current=amount,
                maximum=amount,
                recharge=recharge,
            )
        InventoryItem.objects.bulk_create(
            InventoryItem(campaign=campaign, creature=character, name=item, quantity=quantity)
            for item, quantity in player.gear
        )

    def _report(self, campaign: Campaign, created: bool) -> None:
        verb = "Seeded" if created else "Already seeded (nothing changed)"
        self.stdout.write(
            self.style.SUCCESS(f'{verb}: "{campaign.name}" at /campaigns/{campaign.pk}/')
        )
        self.stdout.write(f"  {'user':<8}{'password':<22}role")
        for player in (OWNER, *PLAYERS, STAFF):
            who = f"{player.role}, plays {player.character}" if player.character else player.role
            self.stdout.write(f"  {player.username:<8}{demo_password(player.username):<22}{who}")
        self.stdout.write(
            'Sign in at /accounts/login/ and try: "I attack the goblin", "we take a long rest", '
            '"move me to 5,5", "roll initiative"; then Undo the GM\'s turn.'
        )
