from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from activity.export import feed_data
from chat.models import Conversation, Message


class ConversationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Conversation
        fields = ["id", "title", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]

    def to_representation(self, conversation):
        data = super().to_representation(conversation)
        data["title"] = conversation.display_title  # the first question until renamed
        return data


class FeedSerializer(serializers.Serializer):
    """A feed with its events in the live protocol; see activity.export.feed_data."""

    def to_representation(self, feed):
        return feed_data(feed, getattr(feed, "prefetched_events", None) or feed.events.all())


class MessageSerializer(serializers.ModelSerializer):
    feed = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = ["id", "role", "content", "state", "created_at", "feed"]

    @extend_schema_field({"type": "object", "nullable": True})
    def get_feed(self, message: Message):
        return feed_data(message.feed, message.feed_rows) if message.feed_id else None


class ConversationDetailSerializer(ConversationSerializer):
    messages = serializers.SerializerMethodField()

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "messages"]

    @extend_schema_field(MessageSerializer(many=True))
    def get_messages(self, conversation):
        return MessageSerializer(conversation.api_messages, many=True).data


class TurnRequestSerializer(serializers.Serializer):
    content = serializers.CharField(trim_whitespace=False)
    client_id = serializers.UUIDField(required=False)
