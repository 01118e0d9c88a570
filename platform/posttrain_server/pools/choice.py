"""Which pool a job runs on: the one it names, or ``auto``, the cheapest with a worker online."""

from __future__ import annotations

from dataclasses import dataclass

from posttrain_server.api.errors import ApiError
from posttrain_server.billing.quotes import PoolQuote
from posttrain_server.pools.selectors import pool_get, pool_list

AUTO = "auto"


@dataclass(frozen=True)
class PoolChoice:
    requested: str
    quote: PoolQuote


def pool_choose(*, requested: str, quotes: list[PoolQuote]) -> PoolChoice:
    """``quotes`` are the enabled, priced pools, cheapest first.

    ``auto`` takes the cheapest pool with a worker online, else the cheapest enabled pool
    (the job then waits, and its events say so). A named pool must exist, be enabled and be
    priced; otherwise the request is refused with the list of usable pools.
    """
    usable = ", ".join(sorted(quote.pool for quote in quotes)) or "none"
    if requested == AUTO:
        if not quotes:
            raise ApiError("No pool is enabled and priced on this server", param="pool",
                           code="no_pool_available")
        online = [quote for quote in quotes if quote.workers_online > 0]
        return PoolChoice(requested, (online or quotes)[0])
    for quote in quotes:
        if quote.pool == requested:
            return PoolChoice(requested, quote)
    pool = pool_get(name=requested)
    if pool is None:
        known = ", ".join(p.name for p in pool_list())
        raise ApiError(f"Unknown pool {requested!r}; known pools: {known} (or 'auto')",
                       param="pool", code="unknown_pool")
    if not pool.enabled:
        raise ApiError(f"Pool {requested!r} is disabled; usable pools: {usable} (or 'auto')",
                       param="pool", code="pool_disabled")
    raise ApiError(f"Pool {requested!r} has no price in the current price book; usable "
                   f"pools: {usable}", param="pool", code="pool_not_priced")
