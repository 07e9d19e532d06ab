"""`ragreplay shadow`: `shadow serve` and `shadow report` (shadow_cmd) with the commands of the sibling modules,
registered once, when `ragreplay shadow ...` is first used."""

from __future__ import annotations

from ragreplay.cli import (
    shadow_cmd,
    shadow_dashboard_cmd,
    shadow_demo_cmd,
    shadow_feedback_cmd,
    shadow_judge_cmd,
    shadow_purge_cmd,
)

shadow_app = shadow_cmd.shadow_app
shadow_judge_cmd.register(shadow_app)
shadow_feedback_cmd.register(shadow_app)
shadow_purge_cmd.register(shadow_app)
shadow_dashboard_cmd.register(shadow_app)
shadow_app.command(name="demo")(shadow_demo_cmd.demo)
