"""The statistics of the summary: medians that skip what was not
measured, ratios that are None where either side is, a least-squares
line, the Williams orders of --balance-order, and the percentiles of
--apps' latencies."""

import math
import statistics


def median(values):
    """The median of the values that are not None, or None."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    """a / b, or None where either is unknown or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def linfit(xs, ys):
    """(slope, intercept, R²) of the least-squares line through the
    points, or None with fewer than two distinct xs."""
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    slope = sxy / sxx
    icpt = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - icpt - slope * x) ** 2 for x, y in zip(xs, ys))
    r2 = 1 - ss_res / ss_tot if ss_tot else 1.0
    return slope, icpt, r2


def williams_orders(n):
    """Orders of range(n), one per run, by a Williams design: over its
    rows (n of them, 2n when n is odd) every item comes once in each
    position and right after every other item equally often. A put can
    leave the machine warmer or colder for the next one, and a plain
    rotation keeps each system's predecessor. Measured with one: the UCX
    system, always right after the jar's TCP put, was slower than the same
    client forcing fan-out right after it in 5 of 6 runs, by up to 27%;
    the one run where both followed the jar, they were within 2%."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        if len(first) % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def percentile(sorted_values, q):
    """The nearest-rank q-quantile (0 < q <= 1) of values sorted
    ascending: the smallest value at or below which a fraction q of them
    lie; None for no values. With fewer than 1/(1-q) values it is the
    largest (p99 of 16 files is the slowest file)."""
    n = len(sorted_values)
    if not n:
        return None
    # q * n in floating point can come out a hair above an integer.
    return sorted_values[min(n, max(1, math.ceil(q * n - 1e-9))) - 1]
