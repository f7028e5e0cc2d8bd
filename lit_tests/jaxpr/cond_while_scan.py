# RUN: %PYTHON %s | filecheck %s
# Printed forms of cond (fresh result dim), while_loop (growing array) and scan.
import numpy as np
import dynjax
import dynjax.numpy as jnp
from dynjax import cond, lax, while_loop


def c(p, n):
    @cond(p > 0)
    def f():
        return jnp.ones(n)

    @f.otherwise
    def g():
        return jnp.zeros(n + 2)
    return f()


print(dynjax.make_jaxpr(c)(1, 3))
# CHECK: { lambda ; {{[a-z]+}}:i64[] [[N:[a-z]+]]:i64[]. let
# CHECK:         [[M:[a-z]+]]:i64[] [[R:[a-z]+]]:f64[[[M]]] = cond[
# CHECK-NEXT:      branches=(
# CHECK-NEXT:        { lambda ; [[G:[a-z]+]]:i64[]. let
# CHECK:             in ([[G]], {{[a-z]+}}) }
# CHECK-NEXT:        { lambda ; [[I:[a-z]+]]:i64[]. let
# CHECK-NEXT:            [[J:[a-z]+]]:i64[] = add [[I]] 2
# CHECK:             in ([[J]], {{[a-z]+}}) }
# CHECK-NEXT:      )
# CHECK-NEXT:    ] {{[a-z]+}} [[N]]
# CHECK-NEXT:  in ([[M]], [[R]]) }


def grow(x, limit):
    return lax.while_loop(lambda a: a.shape[0] < limit, lambda a: jnp.concatenate([a, a]), x)


print(dynjax.make_jaxpr(grow, abstracted_axes=({0: 'n'},))(np.ones(3), 10))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[L:[a-z]+]]:i64[]. let
# CHECK:         {{[a-z]+}}:i64[] {{[a-z]+}}:f64[{{[a-z]+}}] = while_loop[
# CHECK:           body_jaxpr={ lambda ; [[K:[a-z]+]]:i64[] [[A:[a-z]+]]:f64[[[K]]]. let
# CHECK:           cond_jaxpr={ lambda ; [[LIM:[a-z]+]]:i64[] [[K2:[a-z]+]]:i64[] {{[a-z]+}}:f64[[[K2]]]. let
# CHECK-NEXT:          {{[a-z]+}}:bool[] = lt [[K2]] [[LIM]]
# CHECK:           cond_nconsts=1
# CHECK:           nimplicit=1
# CHECK:         ] [[L]] [[N]] [[X]]


def cumulative(xs):
    return lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)


print(dynjax.make_jaxpr(cumulative, abstracted_axes=({0: 'n'},))(np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[XS:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT:    {{[a-z]+}}:f64[] [[YS:[a-z]+]]:f64[[[N]]] = scan[
# CHECK:           num_carry=1
# CHECK:         ] [[N]] 0.0 [[XS]]
