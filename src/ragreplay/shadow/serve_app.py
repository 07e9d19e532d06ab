"""The shadow serve app wired from its parts: the proxy in front of the champion, challengers as HTTP
targets, the sampler, the logs and the feedback tap."""

from __future__ import annotations

import os

from ragreplay.core.retry import RetryPolicy
from ragreplay.shadow.config import ShadowServeConfig
from ragreplay.shadow.library import Shadow
from ragreplay.shadow.log import ShadowLog
from ragreplay.shadow.mirror import (
    DEFAULT_MAX_REPLY,
    FeedbackTap,
    MirrorHttpTarget,
    ProxyMirror,
    ShadowServeApp,
)
from ragreplay.shadow.payloads import RequestFields
from ragreplay.shadow.privacy import Redactor, default_redactor, load_redactor
from ragreplay.shadow.proxy import SIDE_DOOR_TOKEN_ENV, ShadowProxy, create_proxy
from ragreplay.shadow.sampler import Sampler
from ragreplay.store import Store


def build_app(
    champion: str,
    challengers: dict[str, str],
    store: Store,
    sampler: Sampler,
    fields: RequestFields,
    timeout_s: float = 60.0,
    challenger_timeout_s: float = 30.0,
    *,
    max_body: int | None = None,
    shadow_max_body: int | None = None,
    max_reply: int | None = None,
    mirror_paths: tuple[str, ...] = (),
    feedback: FeedbackTap | None = None,
    redact: Redactor | None = default_redactor,
    hash_user_ids: bool = True,
) -> ShadowServeApp:
    """The proxy with the shadow wired: challengers as HTTP targets, rows and feedback logged to `store`
    (closed on exit); only `mirror_paths` (all when empty) are shadowed, and only requests whose body is at
    most `shadow_max_body` bytes; `feedback` reads the app's own feedback endpoint."""
    # The shadow's own timeout decides a hung first attempt (the +1 s keeps the client's out of its way);
    # retries (CHALLENGER_RETRY) end by the same timeout. The champion is never retried: it is the user's path.
    targets = {
        name: MirrorHttpTarget(
            name,
            url,
            fields,
            challenger_timeout_s + 1,
            deadline_s=challenger_timeout_s,
            max_reply=DEFAULT_MAX_REPLY if max_reply is None else max_reply,
        )
        for name, url in challengers.items()
    }
    shadow = Shadow(
        MirrorHttpTarget("champion", champion, fields, timeout_s, retry=RetryPolicy(max_retries=0)),
        targets,
        sampler=sampler,
        log=ShadowLog(store),
        challenger_timeout_s=challenger_timeout_s,
        redact=redact,
        hash_user_ids=hash_user_ids,
    )
    mirror = ProxyMirror(shadow, fields, mirror_paths=mirror_paths, feedback=feedback)

    async def close() -> None:
        for target in targets.values():
            await target.aclose()
        await shadow.champion.aclose()
        store.close()

    token = os.environ.get(SIDE_DOOR_TOKEN_ENV) or None  # a secret: from the environment only
    proxy = create_proxy(
        champion,
        mirror,
        timeout_s=timeout_s,
        max_body=max_body,
        side_door_token=token,
        shadow_max_body=shadow_max_body,
    )
    return ShadowServeApp(proxy, mirror, on_close=close)


def bare_proxy_from_config(cfg: ShadowServeConfig) -> ShadowProxy:
    """The proxy of a configuration without challengers: it forwards and counts only (no store), with the
    same body limit and side-door token as a shadowing one."""
    return create_proxy(
        cfg.champion,
        mirror=None,
        timeout_s=cfg.timeout_s,
        max_body=int(cfg.max_body_mb * (1 << 20)),
        side_door_token=os.environ.get(SIDE_DOOR_TOKEN_ENV) or None,
        shadow_max_body=int(cfg.shadow_max_body_kb * (1 << 10)),
    )


def app_from_config(cfg: ShadowServeConfig, store: Store) -> ShadowServeApp:
    """The shadow serve app for a validated configuration (challengers must be configured)."""
    return build_app(
        cfg.champion,
        cfg.challengers,
        store,
        cfg.sampling.build(),
        cfg.fields.build(),
        cfg.timeout_s,
        cfg.challenger_timeout_s,
        max_body=int(cfg.max_body_mb * (1 << 20)),
        shadow_max_body=int(cfg.shadow_max_body_kb * (1 << 10)),
        max_reply=int(cfg.max_reply_mb * (1 << 20)),
        mirror_paths=tuple(cfg.mirror_paths),
        feedback=cfg.feedback.build() if cfg.feedback is not None else None,
        redact=load_redactor(cfg.privacy.redact),
        hash_user_ids=cfg.privacy.hash_user_ids,
    )
