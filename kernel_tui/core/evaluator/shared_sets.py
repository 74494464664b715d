"""Argument sets whose side buffers live in arenas shared with each side's worker alone.

The judge builds a group of sets at once: one arena per side, big enough for the group, mapped by that
side's worker, and each set's launch arguments described to it (where each tensor sits, which arguments are
scalars). A call then names a set and carries its current scalar values.
"""

from __future__ import annotations

import itertools
import random

import torch

from kernel_tui.core.evaluator.arena import Arena, side_set_bytes
from kernel_tui.core.evaluator.harness import GUARD, ArgumentSet
from kernel_tui.core.evaluator.protocol import Argument, Call, Command
from kernel_tui.core.evaluator.side import Side
from kernel_tui.core.task import TaskSpec


class SharedSets:
    """No arena is freed while a worker lives: a worker that said it let go of one may still map it, and
    freed device memory can come back as the judge's own. A released group's arena is reused instead, for the
    next group of its side that fits (the worker keeps its mapping), and all are freed once the workers are
    gone (`release_all`)."""

    def __init__(self, spec: TaskSpec, device: str, sides: dict[str, Side], timeout) -> None:
        self.spec, self.device, self.sides = spec, device, sides
        self.timeout = timeout  # a function: the seconds left for one request
        self._ids = itertools.count(1)
        self.arenas: list[tuple[str, Arena, list[int]]] = []  # (role, arena, the sets carved from it)
        self.idle: list[tuple[str, Arena]] = []  # arenas whose sets were released: reused, freed at the end
        self.set_ids: dict[int, int] = {}  # id(ArgumentSet) -> the id the workers know it by
        self.arena_of: dict[tuple[str, int], Arena] = {}  # (role, set id) -> the arena its buffers are in

    def _arena(self, role: str, nbytes: int) -> Arena:
        """An idle arena of `role`'s that holds `nbytes` (the smallest such), else a new one, shared with
        the role's worker."""
        fits = [(a.nbytes, i) for i, (r, a) in enumerate(self.idle) if r == role and a.nbytes >= nbytes]
        if fits:
            arena = self.idle.pop(min(fits)[1])[1]
            arena.used = 0
            return arena
        arena = Arena(next(self._ids), self.device, nbytes)
        fds = [arena.fd] if arena.fd is not None else None
        self.sides[role].request(Command(op="arena", arena=arena.spec()), self.timeout(), fds=fds)
        return arena

    def build(self, dims: dict[str, int], seeds: list[int], roles: list[str], *, stale: bool = True,
              edge: bool = False) -> list[ArgumentSet]:
        """Sets for `seeds`, each with buffers for every role in `roles`, shared with those roles' workers."""
        arenas = {role: self._arena(role, len(seeds) * side_set_bytes(self.spec, dims)) for role in roles}
        sets = [ArgumentSet.build(self.spec, dims, self.device, seed, stale=stale, edge=edge, sides=dict(arenas))
                for seed in seeds]
        ids = []
        for s in sets:
            k = next(self._ids)
            self.set_ids[id(s)] = k
            ids.append(k)
            for role, arena in arenas.items():
                self.arena_of[(role, k)] = arena
                args = [Argument(place=arena.place(a)) if not isinstance(a, (int, float)) else
                        Argument(scalar=name) for name, a in zip(self.spec.launch_arguments, s.args(role))]
                self.sides[role].request(Command(op="set", set_id=k, args=args), self.timeout())
        for role, arena in arenas.items():
            self.arenas.append((role, arena, ids))
        return sets

    def call(self, s: ArgumentSet) -> Call:
        return Call(set_id=self.set_ids[id(s)], scalars=dict(s.scalars))

    def release(self, sets: list[ArgumentSet]) -> None:
        """Let go of `sets`; an arena none of the remaining sets use becomes idle, for reuse (the worker
        forgets the sets first)."""
        gone = {self.set_ids.pop(id(s)) for s in sets if id(s) in self.set_ids}
        self.arena_of = {key: a for key, a in self.arena_of.items() if key[1] not in gone}
        keep = []
        for role, arena, ids in self.arenas:
            if set(ids) <= gone:
                side = self.sides[role]
                if side.exit_status is None:
                    side.request(Command(op="drop", sets=ids), self.timeout())
                self.idle.append((role, arena))
            else:
                keep.append((role, arena, ids))
        self.arenas = keep

    def release_all(self) -> None:
        """Free every arena: only once the workers that mapped them are gone."""
        for _, arena, _ in self.arenas:
            arena.close()
        for _, arena in self.idle:
            arena.close()
        self.arenas, self.idle = [], []


class UntouchedCheck:
    """Whether a side's outputs still hold their poison at sampled positions, read straight from the side's
    arenas: everything is gathered and copied to the device before a window's hold, so that the check itself
    is two launches per arena, enqueued just before the window opens."""

    SAMPLES = 64  # positions per output

    def __init__(self, shared: SharedSets, role: str, sets: list[ArgumentSet], rng: random.Random) -> None:
        byte_index: dict[int, list[torch.Tensor]] = {}
        expected: dict[int, list[torch.Tensor]] = {}
        bases: dict[int, torch.Tensor] = {}
        for s in sets:
            arena = shared.arena_of[(role, shared.set_ids[id(s)])]
            bases[arena.ident] = arena.base
            for out in s.outputs.values():
                if not out.numel:
                    continue
                storage, item = out.storages[role], out.before.element_size()
                picks = torch.tensor([rng.randrange(GUARD, GUARD + out.numel) for _ in range(self.SAMPLES)])
                within = (picks[:, None] * item + torch.arange(item)[None, :]).flatten()
                offset = storage.data_ptr() - arena.base.data_ptr()
                byte_index.setdefault(arena.ident, []).append(within + offset)
                expected.setdefault(arena.ident, []).append(out.before.view(torch.uint8)[within.to(out.before.device)])
        device = torch.device(shared.device)
        self.parts = [(bases[a], torch.cat(byte_index[a]).to(device), torch.cat(expected[a])) for a in byte_index]

    def flag(self) -> torch.Tensor:
        flags = [(base[index] == want).all() for base, index, want in self.parts]
        return torch.stack(flags).all() if flags else torch.ones((), dtype=torch.bool)
