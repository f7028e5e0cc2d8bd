"""The host tier's side of a segment: which calls a host program serves, built or reused.

A ``Segment`` (``segment.py``) takes this as a mixin. A call at sizes the host tier would
finish sooner than XLA (``host_tier``) runs the segment's host program of those sizes, built
at the first such call, or one built at other sizes that serves these as it is
(``host_reach.Reach``); a program's first compile also builds its host program at a few
small sizes (``_build_host_ahead``), so that the first small size a call meets finds one.
``qjit`` offers a call of positional arrays to the segment's server before its dispatch
table: one function generated for the segment's layout of arguments and its reusable
programs (``_generate_server``) that serves the sizes they admit as they are, which the
caller keeps (``admit_layout``).
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Any, Optional, Sequence

import numpy as np

from ..core.jaxpr import Jaxpr
from . import explain, host_reach, host_tier, tiers
from .padding import bucket


class HostTier:
    """``Segment``'s host-tier methods (its attributes: ``hosted``, ``reusable_hosts``,
    ``host_reusable``, ``_hostable``, ``_host_limit``, ``_host_estimate``, ``host_served``,
    ``last_host_shapes``; see ``Segment.__init__``)."""

    def _host_program(self, key, args) -> Optional["host_tier.HostProgram"]:
        """The host program of these sizes (``host_tier``), built at the first call at them,
        or None when XLA is to run them."""
        pol = host_tier.policy()
        if pol == "off" or (pol == "auto" and tiers.policy() != "auto"):   # a tier is forced
            return None
        if self._hostable is None:
            self._host_limit = host_tier.size_limit(self.jaxpr)
            self._hostable = (not self.exact_by_padding and host_tier.straight_line(self.jaxpr)
                              and host_tier.small(self.consts))
            if not self._hostable:
                return None
            self.module_text   # noqa: B018  (what XLA would refuse, the host tier refuses too)
        host = self.hosted.get(key)
        if host is None:
            if pol != "always" and not self._within(args, self._host_limit):
                return None
            host = self._reused_host(args, key)
            if host is not None:
                return host
            if pol != "always" and not self._worth_a_build(key, args):
                return None
            host = self.hosted.get_or_fill(key, lambda: self._build_host(args, pol == "always"))
        return None if host is NOT_HOSTED else host

    def _worth_a_build(self, key, args) -> bool:
        """Whether these sizes, which no host program serves yet, get one of their own (the
        automatic policy)."""
        if not self.host_reusable and not self._within(args, host_tier.MAX_BUILD_ELEMENTS):
            return False   # a build for these sizes alone: it costs more than their runs
        estimate = self._host_estimate   # an earlier build's, at other sizes
        if estimate is not None and not estimate.chosen_at(args, set(self.runtime)):
            return False   # XLA's, as a build here would find after its eager run
        # the bucket serves a size met once; a size that recurs is built (and so is the
        # first, which may make a program that serves every other small size)
        return not (self.calls_at.get(key) is None and self._compiled_bucket_holds(args)
                    and self.host_reusable is not None)

    def _within(self, args, limit: int) -> bool:
        """Whether every argument and size holds at most ``limit`` elements."""
        return host_tier.small(args, limit) and all(int(args[i]) <= limit for i in self.baked)

    def _served_by(self, host) -> None:
        """Note a call the host program ``host`` serves at its own sizes (a call served at
        other sizes is noted by the server's generated lines: the counters, the
        program and the shapes; keep the two alike)."""
        self.host_served = True
        self.stats.host_runs += 1
        self.last_executable, self.last_specialized = host, None
        self.last_host_shapes = None

    def _run_host(self, host, args) -> list:
        self._served_by(host)
        explain.maybe(explain.tiers, lambda: f"host tier: {self._describe_key(self._key(args))}")
        return host.call([args[i] for i in self.runtime])

    def call_at_other_sizes(self, args):
        """``call``, where one of the host programs built at other sizes serves these as it
        is (``host_reach.Reach``: sizes it admits need no checks): ``(outputs, program)``, else
        None. (``qjit``'s dispatch, for a new size of a trace it served so: the segment's
        caches and tiers are not asked.)"""
        host = self._reused_host(args)
        return None if host is None else (self._run_host(host, args), host)

    def admit_layout(self, layout: "host_reach.Layout", front: "Front") -> "host_reach.Layout":
        """Serve calls laid out as ``layout`` says (positional numpy arrays, each one a
        runtime argument, the sizes their lengths) with a generated server from now on, as
        ``front`` says for its caller, and return the layout it serves: the first one given,
        with the first front (a segment is one trace's, whose calls are laid out one way).
        Each server made, now and whenever the programs change, goes to ``front.install``:
        the caller keeps it, not the segment, which the server writes to (a segment that
        held its server would hold itself, and outlive its function until the garbage
        collector's next pass). (Called after a call one of its host programs served:
        ``host_served`` holds, and the server leaves it as it is.)"""
        if self._layout is None:
            self._layout, self._front = layout, front
            self._make_server()
        return self._layout

    def _make_server(self) -> None:
        """A server for the layout and the reusable host programs as they are now, given to
        the front's ``install`` (made again whenever either changes, or a program's ceiling
        rises; under a lock, so that of two threads that changed them the server installed
        last reads the latest)."""
        with _MAKING_SERVERS:
            layout, hosts = self._layout, self.reusable_hosts
            if layout is not None:
                self._front.install(_generate_server(self, layout, hosts, self._front))

    def _note_admitted(self) -> None:
        """Log the latest call the server served (where the tiers' log is on)."""
        explain.note(explain.tiers, "host tier, a program of other sizes: "
                     + self._describe_key(self._key(self._admitted_args())))

    def _admitted_args(self) -> list:
        """The segment's arguments of the latest call the server served, as shapes."""
        layout, shapes = self.last_host_shapes
        return layout.segment_args([_Shape(s) for s in shapes])

    def _reused_host(self, args, key=None) -> Optional["host_tier.HostProgram"]:
        """A host program built at other sizes that serves these as it is (``host_reach.reuse``;
        the sizes it admits need no checks), kept for them under ``key`` if given; or None."""
        programs = self.reusable_hosts
        if not programs:
            return None
        ceilings = [p.reach.ceiling for p in programs]
        host = host_reach.reuse(programs, args, self.runtime, self._sizes(args))
        if host is None:
            return None
        if any(p.reach.ceiling is not c for p, c in zip(programs, ceilings)):
            self._make_server()   # (its condition holds the ceilings as numbers)
        if key is not None:
            self.hosted.put(key, host)
        self.stats.host_reuses += 1
        explain.maybe(explain.recompiles, lambda: f"host program of other sizes reused: "
                      f"{self._describe_key(self._key(args))}")
        return host

    def _compiled_bucket_holds(self, args) -> bool:
        """Whether a compiled padded program holds these sizes (its own bucket or a larger
        one)."""
        if not self.paddable or not len(self.padded):
            return False
        bounds = [bucket(int(args[i])) for i in self.baked]
        return any(all(x >= y for x, y in zip(b, bounds)) for b in self.padded.keys())

    def _build_host(self, args, force: bool):
        if self._check(args) is not None:   # blocks of different lengths: the padded program
            return NOT_HOSTED
        try:
            host = host_tier.build(self.jaxpr, self.consts, args, self.runtime, self._sizes(args), force)
        except host_tier.NotHosted as e:
            if e.estimate is not None:
                self._host_estimate = e.estimate
            why = str(e)
            explain.maybe(explain.tiers, lambda: f"not the host tier ({why}): {self._describe_key(self._key(args))}")
            return NOT_HOSTED
        except Exception:   # what the compiled program says of these arguments decides
            return NOT_HOSTED
        self.stats.host_programs += 1
        if host.estimate is not None:
            self._host_estimate = host.estimate
        if host.reach is not None:
            self.reusable_hosts = (host,) + self.reusable_hosts[:REUSABLE_HOSTS - 1]
            self._make_server()
        self.host_reusable = bool(self.host_reusable) or host.reach is not None
        explain.maybe(explain.recompiles, lambda: f"host program of {host.equations} numpy calls "
                      f"({host.direct} direct), {host.seconds * 1e6:.1f} us: "
                      f"{self._describe_key(self._key(args))}")
        return host

    def _build_host_ahead(self, args) -> None:
        """At a program's first compile, its host program at a few small sizes (``args`` cut
        to them): where that program serves other sizes (``host_reach.Reach``), the first
        small size a call meets is served by it at once instead of waiting for a build of
        its own (0.5-3 ms: an eager run recorded, generated and checked, many times the run
        it serves), and a compile takes tens of milliseconds or more."""
        if self._hostable is not True or self.host_reusable is not None:
            return
        small = _cut_to_small_sizes(self.jaxpr, args, self.runtime, self.baked)
        if small is None or not host_tier.small([small[i] for i in self.runtime]):
            return
        try:
            self.hosted.get_or_fill(self._key(small), lambda: self._build_host(small, False))
        except Exception:   # sizes no call asked for: where the program refuses them (its size
            pass            # checks), nothing is built

    def xla_view(self) -> None:
        """For introspection (``f.mlir_specialized``, ``f.hlo``): when the host tier served the
        latest call, the exact executable of its sizes, compiled once and kept by the host
        program (not in the executable cache: looking must not change which tier serves)."""
        host = self.last_executable
        if host.__class__ is host_tier.HostProgram:
            if self.last_host_shapes is not None:   # served at other sizes (the server)
                args = self._admitted_args()
                host = host.at_arguments(args, self.runtime, self._sizes(args))
            if host.compiled is None:
                exe = self._compile(host.sizes)
                host.compiled = (exe, self.last_specialized)
            self.last_executable, self.last_specialized = host.compiled


class Front:
    """What the caller of a segment's server adds to it (``admit_layout``): ``guard``, an
    expression true where no call is to be served now (say, while tracing); ``result``, the
    expression of the program's outputs ``outs`` that the call returns; ``miss``, what the
    server returns where it serves nothing (an object no call returns); ``scope``, the names
    these read; ``install(server)``, which hands each server made to the caller. None of
    them may hold the caller but weakly: the segment keeps its front."""
    __slots__ = ("guard", "result", "miss", "scope", "install")

    def __init__(self, guard: str, result: str, miss: Any, scope: dict, install):
        self.guard, self.result, self.miss, self.scope, self.install = guard, result, miss, scope, install


_MAKING_SERVERS = threading.Lock()


def _after_fork_in_child() -> None:
    """Another thread of the parent may have held the lock at fork time."""
    global _MAKING_SERVERS
    _MAKING_SERVERS = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _generate_server(segment, layout: "host_reach.Layout", hosts, front: Front) -> Any:
    """A segment's server: ``serve(args)``, what ``front`` returns of the results of the
    first of the host programs ``hosts`` whose reach admits a call's arguments laid out as
    ``layout`` says (``Layout.condition``) at lengths other than its build's (the dispatch
    table serves those: the build's call put them there), with the call noted in the
    segment as ``_served_by`` would; else ``front.miss``, and the caller's full path
    decides. Nothing is worked out of the sizes unless asked (``xla_view``): the checks,
    the bookkeeping, the call and its result are one generated function, a microsecond
    beside the program's own run, where the full path takes ten (a stream of new small
    sizes, each met once)."""
    params = layout.params
    n = len(layout.ranks)
    lines = [f"if len(args) != {n} or {front.guard}:", "    return miss"]
    if n:
        lines.append(f"{params}, = args")
    lines += layout.checks("miss")
    scope = layout.scope()
    for j, program in enumerate(hosts):
        admits, elsewhere = layout.condition(program.reach, f"r{j}")
        lines += [f"{'if' if j == 0 else 'elif'} {admits} and ({elsewhere}):",
                  f"    program, fast, run = p{j}, f{j}, x{j}"]
        scope.update({f"r{j}": program.reach, f"p{j}": program, f"f{j}": program.fast, f"x{j}": program.run})
    shapes = "".join(f"s{i}, " for i in range(n))
    lines += (["else:", "    return miss"] if hosts else ["return miss"]) + [
        "stats.host_reuses += 1", "stats.host_runs += 1",
        "segment.last_executable = program",   # (``last_specialized``: ``xla_view`` sets it)
        f"segment.last_host_shapes = (layout, ({shapes}))",
        "if logging_on(INFO):", "    segment._note_admitted()",
        "try:", f"    outs = fast({params})",
        "except RuntimeError:   # its context is in use (HostProgram.fast)", f"    outs = run({params})",
        f"return {front.result}"]
    source = "def serve(args):\n" + "".join(f"    {line}\n" for line in lines)
    scope.update(front.scope)
    scope.update(stats=segment.stats, segment=segment, layout=layout, INFO=logging.INFO,
                 logging_on=explain.tiers.isEnabledFor, miss=front.miss)
    exec(host_tier.compiled(source, "<dynjax host admission>"), scope)
    return scope.pop("serve")   # (a function its own globals held would be a cycle)


class _Shape:
    """What a background exact compile, or introspection of a host program's call, keeps of
    an array argument: its shape."""
    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


NOT_HOSTED = object()   # ``Segment.hosted``: XLA runs these sizes


#: how many host programs that serve other sizes a segment keeps (the latest built)
REUSABLE_HOSTS = 4


#: ``Segment._build_host_ahead`` cuts the sizes to this length and the next ones, one per
#: distinct size (``host_reach.Reach`` serves other lengths of at least 2 with the same
#: lengths equal to each other, none equal to a static length)
AHEAD_LENGTH = 5


def _cut_to_small_sizes(jaxpr: Jaxpr, args: Sequence[Any], runtime: Sequence[int],
                        baked: Sequence[int]) -> Optional[list]:
    """``args`` with their sizes made small: each distinct size to ``AHEAD_LENGTH`` or a
    following length, in the same order, none equal to a static length of the arguments,
    each argument cut to the first elements along the axes of those sizes. None where they
    are already that small, or where some size is not the length of an argument's axis
    (a value the user passes: what it means is the user's)."""
    position = {id(jaxpr.invars[i]): i for i in baked}
    axes_of, statics = {}, {0, 1}
    for i in runtime:
        shape = getattr(jaxpr.invars[i].aval, "shape", ())
        axes = [position.get(id(d)) for d in shape]
        if any(p is None and not isinstance(d, (int, np.integer)) for p, d in zip(axes, shape)) or (
                any(p is not None for p in axes) and not isinstance(args[i], np.ndarray)):
            return None
        statics.update(int(d) for p, d in zip(axes, np.shape(args[i])) if p is None)
        axes_of[i] = axes
    if {p for axes in axes_of.values() for p in axes if p is not None} != set(baked):
        return None
    small, length = {}, AHEAD_LENGTH - 1
    for n in sorted({int(args[p]) for p in baked}):
        length += 1
        while length in statics:
            length += 1
        if length >= n:
            return None
        small[n] = length
    out = list(args)
    for p in baked:
        out[p] = small[int(args[p])]
    for i, axes in axes_of.items():
        if any(p is not None for p in axes):
            out[i] = np.array(args[i][tuple(slice(None) if p is None else slice(0, small[int(args[p])])
                                            for p in axes)])
    return out
