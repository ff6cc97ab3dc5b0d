"""Forms of the people's pages."""

from django import forms

from campaigns.models import Campaign

POLICY_LABELS = {
    Campaign.ApprovalPolicy.NONE: "No approval: every tool call runs at once",
    Campaign.ApprovalPolicy.CRITICAL: "Approve critical calls (damage, combat, the ending)",
    Campaign.ApprovalPolicy.CRITICAL_AND_HIGH: "Approve critical and high-tier calls",
    Campaign.ApprovalPolicy.ADAPTIVE: "Critical, and any model and tool that keeps being undone",
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


class ApprovalPolicyForm(forms.Form):
    approval_policy = policy_field()
