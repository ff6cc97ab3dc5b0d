"""Forms of the people's pages. The set-up forms of the campaign page are validated by the API's
input serializers (`web.api.serializers`); the two here have no API twin."""

import re
from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest
from rest_framework import exceptions, serializers

from ai_tools import registry
from campaigns.models import Campaign
from core.api.base import StrictSerializer

# Short enough for the select to show whole in the chat column of a 390 px phone.
POLICY_LABELS = {
    Campaign.ApprovalPolicy.NONE: "None: every call runs at once",
    Campaign.ApprovalPolicy.CRITICAL: "Critical: damage, combat, the end",
    Campaign.ApprovalPolicy.CRITICAL_AND_HIGH: "Critical and high-tier calls",
    Campaign.ApprovalPolicy.ADAPTIVE: "Adaptive: critical + often undone",
    Campaign.ApprovalPolicy.WATCHFUL: "Watchful: the end, blows to PCs, often undone",
}


def policy_field(*, required: bool = True) -> forms.ChoiceField:
    return forms.ChoiceField(
        label="Approval",
        required=required,
        choices=[(value, POLICY_LABELS[value]) for value in Campaign.ApprovalPolicy.values],
        initial=Campaign._meta.get_field("approval_policy").default,
    )


class CampaignForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        strip=True,
        widget=forms.TextInput(attrs={"placeholder": "The Sunken Keep", "autocomplete": "off"}),
    )
    approval_policy = policy_field(required=False)  # left out: the model's default


class SignupForm(UserCreationForm):
    """Django's sign-up form, whose rules (the help texts) the page shows before any attempt,
    and which keeps what was typed after a refusal (both passwords too: the same person's page
    in their own session, sent `no-store`), so one wrong field costs one field."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("password1", "password2"):
            self.fields[name].widget.render_value = True
        self.fields[
            "username"
        ].help_text = "Up to 150 letters, digits and @ . + - _ only; the other players see it."
        self.fields["password2"].help_text = "The same password again."


class ApprovalPolicyForm(forms.Form):
    approval_policy = policy_field()


class GMSeatForm(forms.Form):
    provider = forms.ChoiceField(label="GM", choices=[])

    def __init__(self, *args: Any, seats: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = [(name, seat.label) for name, seat in seats.items()]


class ApprovalTimeoutInput(StrictSerializer):
    """The page's approval-timeout form: the API's `approval_timeout` (docs/api.md#paths) in
    whole minutes, a minute to a week."""

    minutes = serializers.IntegerField(min_value=1, max_value=7 * 24 * 60)


WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,9}")


def posted_fields(request: HttpRequest) -> dict[str, str]:
    """A form's fields as the API would get them: a field left empty is a field left out."""
    return {
        key: value
        for key, value in request.POST.items()
        if key != "csrfmiddlewaretoken" and value != ""
    }


def refused(form: forms.Form) -> exceptions.ValidationError:
    """A page form's errors as the API's validation error (400, `detail` and `errors`), for a
    script: people get the form again with its errors."""
    errors = form.errors.get_json_data()
    return exceptions.ValidationError(
        {field: [error["message"] for error in messages] for field, messages in errors.items()}
    )


def as_json(serializer_class: type[serializers.Serializer], fields: dict[str, str]) -> dict:
    """A form's strings typed as the API's JSON would carry them, for the API's own input
    serializer: whole numbers for its integer fields, true/false for its booleans (a ticked box
    sends "on"). A value that does not fit stays as typed, so the serializer refuses it in the
    API's words."""
    declared = serializer_class().fields
    typed: dict[str, Any] = {}
    for name, value in fields.items():
        field = declared.get(name)
        if isinstance(field, serializers.IntegerField) and WHOLE_NUMBER.fullmatch(value):
            typed[name] = int(value)
        elif isinstance(field, serializers.BooleanField):
            typed[name] = value.lower() in ("on", "true", "1")
        else:
            typed[name] = value
    return typed


class InviteCreateInput(StrictSerializer):
    """An invite link: how long it works, and how many people may join with it (empty: any)."""

    expires_in_hours = serializers.IntegerField(min_value=1, max_value=24 * 30, default=72)
    max_uses = serializers.IntegerField(min_value=1, max_value=1000, required=False)


class HandInput(StrictSerializer):
    """Which tool the GM's hand calls; the other fields are that tool's input."""

    tool = serializers.ChoiceField(choices=[])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tool"].choices = [t.name for t in registry.write_tools()]

    @staticmethod
    def tool_input(tool_name: str, fields: dict[str, str]) -> dict[str, Any]:
        """Form fields typed as the tool's schema types them: whole numbers, and lists written
        with commas ("poisoned, prone"). A value that does not fit stays as typed, so the tool's
        schema refuses it in its own words."""
        properties = registry.write_tool(tool_name).schema.get("properties", {})
        return {
            name: _typed(properties.get(name, {}), value.strip()) for name, value in fields.items()
        }


def _typed(schema: dict[str, Any], value: str) -> Any:
    kind = schema.get("type")
    if kind == "integer" and WHOLE_NUMBER.fullmatch(value):
        return int(value)
    if kind == "array" and schema.get("items", {}).get("type") == "string":
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class MapInput(StrictSerializer):
    """The battle map's settings form: its grid (cols × rows) and whether to take its background
    away; the image itself is the form's file (`background`)."""

    cols = serializers.IntegerField(required=False)
    rows = serializers.IntegerField(required=False)
    remove_background = serializers.BooleanField(required=False, default=False)
