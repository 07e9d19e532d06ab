"""Worker processes for `ragreplay shadow serve --workers N`: N uvicorn workers, each with its own proxy,
Shadow, ShadowLog and store connection.

uvicorn starts workers by importing the app by name, so the resolved :class:`ShadowServeConfig` travels to them
as JSON in an environment variable and :func:`create_app` (a uvicorn factory) builds the app in each worker.
Each worker samples, mirrors and logs on its own: ``/_shadow/stats`` shows the counters of whichever worker
answered, and the rows of all of them land in the one store (SQLite serialises the writers, PostgreSQL takes
them side by side).
"""

from __future__ import annotations

import os
from typing import Any

from ragreplay.asgi.guard import WholeBodies
from ragreplay.asgi.serving import serve
from ragreplay.errors import ConfigError
from ragreplay.settings import DEFAULT_DB
from ragreplay.shadow.config import ShadowServeConfig
from ragreplay.shadow.serve_app import app_from_config, bare_proxy_from_config
from ragreplay.store import Store

CONFIG_ENV = "RAGREPLAY_SHADOW_SERVE_CONFIG"
APP_FACTORY = "ragreplay.shadow.workers:create_served_app"


def export_config(cfg: ShadowServeConfig) -> None:
    """Put ``cfg`` where the workers' :func:`create_app` reads it (the workers inherit the environment)."""
    os.environ[CONFIG_ENV] = cfg.model_dump_json()


def create_app() -> Any:
    """The shadow serve app of one worker, from the configuration :func:`export_config` put in the
    environment: the proxy with the shadow wired when there are challengers, else the bare proxy."""
    raw = os.environ.get(CONFIG_ENV)
    if not raw:
        raise ConfigError(
            f"${CONFIG_ENV} is not set: this factory is started by `ragreplay shadow serve --workers N`. "
            "Fix: run that command instead of pointing uvicorn at it."
        )
    cfg = ShadowServeConfig.model_validate_json(raw)
    if not cfg.challengers:
        return bare_proxy_from_config(cfg)
    return app_from_config(cfg, Store.open(_store_url(cfg)))


def create_served_app() -> WholeBodies:
    """What each worker serves (the uvicorn factory): :func:`create_app` behind :class:`WholeBodies`, so a
    request whose body did not arrive whole never reaches the champion."""
    return WholeBodies(create_app())


def _store_url(cfg: ShadowServeConfig) -> str:
    return cfg.db or os.environ.get("RAGREPLAY_DB") or DEFAULT_DB


def check_workers(workers: int) -> int:
    """``workers`` if it is at least 1; else a `ConfigError` naming the flag."""
    if workers < 1:
        raise ConfigError(f"--workers {workers}: expected 1 or more. Fix: e.g. --workers 4 (one per core).")
    return workers


def run_workers(cfg: ShadowServeConfig, workers: int) -> None:
    """Serve ``cfg`` with ``workers`` uvicorn worker processes under ``cfg.server``'s limits (blocks until they
    stop)."""
    if cfg.challengers:
        # create or migrate the store once, here: a bad URL fails before any worker starts, and the workers
        # do not race each other to create the schema
        Store.open(_store_url(cfg)).close()
    export_config(cfg)
    serve(
        APP_FACTORY,
        cfg.host,
        cfg.port,
        cfg.server,
        factory=True,
        workers=check_workers(workers),
        # no server/date headers of the proxy's own: the champion's pass through unchanged
        server_header=False,
        date_header=False,
    )
