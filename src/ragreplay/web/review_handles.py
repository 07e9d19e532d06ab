"""Opaque handles for review items on the screen: an item's key never reaches a URL or a page.

A key may be a shadow row id, a case id or a regression set key, which could hint at where the item came from;
the screen names an item by ``HMAC-SHA256(secret, queue id, key)`` instead (128 bits, URL-safe), under a secret
the store keeps (:mod:`ragreplay.store.secrets`), so every replica and every restart agrees on the handles.
A handle maps back by recomputing the queue's handles (a queue's items never change once built).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

SECRET_NAME = "review_item_handles"
"""The name of the store secret the handles are keyed with."""


class ItemHandles:
    """Handles of items and the way back, with the last ``size`` queues' maps kept in memory."""

    def __init__(self, secret: str, keys_of: Callable[[str], Sequence[str]], size: int = 64) -> None:
        self._secret = secret.encode("utf-8")
        self._keys_of = keys_of
        self._size = size
        self._lock = threading.Lock()
        self._maps: OrderedDict[str, dict[str, str]] = OrderedDict()

    def of(self, queue_id: str, key: str) -> str:
        """The handle of item ``key`` of ``queue_id``."""
        message = queue_id.encode("utf-8") + b"\x00" + key.encode("utf-8")
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def key(self, queue_id: str, handle: str) -> str | None:
        """The key of the item of ``queue_id`` with this handle, else ``None``."""
        with self._lock:
            found = self._maps.get(queue_id)
            if found is not None:
                self._maps.move_to_end(queue_id)
        if found is None:
            found = {self.of(queue_id, k): k for k in self._keys_of(queue_id)}
            with self._lock:
                self._maps[queue_id] = found
                while len(self._maps) > self._size:
                    self._maps.popitem(last=False)
        return found.get(handle)
