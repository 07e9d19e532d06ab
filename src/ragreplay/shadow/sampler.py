"""Which live requests get a shadow run: a base rate, time-of-day windows in a time zone, per user or per request.

Pure: no I/O. The clock is passed in (`now`) or read once per decision; the random source is seedable.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, time
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragreplay.errors import ConfigError

Per = Literal["user", "request"]
_HASH_SCALE = float(1 << 64)


def _check_rate(rate: float, what: str) -> None:
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"{what} must be between 0 and 1, got {rate!r}. Fix: use e.g. 0.05 for 5%.")


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(
            f"unknown time zone {tz!r}. Fix: use an IANA name such as 'UTC' or 'Europe/Amsterdam'."
        ) from exc


@dataclass(frozen=True)
class Window:
    """A time-of-day range [start, end) with its own rate; wraps midnight when end <= start (22:00-02:00)."""

    start: time
    end: time
    rate: float

    def __post_init__(self) -> None:
        _check_rate(self.rate, f"the rate of window {self.label}")
        if self.start == self.end:
            raise ConfigError(
                f"window {self.label} is empty. Fix: give a start and an end that differ "
                "(use base_rate for the whole day)."
            )

    @property
    def label(self) -> str:
        """The window as written in config, e.g. '09:00-11:00'."""
        return f"{self.start:%H:%M}-{self.end:%H:%M}"

    def contains(self, t: time) -> bool:
        """Whether the local wall-clock time `t` falls in this window."""
        t = t.replace(tzinfo=None)
        if self.start < self.end:
            return self.start <= t < self.end
        return t >= self.start or t < self.end


def parse_window(spec: str, rate: float) -> Window:
    """Parse '09:00-11:00' (24:00 allowed as an end) into a `Window`; raise `ConfigError` when malformed."""
    parts = spec.split("-")
    if len(parts) != 2:
        raise ConfigError(f"window {spec!r} is not 'HH:MM-HH:MM'. Fix: write it like '09:00-11:00'.")
    start_s, end_s = (p.strip() for p in parts)
    try:
        start = time.fromisoformat(start_s)
        end = time(0, 0) if end_s == "24:00" else time.fromisoformat(end_s)
    except ValueError as exc:
        raise ConfigError(f"window {spec!r} is not 'HH:MM-HH:MM'. Fix: write it like '09:00-11:00'.") from exc
    return Window(start, end, rate)


def user_bucket(user_id: str, salt: str) -> float:
    """A stable pseudo-uniform number in [0, 1) for a user: the same id and salt always give the same number."""
    digest = hashlib.blake2b(f"{salt}\x00{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _HASH_SCALE


class Sampler:
    """Decides whether a request is shadowed, and counts what it saw and sampled.

    Per user, a user's stable hash bucket is compared with the rate in force, so the same user gets the same
    answer within a window (and a user in at 5% is also in at 50%). Users without an id, and `per="request"`,
    draw from a random source (seeded for tests). Thread-safe.
    """

    def __init__(
        self,
        base_rate: float,
        windows: Sequence[Window] = (),
        tz: str = "UTC",
        per: Per = "request",
        seed: int | None = None,
        salt: str = "ragreplay-shadow",
    ) -> None:
        _check_rate(base_rate, "base_rate")
        if per not in ("user", "request"):
            raise ConfigError(f"per must be 'user' or 'request', got {per!r}.")
        self.base_rate = base_rate
        self.windows = tuple(windows)
        self.tz = _zone(tz)
        self.per: Per = per
        self.salt = salt
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.seen = 0
        self.sampled = 0

    @property
    def effective_rate(self) -> float:
        """The share of decisions that said yes so far (0.0 before the first)."""
        return self.sampled / self.seen if self.seen else 0.0

    def local_time(self, now: datetime | None = None) -> datetime:
        """`now` in the configured zone; a naive `now` is taken as wall-clock time in that zone."""
        if now is None:
            return datetime.now(self.tz)
        if now.tzinfo is None:
            return now.replace(tzinfo=self.tz)
        return now.astimezone(self.tz)

    def rate_at(self, now: datetime | None = None) -> float:
        """The rate in force at `now`: the first window that contains the local time, else the base rate."""
        local = self.local_time(now).time()
        for window in self.windows:
            if window.contains(local):
                return window.rate
        return self.base_rate

    def decide(self, user_id: str | None, now: datetime | None = None) -> bool:
        """Whether to shadow this request; counts it in `seen` and, when yes, in `sampled`."""
        rate = self.rate_at(now)
        with self._lock:
            if self.per == "user" and user_id is not None:
                chosen = user_bucket(user_id, self.salt) < rate
            else:
                chosen = self._rng.random() < rate
            self.seen += 1
            if chosen:
                self.sampled += 1
        return chosen

    def stats(self) -> dict[str, Any]:
        """Counters and the rate in force now, for a stats endpoint or a log line."""
        return {
            "seen": self.seen,
            "sampled": self.sampled,
            "effective_rate": self.effective_rate,
            "rate_now": self.rate_at(),
            "per": self.per,
        }


class SamplingConfig(BaseModel):
    """The `sampling:` block of a config file.

    ```yaml
    sampling:
      base_rate: 0.15
      windows: {"09:00-11:00": 0.05, "14:00-17:00": 0.5}
      tz: Europe/Amsterdam
      per: user
    ```
    """

    model_config = ConfigDict(extra="forbid")

    base_rate: float = Field(ge=0.0, le=1.0, description="Share of requests shadowed outside every window.")
    windows: dict[str, float] = Field(
        default_factory=dict,
        description="'HH:MM-HH:MM' -> rate, in local time of `tz`; may wrap midnight; first match wins.",
    )
    tz: str = Field(default="UTC", description="IANA time zone of the windows, e.g. Europe/Amsterdam.")
    per: Per = Field(default="request", description="'user': a user is in or out for a whole window.")

    @field_validator("windows")
    @classmethod
    def _windows_parse(cls, value: dict[str, float]) -> dict[str, float]:
        for spec, rate in value.items():
            try:
                parse_window(spec, rate)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("tz")
    @classmethod
    def _tz_known(cls, value: str) -> str:
        try:
            _zone(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "sampling") -> SamplingConfig:
        """Validate a mapping; raise `ConfigError` naming `source` and the offending field."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            lines = []
            for err in exc.errors():
                field = ".".join(str(p) for p in err["loc"]) or "(root)"
                lines.append(f"{source}: field '{field}': {err['msg']}")
            raise ConfigError("\n".join(lines)) from None

    def window_list(self) -> list[Window]:
        """The windows in the order written."""
        return [parse_window(spec, rate) for spec, rate in self.windows.items()]

    def build(self, seed: int | None = None) -> Sampler:
        """A `Sampler` for this config."""
        return Sampler(self.base_rate, self.window_list(), tz=self.tz, per=self.per, seed=seed)
