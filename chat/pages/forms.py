from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.models import ContactRequest


class ContactForm(forms.ModelForm):
    class Meta:
        model = ContactRequest
        fields = ["name", "email", "body"]
        labels = {"name": _("Name"), "email": _("Email"), "body": _("How can we help?")}
        widgets = {"body": forms.Textarea(attrs={"rows": 3, "maxlength": 2000})}
