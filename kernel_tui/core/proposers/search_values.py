"""The search's values and choice: the Max-Q backup over the replay memory, and the exploration schedule
over the run that picks one of the scored candidates (the design is in `search`'s docstring)."""

from __future__ import annotations

import math
import random

# Exploration over the run: ε-greedy, then Boltzmann, then greedy.
EPSILON = (0.3, 0.1)
TEMPERATURE = (0.05, 0.01)
OPTIMISM = (1.0, 0.5)  # × the model's standard deviation: untried pairs start optimistic, less so later
PHASES = (1 / 3, 2 / 3)


def max_q_backup(transitions: list[dict], gamma: float) -> dict[str, dict[str, float]]:
    """The Max-Q backup over the replay memory, to its fixed point."""
    q: dict[str, dict[str, float]] = {}
    for t in transitions:
        q.setdefault(t["s"], {})[t["a"]] = float(t["r"])
    for _ in range(100):
        delta = 0.0
        for t in transitions:
            nxt = q.get(t["s2"])
            target = float(t["r"])
            if nxt:
                target = max(target, gamma * max(nxt.values()))
            old = q[t["s"]][t["a"]]
            if target > old:  # the max over what was seen: values only rise to it
                q[t["s"]][t["a"]] = target
                delta = max(delta, target - old)
        if delta < 1e-12:
            break
    return q


def choose(scores: list[tuple[float, float]], progress: float, rng: random.Random) -> int:
    """ε-greedy, then Boltzmann, then greedy, on Q̂ with an optimistic start for untried pairs; `progress` is
    the share of the run spent (step / budget_hint, at most 1)."""
    kappa = OPTIMISM[0] + (OPTIMISM[1] - OPTIMISM[0]) * progress
    values = [q + kappa * sd for q, sd in scores]
    n = len(values)
    if progress < PHASES[0]:  # ε-greedy
        frac = progress / PHASES[0]
        eps = EPSILON[0] + (EPSILON[1] - EPSILON[0]) * frac
        if rng.random() < eps:
            return rng.randrange(n)
        return _argmax(values, rng)
    if progress < PHASES[1]:  # Boltzmann
        frac = (progress - PHASES[0]) / (PHASES[1] - PHASES[0])
        tau = TEMPERATURE[0] * (TEMPERATURE[1] / TEMPERATURE[0]) ** frac
        top = max(values)
        weights = [math.exp((v - top) / tau) for v in values]
        pick = rng.random() * sum(weights)
        for i, wgt in enumerate(weights):
            pick -= wgt
            if pick <= 0:
                return i
        return n - 1
    return _argmax(values, rng)  # greedy


def _argmax(values: list[float], rng: random.Random) -> int:
    top = max(values)
    best = [i for i, v in enumerate(values) if v >= top - 1e-9]
    return best[0] if len(best) == 1 else rng.choice(best)
