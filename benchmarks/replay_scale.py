"""How replay scales on the client: CPU per case, efficiency against a slow endpoint, peak memory, start-up.

    python benchmarks/replay_scale.py cpu --cases 2000 --concurrency 64          # mock at 0 ms: CPU per case
    python benchmarks/replay_scale.py efficiency --cases 2000 --concurrency 16 32 64 --latency-ms 100
    python benchmarks/replay_scale.py memory --cases 2000 20000                  # peak RSS of a whole run
    python benchmarks/replay_scale.py startup                 # `ragreplay --help`, `--version`, `run --help`
    python benchmarks/replay_scale.py profile --cases 2000 --concurrency 64      # where the client's CPU goes
    RAGREPLAY_HTTP_CLIENT=aiohttp python benchmarks/replay_scale.py cpu ...      # the same with aiohttp

CPU is the client process's CPU time (``time.process_time``: every thread, the writer's too), which other load
on the machine barely changes; wall-clock figures (efficiency) do change with it. The mock's own CPU per call
(read from ``/proc``, Linux only) is shown beside it: on a small machine the mock competes with the client for
the cores, which a real endpoint does not. A first line gives the machine's speed (the best of 5 timings of
``sum(range(10**6))``), so CPU figures from different machines can be compared. The memory figure is the peak
RSS (``VmHWM``) of a fresh process that runs what ``ragreplay run`` runs (select the cases, replay them
with the fake judge and rewriter, summarise the run for the terminal) on a store filled beforehand.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
import timeit
from datetime import UTC, datetime
from pathlib import Path

from ragreplay.core.runs import SourceRecord
from ragreplay.providers.config import ProviderConfig
from ragreplay.providers.openai_compat import HTTP_CLIENT_ENV
from ragreplay.providers.pricing import Price
from ragreplay.replay.replay_run import case_selection, replay, summarize_run
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.batch import WriteBatch
from ragreplay.targets.fake import FakeTarget
from replay_throughput import mock_requests, start_mock, synthetic_items

ROOT = Path(__file__).resolve().parents[1]


def fill(db: str, n_cases: int) -> None:
    """A store holding ``n_cases`` synthetic labelled cases (written in slices, so filling stays small)."""
    store = Store.open(db)
    try:
        items = synthetic_items(n_cases)
        for start in range(0, len(items), 5000):
            source = SourceRecord(
                id=f"src_bench_{start}", path="synthetic", format="canonical", ingested_at=datetime.now(UTC)
            )
            store.cases.write_source(source, items[start : start + 5000])
    finally:
        store.close()


async def replay_cold(store: Store, base_url: str, concurrency: int, model: str) -> tuple[float, int]:
    """A fresh run through the service the CLI uses, with a model name of its own (so a cold cache)."""
    settings = Settings(
        db=store.url,
        judge=f"mock:{model}",
        concurrency=concurrency * 2,
        providers={"mock": ProviderConfig(base_url=base_url, max_concurrency=concurrency, max_retries=0)},
        prices={f"mock:{model}": Price(0.4, 1.6)},
    )
    cases = case_selection(store)
    target = FakeTarget(echo_old_answer=True, name="echo")
    start = time.perf_counter()
    await replay(store, settings, target, cases, {}, env=client_env(), fresh=True)
    return time.perf_counter() - start, len(cases)


def client_env() -> dict[str, str]:
    """The factory's environment: only ``RAGREPLAY_HTTP_CLIENT`` (which HTTP client calls the mock), if set."""
    return {k: v for k, v in os.environ.items() if k == HTTP_CLIENT_ENV}


def machine_speed() -> str:
    """A line saying how fast this machine runs plain Python: the best of 5 timings of ``sum(range(10**6))``."""
    best = min(timeit.repeat("sum(range(10**6))", number=1, repeat=5))
    return (
        f"machine: sum(range(10**6)) in {best * 1000:.1f} ms (best of 5), Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used, from ``/proc`` (None where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def endpoint_runs(
    n_cases: int, concurrencies: list[int], latency_ms: float
) -> list[tuple[int, int, int, float, float, float | None]]:
    """(cases, concurrency, model calls, wall s, client CPU s, mock CPU s) of one cold run per concurrency,
    each on a store of its own (no pinned rewrite, no cached call)."""
    base_url, mock = start_mock(latency_ms)
    rows = []
    try:
        for concurrency in concurrencies:
            with tempfile.TemporaryDirectory() as tmp:
                db = str(Path(tmp) / "bench.db")
                fill(db, n_cases)
                store = Store.open(db)
                try:
                    before = mock_requests(base_url)
                    mock0 = process_cpu_s(mock.pid)
                    cpu0 = time.process_time()
                    model = f"bench-c{concurrency}"
                    seconds, n = asyncio.run(replay_cold(store, base_url, concurrency, model))
                    used = time.process_time() - cpu0
                    mock1 = process_cpu_s(mock.pid)
                    mock_used = None if mock0 is None or mock1 is None else mock1 - mock0
                    calls = mock_requests(base_url) - before
                    rows.append((n, concurrency, calls, seconds, used, mock_used))
                finally:
                    store.close()
    finally:
        mock.terminate()
        mock.wait(10)
    return rows


def cpu(n_cases: int, concurrencies: list[int]) -> None:
    """Client CPU per case of a cold run against the mock at 0 ms (the endpoint costs no time)."""
    print(machine_speed())
    print(
        "| cases | concurrency | model calls | client CPU (s) | CPU per case (ms) | wall (s) | "
        "mock CPU per call (ms) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, concurrency, calls, seconds, used, mock_used in endpoint_runs(n_cases, concurrencies, 0):
        print(
            f"| {n} | {concurrency} | {calls} | {used:.2f} | {used / n * 1000:.3f} | {seconds:.2f} | "
            f"{_per_call_ms(mock_used, calls)} |"
        )


def _per_call_ms(seconds: float | None, calls: int) -> str:
    return "-" if seconds is None or not calls else f"{seconds / calls * 1000:.3f}"


def efficiency(n_cases: int, concurrencies: list[int], latency_ms: float) -> None:
    """Achieved / ideal wall time at each provider concurrency against a fixed-latency endpoint."""
    print(machine_speed())
    print(
        "| cases | concurrency | latency | model calls | wall (s) | ideal (s) | achieved/ideal | "
        "CPU per case (ms) | mock CPU per call (ms) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, concurrency, calls, seconds, used, mock_used in endpoint_runs(n_cases, concurrencies, latency_ms):
        ideal = calls * latency_ms / 1000 / concurrency
        print(
            f"| {n} | {concurrency} | {latency_ms:.0f} ms | {calls} | {seconds:.2f} | {ideal:.2f} | "
            f"{ideal / seconds:.3f} | {used / n * 1000:.3f} | {_per_call_ms(mock_used, calls)} |"
        )


PROFILE_GROUPS = (
    ("aiohttp", ("aiohttp/", "multidict/", "yarl/")),
    ("asyncio (event loop, tasks)", ("asyncio/", "selectors.py")),
    ("json", ("json/",)),
    ("pydantic", ("pydantic/", "pydantic_core")),
    ("sqlalchemy", ("sqlalchemy/",)),
    ("sqlite3", ("sqlite3",)),
    ("hashlib", ("hashlib", "openssl_")),
    ("logging", ("logging/",)),
    ("ragreplay: providers", ("ragreplay/providers/",)),
    ("ragreplay: jobs", ("ragreplay/jobs/",)),
    ("ragreplay: store", ("ragreplay/store/",)),
    ("ragreplay: replay, judges, targets, core", ("ragreplay/",)),
)


def profile_groups(stats: pstats.Stats) -> dict[str, float]:
    """Own CPU seconds (``tottime``) per group of :data:`PROFILE_GROUPS`; the rest is "other"."""
    groups: dict[str, float] = {}
    for (path, _, func), row in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{path}:{func}"
        name = next((g for g, marks in PROFILE_GROUPS if any(m in where for m in marks)), "other")
        groups[name] = groups.get(name, 0.0) + row[2]
    return groups


def profile(n_cases: int, concurrency: int, top: int, latency_ms: float = 0.0) -> None:
    """One cold run against the mock (at 0 ms unless ``latency_ms``) under cProfile: the event loop's thread
    profiled with its own CPU clock (``time.thread_time``), the writer's thread with its own, so the split adds
    up to process CPU."""
    base_url, mock = start_mock(latency_ms)
    writer_profile = cProfile.Profile(time.thread_time)
    apply_batch = Store.write_batch

    def profiled_write_batch(self: Store, batch: WriteBatch) -> object:
        writer_profile.enable()
        try:
            return apply_batch(self, batch)
        finally:
            writer_profile.disable()

    Store.write_batch = profiled_write_batch  # type: ignore[method-assign,assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "bench.db")
            fill(db, n_cases)
            store = Store.open(db)
            loop_profile = cProfile.Profile(time.thread_time)
            cpu0 = time.process_time()
            try:
                loop_profile.enable()
                _, n = asyncio.run(replay_cold(store, base_url, concurrency, "bench-profile"))
                loop_profile.disable()
            finally:
                store.close()
            used = time.process_time() - cpu0
    finally:
        Store.write_batch = apply_batch  # type: ignore[method-assign]
        mock.terminate()
        mock.wait(10)
    loop_stats = pstats.Stats(loop_profile)
    writer_stats = pstats.Stats(writer_profile)
    loop_s = sum(row[2] for row in loop_stats.stats.values())  # type: ignore[attr-defined]
    writer_s = sum(row[2] for row in writer_stats.stats.values())  # type: ignore[attr-defined]
    print(machine_speed())
    print(
        f"{n} cases, concurrency {concurrency}: process CPU {used:.2f} s under the profiler "
        f"(event loop thread {loop_s:.2f} s, writer thread {writer_s:.2f} s)\n"
    )
    print("| thread | group | CPU (s) | ms per case |")
    print("|---|---|---:|---:|")
    for thread, stats in (("event loop", loop_stats), ("writer", writer_stats)):
        for name, seconds in sorted(profile_groups(stats).items(), key=lambda kv: -kv[1]):
            if seconds >= 0.005:
                print(f"| {thread} | {name} | {seconds:.2f} | {seconds / n * 1000:.3f} |")
    if top:
        for stats in (loop_stats, writer_stats):
            stats.sort_stats("tottime").print_stats(top)


def memory_child(db: str) -> None:
    """What `ragreplay run` does, on a filled store; prints the process's peak RSS in MB."""
    from ragreplay.report.terminal import build_renderable

    store = Store.open(db)
    try:
        settings = Settings(db=db, judge="fake:default", concurrency=16)
        cases = case_selection(store)
        target = FakeTarget(echo_old_answer=True, name="echo")
        run = asyncio.run(replay(store, settings, target, cases, {}, env={}, fresh=True))
        build_renderable(summarize_run(store, run.id, keep=5), examples=5)
    finally:
        store.close()
    print(peak_rss_mb())


def peak_rss_mb() -> float:
    """This process's peak RSS in MB: Linux's ``VmHWM``, which (unlike ``ru_maxrss``) does not carry over the
    parent's peak from before ``exec``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory(sizes: list[int]) -> None:
    """Peak RSS of a whole run at each size, each in a fresh process."""
    print("| cases | peak RSS (MB) | wall (s) |")
    print("|---:|---:|---:|")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "bench.db")
            fill(db, n)
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, __file__, "memory-child", db], capture_output=True, text=True, check=True
            ).stdout
            print(f"| {n} | {float(out.strip().splitlines()[-1]):.0f} | {time.perf_counter() - start:.1f} |")


STARTUP_COMMANDS = (["--help"], ["--version"], ["run", "--help"])
"""``run --help`` imports what ``ragreplay run`` imports before its first case, and stops there."""


def startup(repeat: int) -> None:
    """Wall and CPU time of `ragreplay --help`, `--version` and `run --help` (best of ``repeat``) and the heavy
    modules each imports."""
    exe = Path(sys.executable).with_name("ragreplay")
    print(f"| command | wall, best of {repeat} (s) | CPU, best of {repeat} (s) | heavy modules imported |")
    print("|---|---:|---:|---|")
    for argv in STARTUP_COMMANDS:
        best_wall = best_cpu = float("inf")
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([str(exe), *argv], capture_output=True, check=True)
            best_wall = min(best_wall, time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            best_cpu = min(best_cpu, cpu)
        print(
            f"| `ragreplay {' '.join(argv)}` | {best_wall:.2f} | {best_cpu:.2f} | {_heavy_imported(argv)} |"
        )


def _heavy_imported(argv: list[str]) -> str:
    probe = (
        "import contextlib, io, sys\nfrom ragreplay.cli.app import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    main({argv!r})\n"
        "print(','.join(m for m in HEAVY if m in sys.modules) or '-')"
    )
    heavy = "HEAVY = ('sqlalchemy', 'httpx', 'aiohttp', 'uvicorn', 'numpy', 'starlette', 'jinja2')\n"
    return (
        subprocess.run([sys.executable, "-c", heavy + probe], capture_output=True, text=True, check=True)
        .stdout.strip()
        .splitlines()[-1]
    )


def main() -> None:
    """Run one of the measurements and print a Markdown table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    p_cpu = sub.add_parser("cpu")
    p_cpu.add_argument("--cases", type=int, default=2000)
    p_cpu.add_argument("--concurrency", type=int, nargs="+", default=[64])
    p_eff = sub.add_parser("efficiency")
    p_eff.add_argument("--cases", type=int, default=2000)
    p_eff.add_argument("--concurrency", type=int, nargs="+", default=[16, 32, 64])
    p_eff.add_argument("--latency-ms", type=float, default=100.0)
    p_mem = sub.add_parser("memory")
    p_mem.add_argument("--cases", type=int, nargs="+", default=[2000, 20000])
    p_child = sub.add_parser("memory-child")
    p_child.add_argument("db")
    p_prof = sub.add_parser("profile")
    p_prof.add_argument("--cases", type=int, default=2000)
    p_prof.add_argument("--concurrency", type=int, default=64)
    p_prof.add_argument("--top", type=int, default=0, help="also print the top N functions of each thread")
    p_prof.add_argument("--latency-ms", type=float, default=0.0, help="the mock's latency (default 0)")
    p_start = sub.add_parser("startup")
    p_start.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.what == "cpu":
        cpu(args.cases, args.concurrency)
    elif args.what == "efficiency":
        efficiency(args.cases, args.concurrency, args.latency_ms)
    elif args.what == "memory":
        memory(args.cases)
    elif args.what == "profile":
        profile(args.cases, args.concurrency, args.top, args.latency_ms)
    elif args.what == "memory-child":
        memory_child(args.db)
    else:
        startup(args.repeat)


if __name__ == "__main__":
    main()
