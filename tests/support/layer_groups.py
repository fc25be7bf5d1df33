"""How many of this process's channels a group of the configured channel layer holds: the
in-memory layer's own table, or the Redis pub/sub layer's table of the running loop (its
groups are subscriptions kept per process)."""

from __future__ import annotations

from typing import Any


async def group_size(layer: Any, group: str) -> int:
    if hasattr(layer, "_get_layer"):  # channels_redis's pub/sub layer
        loop_layer = layer._get_layer()
        return len(loop_layer.groups.get(loop_layer._get_group_channel_name(group), set()))
    return len(layer.groups.get(group, {}))
