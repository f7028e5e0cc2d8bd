"""A host program serving sizes it was not built at.

A new size costs a host program's build (an eager run of the impl rules, recorded, then a
function generated and checked: 0.1-3 ms) where its runs take a few microseconds, so a
stream of small sizes would be built size by size. A program whose every step computes from
its operands whatever their shapes (``host_kernels.reach``) and reads no value of the sizes
serves other sizes as it is: those its ``Reach`` admits. ``host_tier.build`` decides at the
build (``hold_anywhere``, after ``unsized_broadcasts``) and gives such a program its
``Reach``; ``reuse`` finds the program that serves a call's sizes among a segment's.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence

import numpy as np

from . import host_tier   # its limits and estimates, read when used (it imports this module)
from .host_kernels import ANY, reach


def hold_anywhere(rec, results: Sequence[int]) -> bool:
    """Whether the recorded program computes, at other sizes, what the impl rules compute
    there: every length in its types static or a size argument, no step reading a value
    computed from the sizes (folded in as a constant) and none returned, and every kernel
    holding at any shapes, or at static ones where its equation's shapes are static. Where
    it does, a kernel that bakes in dynamic shapes is swapped for its ``anywhere`` form."""
    if not rec.polymorphic or any(rec.sized[k] for k in results):
        return False
    swaps = []
    for step in rec.steps:
        kernel = step.kernel
        reads = getattr(kernel, "reads", None)
        if any(rec.sized[k] for k in (step.ins if reads is None else step.ins[:reads])):
            return False
        if reach(kernel) != ANY and not _static_types(step.eqn):
            if getattr(kernel, "anywhere", None) is None or not _same_count(step.eqn):
                return False
            swaps.append(step)
    for step in swaps:
        step.kernel = step.kernel.anywhere
    return True


def unsized_broadcasts(rec, results: Sequence[int]) -> None:
    """A constant broadcast to a shape of the sizes (``2.0`` to ``(n,)``, as gradients make
    them) that only ufuncs read is folded in as the value with axes of length 1 inserted:
    the ufuncs broadcast it themselves, at any sizes (where each still broadcasts to the
    shape it computed; before ``_lazy_views``, which keeps that so)."""
    readers: Dict[int, List[int]] = {}
    for k, step in enumerate(rec.steps):
        for slot in step.ins:
            if slot in rec.broadcasts and slot not in results:
                readers.setdefault(slot, []).append(k)
    for slot, ks in readers.items():
        source, dims = rec.broadcasts[slot]
        value = np.asarray(rec.values[source])
        ndim = np.ndim(rec.values[slot])
        if not all(k in rec.broadcasting for k in ks) or list(dims) != sorted(dims):
            continue
        small = value[tuple(slice(None) if d in dims else None for d in range(ndim))]
        shapes = {j: np.shape(rec.values[j]) for k in ks for j in rec.steps[k].ins}
        shapes[slot] = small.shape
        try:
            ok = all(np.broadcast_shapes(*[shapes[j] for j in rec.steps[k].ins]) ==
                     np.shape(rec.values[rec.steps[k].outs[0]]) for k in ks)
        except ValueError:
            ok = False
        if ok:
            rec.values[slot], rec.sized[slot] = small, False


def _same_count(eqn) -> bool:
    """Whether a reshape keeps its element count at every size: the same dynamic lengths on
    both sides, and equal products of the static ones. (Other equations keep it by their
    types.)"""
    if eqn.primitive.name != "reshape":
        return True

    def split(shape):
        dynamic = sorted(id(d) for d in shape if not isinstance(d, (int, np.integer)))
        return dynamic, math.prod(int(d) for d in shape if isinstance(d, (int, np.integer)))
    return split(eqn.invars[0].aval.shape) == split(eqn.outvars[0].aval.shape)


def _static_types(eqn) -> bool:
    return all(isinstance(d, (int, np.integer)) for v in list(eqn.invars) + list(eqn.outvars)
               for d in getattr(getattr(v, "aval", None), "shape", ()))


def lengths(args: Sequence[Any], runtime) -> tuple:
    """A segment's arguments as one tuple of lengths: each size, each runtime argument's
    shape."""
    out = []
    for i, a in enumerate(args):
        if i in runtime:
            out.extend(np.shape(a))
        else:
            out.append(int(a))
    return tuple(out)


def spans(args: Sequence[Any], runtime) -> tuple:
    """Where each of a segment's arguments sits in its ``lengths``: ``(start, stop, array)``,
    ``array`` False for a size (one length), True for a runtime argument (its shape)."""
    out, start = [], 0
    for i, a in enumerate(args):
        stop = start + (np.ndim(a) if i in runtime else 1)
        out.append((start, stop, i in runtime))
        start = stop
    return tuple(out)


def _pattern(lengths: tuple) -> tuple:
    """Which lengths are equal: each one's first position."""
    return tuple([lengths.index(d) for d in lengths])


class Polynomial:
    """A polynomial in a segment's size arguments with float coefficients: a step's estimated
    time or a value's element count as the sizes change, worked out once at the build, so
    that checking new sizes evaluates a few terms instead of every step's estimate.
    ``terms``: (the size positions multiplied, with repeats) -> coefficient."""
    __slots__ = ("terms",)

    def __init__(self, terms: Dict[tuple, float]):
        self.terms = terms

    @staticmethod
    def size(position: int) -> "Polynomial":
        return Polynomial({(position,): 1.0})

    @staticmethod
    def of(x) -> "Polynomial":
        """``x`` as a polynomial (a number: a constant one)."""
        return x if x.__class__ is Polynomial else Polynomial({(): float(x)} if x else {})

    def __add__(self, other) -> "Polynomial":
        terms = dict(self.terms)
        for k, c in Polynomial.of(other).terms.items():
            terms[k] = terms.get(k, 0.0) + c
        return Polynomial(terms)

    __radd__ = __add__

    def __mul__(self, other) -> "Polynomial":
        terms: Dict[tuple, float] = {}
        for k1, c1 in self.terms.items():
            for k2, c2 in Polynomial.of(other).terms.items():
                k = tuple(sorted(k1 + k2))
                terms[k] = terms.get(k, 0.0) + c1 * c2
        return Polynomial(terms)

    __rmul__ = __mul__

    def at(self, values: Sequence[Any]) -> float:
        """Its value where the size at position ``p`` is ``values[p]``."""
        total = 0.0
        for k, c in self.terms.items():
            for p in k:
                c *= values[p]
            total += c
        return total


def symbolic(shape: tuple) -> tuple:
    """A shape as ``_Record.shape_of`` gives it (``(i,)`` for the size at position ``i``),
    with a ``Polynomial`` for each such length."""
    return tuple(d if d.__class__ is int else Polynomial.size(d[0]) for d in shape)


class Reach:
    """The sizes a host program built at ``lengths`` serves as it is (see ``admits``).
    ``host`` and ``xla``: its estimated run times on the host and, beyond a run's fixed
    cost, on XLA, and ``values``: the element count of every value it computes, each a
    ``Polynomial`` of the sizes (``host_tier._estimates`` on the steps' shapes)."""
    __slots__ = ("lengths", "spans", "pattern", "static", "host", "xla", "values", "ceiling", "changing")

    def __init__(self, lengths: tuple, spans: tuple, static_dims, host, xla, values):
        self.lengths = lengths
        self.spans = spans   # (``spans``: where each argument's lengths are)
        self.pattern = _pattern(lengths)
        self.static = frozenset(static_dims)
        self.host, self.xla = Polynomial.of(host), Polynomial.of(xla)
        self.values = values
        #: lengths the host tier takes (the build's, the furthest the estimates choose
        #: from there: ``extend_ceiling``, or larger ones admitted since): the estimates and
        #: limits grow with every length, so lengths below them pass too
        self.ceiling = lengths
        #: the positions of the lengths that may change (``admits``: at least 2 and equal to
        #: no static length, then and now); with none, it serves its own sizes alone
        self.changing = tuple(p for p, d in enumerate(lengths) if d >= 2 and d not in self.static)

    def admits(self, args: Sequence[Any], runtime) -> bool:
        """Whether the program serves these arguments of a segment (``runtime``: the
        positions that stay arguments): the same lengths equal to each other, and every
        length that changed at least 2 then and now and equal to no static length of the
        program, so that every shape in it broadcasts, reduces and lays out as at its build
        (no axis becomes empty or of length 1, no dynamic length meets a static one). Where
        some length grew, the host tier must also still take these sizes: arguments and
        values within its limits, and an estimated run time at most XLA's (``build``'s
        choice, made at these sizes); at smaller ones it does (the estimates grow with the
        sizes)."""
        have = lengths(args, runtime)
        if len(have) != len(self.lengths) or _pattern(have) != self.pattern:
            return False
        static, grew = self.static, False
        for new, old, top in zip(have, self.lengths, self.ceiling):
            if new != old:
                if new < 2 or old < 2 or new in static or old in static:
                    return False
                grew = grew or new > top
        if not grew:
            return True
        if not self.chosen_at(args, runtime):
            return False
        if all(new >= top for new, top in zip(have, self.ceiling)):
            self.ceiling = have
        return True

    def chosen_at(self, args, runtime) -> bool:
        """Whether the host tier takes these arguments of a segment (``runtime``: the
        positions that stay arguments), as a build at these sizes would decide (``chosen``)."""
        return self.chosen(lengths(args, runtime))

    def chosen(self, have: tuple) -> bool:
        """Whether the host tier takes arguments of these lengths (laid out as the build's):
        each argument and size within its limits, every value too, and an estimated run
        time at most XLA's."""
        limit = host_tier.MAX_ELEMENTS
        sizes = []
        for start, stop, array in self.spans:
            if (math.prod(have[start:stop]) if array else have[start]) > limit:
                return False
            sizes.append(None if array else have[start])
        if any(count.at(sizes) > host_tier.MAX_VALUE_ELEMENTS for count in self.values):
            return False
        return self.host.at(sizes) <= host_tier.XLA_RUN_SECONDS + self.xla.at(sizes)

    def extend_ceiling(self) -> None:
        """Raise the ceiling to the furthest lengths the host tier still takes with every
        length that may change (``admits``) scaled by one factor from the build's (doubled,
        then bisected to 2%: a dozen ``chosen``, 30-50 us at a build of 0.5-3 ms), so that
        the sizes below are admitted with no estimate to check (``Layout.admission``): only
        a new largest size beyond them takes the full checks."""
        if not self.changing or not self.chosen(self.lengths):
            return

        def scaled(factor):
            have = list(self.lengths)
            for p in self.changing:
                have[p] = int(have[p] * factor)
            return tuple(have)
        low, high = 1.0, 2.0
        while self.chosen(scaled(high)):
            low, high = high, high * 2
            if high > host_tier.MAX_ELEMENTS:   # (no length passes the limit)
                break
        while high > low * 1.02:
            middle = (low + high) / 2
            if self.chosen(scaled(middle)):
                low = middle
            else:
                high = middle
        self.ceiling = tuple(map(max, self.ceiling, scaled(low)))


class Layout:
    """Where a segment's arguments come from in a call of positional numpy arrays: the
    arrays' ``dtypes`` and ``ranks``, and for each size argument (the segment's first ones)
    the ``(array, axis)`` whose length it is; the segment's other arguments are the arrays,
    each one a runtime argument."""
    __slots__ = ("dtypes", "ranks", "sources")

    def __init__(self, dtypes, ranks, sources):
        self.dtypes = tuple(np.dtype(d) for d in dtypes)
        self.ranks = tuple(int(r) for r in ranks)
        self.sources = tuple((int(i), int(k)) for i, k in sources)

    @property
    def params(self) -> str:
        """The generated functions' parameters: ``a0, a1, ...``, one per array."""
        return ", ".join(f"a{i}" for i in range(len(self.ranks)))

    def checks(self, no: str) -> List[str]:
        """Lines of a generated function of ``params`` that return ``no`` unless each
        argument is a numpy array of its dtype (``t0, t1, ...`` in the function's scope) and
        rank, and name each one's shape ``s0, s1, ...``."""
        n = len(self.ranks)
        if not n:
            return []
        return ["if " + " or ".join(f"a{i}.__class__ is not ndarray or (a{i}.dtype is not t{i} and a{i}.dtype != t{i})"
                                    for i in range(n)) + ":",
                f"    return {no}"] + [f"s{i} = a{i}.shape" for i in range(n)] + [
                "if " + " or ".join(f"len(s{i}) != {r}" for i, r in enumerate(self.ranks)) + ":",
                f"    return {no}"]

    def scope(self) -> Dict[str, Any]:
        """The names ``checks`` reads."""
        scope = {"ndarray": np.ndarray}
        scope.update({f"t{i}": d for i, d in enumerate(self.dtypes)})
        return scope

    def condition(self, reach: Reach, name: str):
        """``(admits, elsewhere)``: expressions over the shapes ``checks`` names, with the
        reach named ``name`` in the function's scope. ``admits`` is ``reach.admits`` on the
        segment's arguments these arrays make, wherever no length grows beyond the reach's
        ceiling as it is now (written in as numbers: a function made from it is made again
        when the ceiling rises, ``Segment._reused_host``), with no estimate to check;
        ``elsewhere`` says that some length differs from the build's own. A few comparisons
        where ``admits`` works out every length and their pattern (0.2 us against 3-5 us)."""
        where = [f"s{i}[{k}]" for i, k in self.sources]
        where += [f"s{i}[{k}]" for i, r in enumerate(self.ranks) for k in range(r)]
        if len(where) != len(reach.lengths):   # not this reach's segment: nothing is admitted
            return "False", "False"
        tests, free, changing = [], [], set(reach.changing)
        for p, (expr, old) in enumerate(zip(where, reach.lengths)):
            first = reach.pattern[p]
            if p not in changing:                 # a length that must stay as it was
                tests.append(f"{expr} == {int(old)}")
            elif first != p:                      # equal to an earlier one, as at the build
                if where[first] != expr:
                    tests.append(f"{expr} == {where[first]}")
            else:                                 # free: at least 2, no static length, below
                free.append((expr, int(old)))     # the ceiling at every position it takes
                top = min(int(reach.ceiling[q]) for q in range(len(where)) if reach.pattern[q] == p)
                tests.append(f"2 <= {expr} <= {top}")
                if reach.static:
                    tests.append(f"{expr} not in {name}.static")
        tests += [f"{x} != {y}" for j, (x, _) in enumerate(free) for y, _ in free[j + 1:]]   # the pattern
        elsewhere = " or ".join(f"{x} != {old}" for x, old in free) or "False"
        return (" and ".join(tests) if tests else "True"), elsewhere

    def admission(self, reach: Reach):
        """``admission(reach)(*args)``: True where ``condition``'s ``admits`` holds for a
        call's arguments laid out so (at the reach's ceiling as it is now), False elsewhere
        (arguments that are not numpy arrays of these dtypes and ranks, too: the caller's full
        path decides those). The test of the server's condition alone
        (``segment_host._generate_server``), which the tests hold equal to ``Reach.admits``."""
        admits, _ = self.condition(reach, "reach")
        lines = self.checks("False") + [f"return {admits}"]
        source = f"def admit({self.params}):\n" + "".join(f"    {line}\n" for line in lines)
        scope = self.scope()
        scope["reach"] = reach
        exec(host_tier.compiled(source, "<dynjax host admission>"), scope)
        return scope.pop("admit")

    def segment_args(self, args: Sequence[Any]) -> list:
        """The segment's arguments of a call: its sizes, then the arrays."""
        return [np.shape(args[i])[k] for i, k in self.sources] + list(args)


def reuse(programs: Sequence["host_tier.HostProgram"], args: Sequence[Any], runtime: Sequence[int],
          sizes: Sequence[Any]) -> "host_tier.HostProgram | None":
    """A host program of ``programs`` that serves these arguments as it is (``Reach``), as
    one at their sizes, or None."""
    runtime_set = set(runtime)
    for program in programs:
        if program.reach.admits(args, runtime_set):
            return program.at_arguments(args, runtime, sizes)
    return None
