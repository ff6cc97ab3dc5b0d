"""Copies of a creature's vitals: one recorded by nothing (the peers' bare write), and three
each recorded by one library the way its documentation sets it up: django-simple-history (a
historical model written from `post_save`), django-pghistory (a PostgreSQL trigger writing an
event row), django-reversion (a serialized version saved when the revision block ends). Each
belongs to one of the project's campaigns, so the write locks the same campaign row as the
audited dispatch does."""

import pghistory
import reversion
from django.db import models
from simple_history.models import HistoricalRecords


class Vitals(models.Model):
    campaign = models.ForeignKey("campaigns.Campaign", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    hp = models.IntegerField()
    max_hp = models.IntegerField()
    temp_hp = models.IntegerField(default=0)
    conditions = models.JSONField(default=list)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.name


class PlainCreature(Vitals):
    """Recorded by nothing: the peers' bare write, on a table of the same shape."""


class SimpleHistoryCreature(Vitals):
    history = HistoricalRecords()


@pghistory.track()
class PgHistoryCreature(Vitals):
    pass


@reversion.register()
class ReversionCreature(Vitals):
    pass
