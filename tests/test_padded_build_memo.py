"""What a padded build of a program remembers from the build before: the decisions about its
sizes (``core.symbolic.decide_ge`` keeps them by the form of the expression, so a build for
another bucket, on fresh symbols, proves nothing again), with programs unchanged by it."""
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax import lax
from dynjax.core import symbolic
from dynjax.core.symbolic import Expr, Symbol, decide_ge, maximum, minimum
from dynjax.execution.padding import pad_jaxpr


def grow(x):
    m = (9 * x.shape[0]) // 10 + 1
    return lax.while_loop(lambda a: a.shape[0] < m,
                          lambda a: jnp.concatenate([a, a[-1:] * 0.5 + x[a.shape[0]]]),
                          x[:1], allow_array_resizing=True)


def _grow_jaxpr():
    closed = dynjax.make_jaxpr(grow, abstracted_axes=({0: "n"},))(np.zeros(5))
    loop = next(e for e in closed.jaxpr.eqns if e.params.get("nimplicit"))
    n = next(i for i, v in enumerate(closed.jaxpr.invars) if v.aval.shape == ())
    return closed.jaxpr, closed.consts, n, loop


def _build(program, bound, capacity):
    jaxpr, consts, n, loop = program
    return str(pad_jaxpr(jaxpr, consts, {n: bound}, {id(loop): (capacity,)}).closed)


def _proofs(build):
    before = symbolic.proofs_made()
    out = build()
    return out, symbolic.proofs_made() - before


def test_a_second_bucket_proves_only_what_its_bounds_change_and_builds_the_same_program():
    program = _grow_jaxpr()
    symbolic._decisions.clear()
    first, proved_first = _proofs(lambda: _build(program, 32, 32))
    second, proved_second = _proofs(lambda: _build(program, 128, 128))
    # the second build asks the first one's questions on fresh symbols: only those about its
    # own bounds (``n >= 128``) are new
    assert 0 < proved_second < proved_first / 2
    assert _proofs(lambda: _build(program, 128, 128)) == (second, 0)
    assert "f64[128]" in second and "f64[32]" not in second
    symbolic._decisions.clear()                 # the same programs when nothing is remembered
    assert _build(program, 128, 128) == second
    assert _build(program, 32, 32) == first


def test_decisions_are_remembered_by_form_and_bounds():
    symbolic._decisions.clear()
    a, b = Expr.symbol(Symbol("a", 0)), Expr.symbol(Symbol("b", 0))
    first = decide_ge(maximum(a - 1, b), minimum(a, b) - 1)
    count = symbolic.proofs_made()
    c, d = Expr.symbol(Symbol("c", 0)), Expr.symbol(Symbol("d", 0))   # fresh symbols, the same form: remembered
    assert decide_ge(maximum(c - 1, d), minimum(c, d) - 1) == first is True
    assert symbolic.proofs_made() == count
    e, f = Symbol("e"), Symbol("f")                 # other bounds: decided anew
    assert decide_ge(maximum(e, f), minimum(e, f) - 1) is True
    assert decide_ge(Expr.symbol(e), Expr.symbol(f) - 1) is None
    assert symbolic.proofs_made() > count
    g = Symbol("g")                                 # a fact learned later is used
    assert decide_ge(Expr.symbol(g) - 1, -1) is None
    g.assume_nonnegative()
    assert decide_ge(Expr.symbol(g) - 1, -1) is True
    assert decide_ge(-Expr.symbol(g) - 1, 0) is False


def test_arithmetic_gives_the_canonical_form():
    n, m = Symbol("n", 0), Symbol("m", 0)
    N, M = Expr.symbol(n), Expr.symbol(m)
    e = (N + 2) * (M - 1) - N * M
    want = Expr({((n, 1),): -1, ((m, 1),): 2, (): -2})
    assert e == want and hash(e) == hash(want) and e.terms == want.terms
    assert (N - N) == Expr.const(0) and (N - N).terms == ()
    assert 3 * N - N == Expr({((n, 1),): 2}) and (0 * N).as_const() == 0
    assert -(N + M) == Expr({((n, 1),): -1, ((m, 1),): -1})
    assert Expr.const(7) is Expr.const(7) and Expr.const(10 ** 30).as_const() == 10 ** 30
