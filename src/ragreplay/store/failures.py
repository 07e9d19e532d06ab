"""The store's errors a user can act on."""

from __future__ import annotations

from ragreplay.errors import RagreplayError


class StoreError(RagreplayError):
    """The store cannot be opened or used as asked: bad URL, unreachable server, newer schema, etc."""


class StoreUnavailable(StoreError):
    """The store stopped answering in the middle of a command: a lost connection, a server that went silent,
    a lock held past the busy timeout. What was committed before is kept: the same command again resumes."""

    def __init__(self, display_url: str, what: str) -> None:
        self.display_url = display_url
        self.what = what
        super().__init__(
            f"the store at {display_url} {what}. Nothing finished was lost: run the same command again to "
            "resume once the store answers."
        )
