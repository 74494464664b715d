"""The knob spaces: every assignment of the swept values, each built into a source one search action at
a time, so every config is one the search itself could reach."""

from __future__ import annotations

import dataclasses
import itertools
import random

from bench.sweep.settings import STEP_ORDER


@dataclasses.dataclass
class Config:
    index: int
    assignment: dict  # every knob of the built source
    swept: dict  # the swept knobs' values
    change: str
    source: str | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        return " ".join(f"{k.rsplit(':', 1)[-1]}={v if v != '' else 'default'}" for k, v in self.swept.items())


def build_source(baseline: str, target: dict) -> tuple[str, list[str]]:
    """The baseline with `target`'s knob values, one action at a time (every step keeps the constraints);
    a depth-first search over the order of the steps, since a step may only be allowed after another."""
    from kernel_tui.core.proposers.transforms import analyze, source_hash

    seen: set[str] = set()

    def search(source: str, changes: list[str]) -> tuple[str, list[str]] | None:
        a = analyze(source)
        todo = {k: v for k, v in target.items() if a.assignment.get(k, object()) != v}
        if not todo:
            return source, changes
        h = source_hash(source)
        if h in seen:
            return None
        seen.add(h)
        steps = [x for x in a.actions() if x.knob in todo and todo[x.knob] == x.new]
        for step in sorted(steps, key=lambda x: STEP_ORDER.get(x.kind, 2)):
            found = search(a.apply(step), [*changes, step.change])
            if found:
                return found
        return None

    found = search(baseline, [])
    if found is None:
        raise ValueError("no order of single-knob steps reaches this assignment")
    final = analyze(found[0])
    if final.violations(final.assignment):
        raise ValueError(f"the built source breaks {sorted(final.violations(final.assignment))}")
    return found


def enumerate_space(baseline: str, values: dict[str, list]) -> list[dict]:
    """Every assignment of the swept values (other knobs as in the baseline) that breaks no bound."""
    from kernel_tui.core.proposers.transforms import analyze

    a = analyze(baseline)
    unknown = sorted(set(values) - set(a.knobs))
    if unknown:
        raise ValueError(f"knobs not in the baseline: {unknown}")
    knobs = list(values)
    out = []
    for combo in itertools.product(*(values[k] for k in knobs)):
        assignment = {**a.assignment, **dict(zip(knobs, combo))}
        if not a.violations(assignment):
            out.append(dict(zip(knobs, combo)))
    return out


def build_space(baseline: str, values: dict[str, list], swept_list: list[dict] | None = None) -> list[Config]:
    from kernel_tui.core.proposers.transforms import analyze

    base = analyze(baseline).assignment
    configs = []
    for i, swept in enumerate(swept_list if swept_list is not None else enumerate_space(baseline, values)):
        cfg = Config(index=i, assignment={**base, **swept}, swept=swept, change="")
        try:
            cfg.source, changes = build_source(baseline, {**base, **swept})
            cfg.assignment = analyze(cfg.source).assignment
            cfg.change = "; ".join(changes) or "baseline"
        except Exception as exc:  # noqa: BLE001 - one config's failure is recorded, not fatal
            cfg.error = f"{type(exc).__name__}: {exc}"
        configs.append(cfg)
    return configs


def nearest_to_baseline(baseline: str, configs: list[Config]) -> int:
    """The config differing from the baseline in the fewest knobs: where a replay starts."""
    from kernel_tui.core.proposers.transforms import analyze

    base = analyze(baseline).assignment
    ok = [c for c in configs if c.source is not None]
    return min(ok, key=lambda c: (sum(base.get(k) != v for k, v in c.swept.items()), c.index)).index


def timing_order(configs: list[Config], first: int) -> list[int]:
    """`first`, then the rest shuffled: a sweep cut short has timed a uniform sample, and drift over the
    run is not confounded with any knob."""
    rest = [c.index for c in configs if c.index != first]
    random.Random(0).shuffle(rest)
    return [first, *rest]
