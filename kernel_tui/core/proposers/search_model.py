"""The built-in search's value model: a small Bayesian linear model of log speedup over knob values.

It predicts L(s) = log(T_baseline / T(s)) of an assignment the search has not measured, fitted to every
evaluated candidate. Each knob value has one weight; adjacent values of a numeric knob are smoothed together,
so that a good BLOCK_SIZE makes its neighbours look promising. In a kernel with tl.dot the tile knobs and
their partners (block, num_warps, num_stages) also have a weight per value beside each other block knob's
value, and share only a small part across tiles: num_warps 16 measured 2.7 times slower on a 64x64 tile says
little about num_warps 8 on a 128x128 one. The search (`search.SearchProposer`) holds one and saves its parts.
"""

from __future__ import annotations

import json
import math

import numpy as np

from kernel_tui.core.proposers.transforms import Analysis

# Log-speedup units: observation noise, prior spread of a knob value's effect,
# prior spread of the difference between adjacent values of a numeric knob.
NOISE_SD = 0.05
EFFECT_SD = 0.3
SMOOTH_SD = 0.3
ANCHOR_SD = 1e-3  # a knob's first-seen value is the reference (effect 0)
# Kinds whose best value depends on the tile beside them, in a kernel with tl.dot (a larger tile wants more
# warps; fewer stages of it fit): besides its shared weight (spread SHARED_SD, not EFFECT_SD), each value has
# one weight per value of each other block knob (spread CONTEXT_SD). An effect measured on one tile is then
# mostly put down to that tile, and carries to another the less, the more of the tile's dimensions differ:
# of num_warps 16 measured 2.7 times slower on 64x64x32, about a third carries to 128x128x32 (one dimension
# alike), and num_warps 8 there stays worth a try. The matmul replay over the H200 tables took a median of
# 8.5 evaluations with these pairwise weights, 17.5 with one weight per whole tile (of which nothing carries
# once any dimension moves).
TILE_KINDS = {"block", "num_warps", "num_stages"}
CONTEXT_SD = 0.3
SHARED_SD = 0.1


class ValueModel:
    """The knobs seen so far (their kinds and values) and the measured programs the model is fitted to."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}  # knob -> its kind (Knob.kind)
        self.dot_knobs: set[str] = set()  # tiles and launch options of kernels that call tl.dot
        self.domains: dict[str, list] = {}  # knob -> its values (numeric knobs sorted), first = reference
        self.numeric: dict[str, bool] = {}
        self.samples: list[list] = []  # [assignment, L] of every measured program
        self._fitted: tuple | None = None  # (index, weights, covariance, tiled) until the data changes

    @classmethod
    def from_state(cls, state: dict) -> ValueModel:
        """The model of a saved search state (`SearchProposer.state` writes these keys)."""
        model = cls()
        model.samples = [list(x) for x in state.get("samples") or []]
        model.domains = {k: list(v) for k, v in (state.get("domains") or {}).items()}
        model.numeric = dict(state.get("numeric") or {})
        model.kinds = dict(state.get("kinds") or {})  # before version 2: filled again as sources are analysed
        model.dot_knobs = set(state.get("dot_knobs") or [])
        return model

    def register(self, analysis: Analysis) -> None:
        """Record the knobs of an analysed source: their kinds, and their values (the first seen is the reference)."""
        for kid, knob in analysis.knobs.items():
            if self.kinds.get(kid) != knob.kind or (knob.dot and kid not in self.dot_knobs):
                self.kinds[kid] = knob.kind
                if knob.dot:
                    self.dot_knobs.add(kid)
                self._fitted = None
            values = self.domains.get(kid)
            if values is None:
                values = self.domains[kid] = [knob.value]
                self.numeric[kid] = knob.numeric
                self._fitted = None
            for v in (knob.value, *knob.domain):
                if v not in values:
                    values.append(v)
                    self._fitted = None
            if knob.numeric:
                ref = values[0]
                values.sort()
                values.remove(ref)
                values.insert(0, ref)

    def add(self, assignment: dict, level: float) -> None:
        """A measured program: its assignment and L."""
        self.samples.append([assignment, level])
        self._fitted = None

    def tiles(self) -> set[str]:
        return {k for k in self.dot_knobs if self.kinds.get(k) == "block"}

    def tiled(self) -> set[str]:
        """The knobs whose effect the model reads per tile: of a tile kind, in a source with tl.dot, beside
        another block knob. (An elementwise block couples weakly with its warps, see
        `SearchProposer._coupled`; read per block, every warp count was tried again on each new block: the
        vector_add replay took a median of 14 evaluations instead of 10.)"""
        tiles = self.tiles()
        return {k for k in self.dot_knobs if self.kinds.get(k) in TILE_KINDS and tiles - {k}}

    def terms(self, assignment: dict, tiled: set[str]) -> set[tuple[str, ...]]:
        """The model's features an assignment switches on: each knob's value, and for a tiled knob its value
        beside each other block knob's value. A knob's reference value has no such pair: its effect is 0 on
        every tile, which leaves a tile's own effect to the block weights."""
        terms: set[tuple[str, ...]] = {(kid, json.dumps(v)) for kid, v in assignment.items()}
        tiles = self.tiles()
        for kid, v in assignment.items():
            values = self.domains.get(kid)
            if kid in tiled and values and v != values[0]:
                terms.update((kid, json.dumps(v), b, json.dumps(assignment[b])) for b in tiles - {kid} if b in assignment)
        return terms

    def _fit(self) -> tuple:
        if self._fitted is not None:
            return self._fitted
        tiled = self.tiled()
        index: dict[tuple[str, ...], int] = {}
        for kid, values in self.domains.items():
            for v in values:
                index[(kid, json.dumps(v))] = len(index)
        sample_terms = [(self.terms(assignment, tiled), float(level)) for assignment, level in self.samples]
        for terms, _ in sample_terms:
            for t in sorted(terms):
                if len(t) > 2 and t not in index:
                    index[t] = len(index)
        n = len(index)
        prior = np.array([1 / CONTEXT_SD**2 if len(t) > 2 else 1 / (SHARED_SD if t[0] in tiled else EFFECT_SD)**2
                          for t in index])
        precision = np.diag(prior)
        for kid, values in self.domains.items():
            ref = index[(kid, json.dumps(values[0]))]
            precision[ref, ref] += 1 / ANCHOR_SD**2
            if self.numeric.get(kid):
                ordered = sorted(values)
                for a, b in zip(ordered, ordered[1:]):
                    i, j = index[(kid, json.dumps(a))], index[(kid, json.dumps(b))]
                    precision[i, i] += 1 / SMOOTH_SD**2
                    precision[j, j] += 1 / SMOOTH_SD**2
                    precision[i, j] -= 1 / SMOOTH_SD**2
                    precision[j, i] -= 1 / SMOOTH_SD**2
        rhs = np.zeros(n)
        for terms, level in sample_terms:
            idx = sorted(index[t] for t in terms if t in index)
            precision[np.ix_(idx, idx)] += 1 / NOISE_SD**2
            rhs[idx] += level / NOISE_SD**2
        cov = np.linalg.inv(precision)
        self._fitted = (index, cov @ rhs, cov, tiled)
        return self._fitted

    def predict(self, assignment: dict, base: dict | None = None) -> tuple[float, float]:
        """Mean and standard deviation of L(assignment) (or of its difference to L(base)). A knob value beside
        a tile value no measured program had adds its prior spread: nothing is known of that pair yet."""
        index, w, cov, tiled = self._fit()
        plus = self.terms(assignment, tiled)
        minus = self.terms(base, tiled) if base is not None else set()
        idx, sign, unseen = [], [], 0
        for terms, sgn in ((plus - minus, 1.0), (minus - plus, -1.0)):
            for t in sorted(terms):  # a fixed order: the same sums in a resumed process
                if t in index:
                    idx.append(index[t])
                    sign.append(sgn)
                else:
                    unseen += len(t) > 2
        x = np.array(sign)
        mean = float(x @ w[idx]) if idx else 0.0
        var = float(x @ cov[np.ix_(idx, idx)] @ x) if idx else 0.0
        return mean, math.sqrt(max(0.0, var) + unseen * CONTEXT_SD**2)

    def mean(self, assignment: dict) -> float:
        """The mean of L(assignment) alone (no standard deviation: cheaper, for the lookahead)."""
        index, w, _, tiled = self._fit()
        return float(sum(w[index[t]] for t in sorted(self.terms(assignment, tiled)) if t in index))
