"""How long a client may take and how many may be connected: the limits every ragreplay server applies
(the shadow proxy, the dashboard, the demo's apps)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# One connection to the client, one to the champion, a few spare for challengers, the store and the logs.
_FILES_PER_CONNECTION = 2
_SPARE_FILES = 128


class ServerLimits(BaseModel):
    """Timeouts and the connection limit of one server; ``server:`` in the shadow serve config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="Seconds a client has to send a request's line and headers (from its first byte, or from "
        "connecting); then 408 and the connection is closed (slowloris).",
    )
    body_timeout_s: float = Field(
        30.0,
        gt=0,
        description="Seconds a client has to send a request's whole body once its headers are in; then 408 "
        "and close (the request is not forwarded).",
    )
    idle_timeout_s: float = Field(
        5.0, gt=0, description="Seconds a kept-alive connection may sit idle between requests."
    )
    max_connections: int = Field(
        1000,
        ge=1,
        description="Open connections served at once; a request on a connection over it gets a 503.",
    )
    backlog: int = Field(
        2048, ge=1, description="Connections the kernel queues before the server accepts them."
    )

    def open_files_needed(self) -> int:
        """File descriptors the process may need at ``max_connections``."""
        return self.max_connections * _FILES_PER_CONNECTION + _SPARE_FILES


DEFAULT_LIMITS = ServerLimits()


def fit_open_files(limits: ServerLimits) -> str | None:
    """Raise this process's soft limit on open files towards what ``limits`` need (up to the hard limit);
    a warning with the fix when it still falls short, else ``None``.

    Over the limit the kernel refuses new connections before the server sees them, whatever its own limit.
    """
    try:
        import resource
    except ImportError:  # not on Windows: nothing to raise there
        return None
    needed = limits.open_files_needed()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError):
            pass
    if soft >= needed:
        return None
    return (
        f"this process may open only {soft} files, and {limits.max_connections} connections need about "
        f"{needed}: over {soft} the kernel refuses new connections. Fix: raise the limit (ulimit -n {needed}) "
        f"or lower --max-connections to {max(1, (soft - _SPARE_FILES) // _FILES_PER_CONNECTION)}"
    )
