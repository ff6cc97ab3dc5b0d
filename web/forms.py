"""Forms of the people's pages."""

from django import forms


class CampaignForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        strip=True,
        widget=forms.TextInput(attrs={"placeholder": "The Sunken Keep", "autocomplete": "off"}),
    )
