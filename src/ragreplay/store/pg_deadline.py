"""The client-side answer deadline of PostgreSQL connections (see :mod:`ragreplay.store.liveness`).

Its own module because it subclasses psycopg's connection: psycopg is the ``[postgres]`` extra, imported only
when a PostgreSQL store is opened, so a SQLite store works on the base install.
"""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import Engine, event


class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection that waits at most :attr:`deadline_s` for any answer of the server, then closes
    itself (so SQLAlchemy sees a lost connection) and raises ``OperationalError``."""

    deadline_s: float | None = None

    def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:
        """psycopg's wait, with the deadline unless the caller gives its own."""
        if self.deadline_s is None or kwargs.get("timeout") is not None:
            return super().wait(gen, *args, **kwargs)
        try:
            return super().wait(gen, *args, **{**kwargs, "timeout": self.deadline_s})
        except _WAIT_TIMEOUT:
            self.close()
            raise psycopg.OperationalError(
                f"no answer from the server within {self.deadline_s:g} s"
            ) from None


_WAIT_TIMEOUT: type[Exception] = getattr(psycopg.errors, "_WaitTimeout", psycopg.errors.OperationalError)


def use_deadline(engine: Engine, deadline_s: float | None) -> None:
    """Connect ``engine``'s new PostgreSQL connections as :class:`DeadlineConnection` with ``deadline_s``."""

    class _Connection(DeadlineConnection):
        """A :class:`DeadlineConnection` with this engine's deadline."""

    _Connection.deadline_s = deadline_s

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        return _Connection.connect(*cargs, **cparams)
