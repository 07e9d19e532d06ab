"""What the shadow proxy's CPU per request means for capacity and added latency: a queueing model.

python benchmarks/shadow_capacity.py --cpu-ms 0.75 --rate 2700 [--workers 1 2 3 4 6 8] [--target-ms 5]

Each proxied request needs ``cpu_ms`` of one core in its proxy process (hop, mirror, challenger call and log
together: all of it runs in that process, on or off the user's path). With ``workers`` processes on as many
cores and requests arriving at ``rate`` per second (Poisson), the added latency is the wait for a busy worker
plus the request's own CPU. Two ways the requests can meet the workers:

- ``pooled``: any idle worker takes the next request: M/M/c, the wait's tail from Erlang C. The best case.
- ``pinned``: each keep-alive connection stays with the worker that accepted it, so each worker is its own
  M/M/1 queue with ``rate / workers`` (uvicorn's workers share one listening socket, and connections spread
  over them, not requests). The realistic case for a load balancer with a keep-alive pool.

At concurrency 16 a third bound holds whatever the arrivals: with at most 16 requests in flight spread over
``workers`` pinned workers, none waits behind more than ``ceil(16 / workers) - 1`` others
(``added_max_ms_closed_loop_16``, off-path work of requests already answered aside). The open M/M/1 queues of
``pinned`` assume many clients; with 16 connections they are pessimistic, and meaningless past 16 workers.

Exponential service times overstate the tail of a nearly constant CPU cost (M/D/c waits about half as long),
so both are on the safe side. Prints one JSON object: what one core sustains at <= ``max_util`` utilisation,
and for each worker count the utilisation and the added p99 both ways, and the fewest workers that keep the
added p99 under ``target_ms`` each way.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any


def erlang_c(servers: int, load: float) -> float:
    """The probability that an arrival waits in an M/M/c queue with ``servers`` servers and offered ``load``
    (arrival rate times mean service time, in Erlangs); 1.0 when the queue is unstable (load >= servers)."""
    if servers < 1 or load < 0:
        raise ValueError("servers must be >= 1 and load >= 0")
    if load >= servers:
        return 1.0
    # Erlang B by its stable recurrence, then C from B
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    rho = load / servers
    return b / (1 - rho + rho * b)


def wait_quantile_s(servers: int, rate: float, service_s: float, q: float = 0.99) -> float:
    """The ``q`` quantile of the wait before service in M/M/c (seconds): P(W > t) = C * exp(-(c*mu - lam) t);
    ``inf`` when the queue is unstable."""
    load = rate * service_s
    if load >= servers:
        return math.inf
    waits = erlang_c(servers, load)
    if waits <= 1 - q:
        return 0.0
    return math.log(waits / (1 - q)) / (servers / service_s - rate)


def added_p99_ms(cpu_ms: float, rate: float, workers: int, pinned: bool = False) -> float:
    """The added p99 (ms) of ``workers`` proxy processes at ``rate`` requests/s, each request needing
    ``cpu_ms`` of a core: the p99 wait plus the request's own CPU. ``pinned``: ``workers`` separate M/M/1
    queues of ``rate / workers`` each; otherwise one M/M/c."""
    service_s = cpu_ms / 1000
    servers, arrivals = (1, rate / workers) if pinned else (workers, rate)
    wait = wait_quantile_s(servers, arrivals, service_s)
    return wait * 1000 + cpu_ms


def closed_loop_bound_ms(cpu_ms: float, concurrency: int, workers: int) -> float:
    """The most a request can wait plus run when at most ``concurrency`` requests are in flight, spread evenly
    over ``workers`` pinned workers: its own CPU and that of every other request on its worker. It leaves out
    the off-path work (challenger replies, rows) of requests already answered, which can add to it."""
    return math.ceil(concurrency / workers) * cpu_ms


def simulate_closed_loop(
    on_path_ms: float,
    off_path_ms: float,
    workers: int,
    concurrency: int = 16,
    champion_ms: float = 5.0,
    challenger_ms: float = 20.0,
    requests: int = 40_000,
    seed: int = 12,
) -> tuple[float, float]:
    """The added p99 (ms) and the requests/s carried, in a discrete-event simulation of the load harness with
    ``workers`` pinned workers: ``concurrency`` clients, each sending its next request as soon as the last is
    answered, their connections spread round-robin over the workers. A worker is one event loop: it runs one piece
    of work at a time, in the order they came. A request's ``on_path_ms`` runs before it reaches the champion (who
    answers after ``champion_ms``, on cores of its own); its ``off_path_ms`` (the shadow's share) runs in two halves
    on the same worker, one when the response is out (the mirror) and one ``challenger_ms`` later (the challenger's
    reply and the row), delaying whoever is queued behind them. Every CPU cost is drawn exponential with those means
    (as in the M/M/c model, on the safe side), and the champion takes ``champion_ms`` plus an exponential extra of 1
    ms on average (the direct path's spread in the load runs); without that spread the clients fall into lock-step
    and hardly ever queue."""
    import heapq
    import random

    rng = random.Random(seed)

    def cost(mean: float) -> float:
        return rng.expovariate(1 / mean) if mean > 0 else 0.0

    free_at = [0.0] * workers  # when each worker's queue of accepted work ends
    events: list[tuple[float, int, int, str]] = []  # (time, order, client, kind)
    order = 0

    def push(at: float, client: int, kind: str) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (at, order, client, kind))

    for client in range(concurrency):
        push(client * 0.01, client, "send")
    added: list[float] = []
    sent_at = [0.0] * concurrency
    extra = [0.0] * concurrency
    while len(added) < requests:
        at, _, client, kind = heapq.heappop(events)
        worker = client % workers
        if kind == "send":
            sent_at[client] = at
            done = max(at, free_at[worker]) + cost(on_path_ms)
            free_at[worker] = done
            extra[client] = cost(1.0)  # the champion's own spread: on the direct path too, so not added
            push(done + champion_ms + extra[client], client, "answered")
        elif kind == "answered":
            added.append(at - sent_at[client] - champion_ms - extra[client])
            free_at[worker] = max(at, free_at[worker]) + cost(
                off_path_ms / 2
            )  # the mirror, after the response
            push(at + challenger_ms, client, "challenger")
            push(at, client, "send")  # the client's next request, at once
        else:  # the challenger answered: its reply and the row
            free_at[worker] = max(at, free_at[worker]) + cost(off_path_ms / 2)
    added.sort()
    return added[int(0.99 * len(added))], len(added) / at * 1000


def one_core_sustains(cpu_ms: float, max_util: float = 0.5) -> float:
    """Requests/s one core serves at ``cpu_ms`` each while kept at or below ``max_util`` busy."""
    return max_util * 1000 / cpu_ms


def workers_needed(
    cpu_ms: float, rate: float, target_ms: float, pinned: bool = False, most: int = 256
) -> int | None:
    """The fewest workers that keep the added p99 under ``target_ms`` (None if ``most`` do not)."""
    for workers in range(1, most + 1):
        if added_p99_ms(cpu_ms, rate, workers, pinned) < target_ms:
            return workers
    return None


def _simulated(on_path_ms: float | None, cpu_ms: float, workers: int) -> dict[str, float]:
    if on_path_ms is None:
        return {}
    p99, carried = simulate_closed_loop(min(on_path_ms, cpu_ms), max(cpu_ms - on_path_ms, 0.0), workers)
    return {"added_p99_ms_simulated_16": round(p99, 2), "simulated_per_s": round(carried)}


def model(
    cpu_ms: float,
    rate: float,
    workers: list[int],
    target_ms: float = 5.0,
    max_util: float = 0.5,
    on_path_ms: float | None = None,
) -> dict[str, Any]:
    """The whole table for one CPU cost and arrival rate; with ``on_path_ms`` (the part of ``cpu_ms`` before
    the champion is asked) also the closed-loop simulation at concurrency 16."""

    def ms(value: float) -> float | None:
        return None if math.isinf(value) else round(value, 2)

    return {
        "cpu_ms_per_request": cpu_ms,
        "rate_per_s": rate,
        f"one_core_sustains_per_s_at_{round(max_util * 100)}pct": round(one_core_sustains(cpu_ms, max_util)),
        "one_core_saturates_per_s": round(1000 / cpu_ms),
        "by_workers": [
            {
                "workers": n,
                "utilisation": round(rate * cpu_ms / 1000 / n, 3),
                "added_p99_ms_pooled": ms(added_p99_ms(cpu_ms, rate, n)),
                "added_p99_ms_pinned": ms(added_p99_ms(cpu_ms, rate, n, pinned=True)),
                "added_max_ms_closed_loop_16": round(closed_loop_bound_ms(cpu_ms, 16, n), 2),
                **_simulated(on_path_ms, cpu_ms, n),
            }
            for n in workers
        ],
        "target_ms": target_ms,
        "workers_needed_pooled": workers_needed(cpu_ms, rate, target_ms),
        "workers_needed_pinned": workers_needed(cpu_ms, rate, target_ms, pinned=True),
    }


def main() -> None:
    """Parse arguments, print the model as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cpu-ms", type=float, nargs="+", default=[0.75], help="proxy CPU ms per request")
    parser.add_argument("--rate", type=float, default=2700.0, help="arrivals per second")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8])
    parser.add_argument("--target-ms", type=float, default=5.0)
    parser.add_argument("--max-util", type=float, default=0.5)
    parser.add_argument(
        "--on-path-ms",
        type=float,
        default=None,
        help="the part of the CPU before the champion is asked (the forward): also simulate the closed loop",
    )
    args = parser.parse_args()
    out = [
        model(c, args.rate, args.workers, args.target_ms, args.max_util, args.on_path_ms) for c in args.cpu_ms
    ]
    print(json.dumps(out if len(out) > 1 else out[0], indent=2))


if __name__ == "__main__":
    main()
