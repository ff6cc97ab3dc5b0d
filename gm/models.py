"""A GM turn's transcript, stored as it happens so any worker can continue the turn.

`GMTranscript` keeps the game state the turn began from: every attempt at the turn decides from
the same state, so a turn resumed after a crash is the same conversation, not a new one that
sees its own earlier tool calls as history. `GMRound` is one round of the conversation: the
model's reply (its content blocks with their tool_use ids, and why it stopped), written as soon
as the reply is complete and before any of its tool calls runs, and then the tool results. A
resumed turn never asks the model again for a round stored here.
"""

from django.db import models

from campaigns.models import Campaign, Turn


class GMTranscript(models.Model):
    turn = models.OneToOneField(
        Turn, primary_key=True, on_delete=models.CASCADE, related_name="gm_transcript"
    )
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    state = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Transcript of turn {self.turn_id}"


class GMRound(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="gm_rounds")
    index = models.PositiveIntegerField()
    attempt = models.PositiveIntegerField()
    model = models.CharField(max_length=100)
    # The reply as it goes back to the model: text and tool_use blocks (Messages API params).
    content = models.JSONField()
    stop_reason = models.CharField(max_length=32)
    # The narration of this round, as it was streamed to the table.
    text = models.TextField(blank=True, default="")
    # The tool_result blocks, once every tool call of the round has an outcome.
    results = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["turn", "index"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "turn", "index"], name="gmround_once")
        ]

    def __str__(self) -> str:
        return f"Round {self.index} of turn {self.turn_id}"
