from __future__ import annotations

from django import forms

from chat.models import ContactRequest


class ContactForm(forms.ModelForm):
    class Meta:
        model = ContactRequest
        fields = ["name", "email", "body"]
        labels = {"body": "How can we help?"}
        widgets = {"body": forms.Textarea(attrs={"rows": 3, "maxlength": 2000})}
