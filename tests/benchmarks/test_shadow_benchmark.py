"""Small runs of the shadow benchmarks: no champion errors and every row accounted for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(script: str, *args: str) -> Any:
    """Run ``benchmarks/<script>`` small; it must exit 0; its JSON output."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_shadow_overhead_benchmark_runs_and_rows_add_up() -> None:
    # the challenger hangs on every 50th request: those 6 must time out; a busy machine can slow a few 20 ms
    # answers past the timeout too, so a generous one keeps the count near 6
    result = run_benchmark("shadow_overhead.py", "--requests", "300", "--timeout", "1.0")
    assert result["champion_errors"] == 0 and result["rows_add_up"] is True
    stats = result["stats"]
    assert stats["sampled"] == 300 and stats["rows_written"] == 600 == result["rows_in_store"]
    assert 6 <= stats["challenger_timeouts"] <= 12 and stats["challenger_errors"] > 0


def test_shadow_proxy_load_benchmark_runs_and_rows_add_up() -> None:
    result = run_benchmark(
        "shadow_proxy_load.py", "--requests", "150", "--concurrency", "4", "--rounds", "3", "--timeout", "1.0"
    )
    assert result["champion_errors"] == 0 and result["rows_add_up"] is True
    # 150 warm-up + 150 measured requests through the proxy, every one shadowed to the one challenger
    stats = result["stats"]
    assert stats["sampled"] == 300 == result["rows_in_store"] and 6 <= stats["challenger_timeouts"] <= 12
    assert result["server_stack"] == {"loop": "uvloop", "http": "httptools"}  # the runtime dependencies
    assert result["requests_per_s"]["direct"] > 0 and result["requests_per_s"]["proxy"] > 0
    cpu = result["cpu_ms_per_request"]
    if cpu["proxy"]["proxy"] is not None:  # /proc is there (Linux): the proxy works only on its own path
        assert cpu["proxy"]["proxy"] > cpu["direct"]["proxy"]


def test_rounds_split_the_requests_evenly() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from shadow_proxy_load import _rounds
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert _rounds(10, 4) == [3, 3, 2, 2]
    assert _rounds(3, 8) == [1, 1, 1] and _rounds(5, 0) == [5]


def test_shadow_proxy_hop_benchmark_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "shadow_proxy_hop.py"), "--requests", "200"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr  # it exits non-zero unless every request got the upstream's 200
    result = json.loads(out.stdout)
    assert result["loop"] == "uvloop"
    assert result["cpu_us_per_request_c1"] > 0 and result["cpu_us_per_request_c16"] > 0
