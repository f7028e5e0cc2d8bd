# RUN: %PYTHON %s | filecheck %s
# qjit(autograph=True): Python for / while / if on traced values become for_loop, while_loop
# and cond; on static values they stay Python.
import numpy as np
import dynjax.numpy as jnp
from dynjax import qjit


@qjit(autograph=True, abstracted_axes=({0: "n"}, None))
def accumulate(x, n):
    acc = jnp.zeros_like(x)
    for i in range(n):
        acc = acc + x * i
    return acc


accumulate(np.ones(3), 4)
print(accumulate.jaxpr)
# The traced bound n becomes the upper bound of one for_loop; acc is its only carried value.
# CHECK:       { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[UP:[a-z]+]]:i64[]. let
# CHECK:         [[ACC:[a-z]+]]:f64[[[N]]] = broadcast_in_dim
# CHECK:         [[R:[a-z]+]]:f64[[[N]]] = for_loop[
# CHECK:           body_jaxpr={ lambda ; [[D:[a-z]+]]:i64[] [[BX:[a-z]+]]:f64[[[D]]] [[I:[a-z]+]]:i64[] [[A:[a-z]+]]:f64[[[D]]]. let
# CHECK:             {{[a-z]+}}:f64[[[D]]] = mul [[BX]] {{[a-z]+}}
# CHECK:             in ({{[a-z]+}},) }
# CHECK:           body_nconsts=2
# CHECK:           nimplicit=0
# CHECK:         ] [[N]] [[X]] 0 [[UP]] 1 0 [[ACC]]
# CHECK-NEXT:  in ([[R]],) }


@qjit(autograph=True)
def newton(a, tol):
    x = a
    err = 1.0
    while err > tol:
        x_new = 0.5 * (x + a / x)
        if x_new < 0.5 * x:
            x_new = 0.5 * x
        err = jnp.abs(x_new - x)
        x = x_new
    return x


newton(2.0, 1e-12)
print(newton.jaxpr)
# err and x are carried; x_new is a temporary of the body. The if is a cond inside the body.
# CHECK:       { lambda ; [[A:[a-z]+]]:f64[] [[TOL:[a-z]+]]:f64[]. let
# CHECK:         {{[a-z]+}}:f64[] [[XR:[a-z]+]]:f64[] = while_loop[
# CHECK:           body_jaxpr={ lambda ; {{[a-z]+}}:f64[] [[ERR:[a-z]+]]:f64[] [[XB:[a-z]+]]:f64[]. let
# CHECK:             [[P:[a-z]+]]:bool[] = lt
# CHECK:             [[IDX:[a-z]+]]:i64[] = convert_element_type[new_dtype=int64 weak_type=False] [[P]]
# CHECK:             {{[a-z]+}}:f64[] = cond[
# CHECK-NEXT:          branches=(
# CHECK:             ] [[IDX]]
# CHECK:           cond_jaxpr={ lambda ; [[T:[a-z]+]]:f64[] [[E:[a-z]+]]:f64[] {{[a-z]+}}:f64[]. let
# CHECK-NEXT:          {{[a-z]+}}:bool[] = gt [[E]] [[T]]
# CHECK:         ] [[TOL]] [[A]] 1.0 [[A]]
# CHECK-NEXT:  in ([[XR]],) }


@qjit(autograph=True, static_argnums=1)
def static_power(x, p):
    acc = x
    for _ in range(p - 1):
        acc = acc * x
    if p > 2:
        acc = acc + 1.0
    return acc


static_power(2.0, 3)
print(static_power.jaxpr)
# A static range unrolls and a static if is plain Python: no loop, no cond.
# CHECK:       { lambda ; [[X:[a-z]+]]:f64[]. let
# CHECK-NEXT:    [[B:[a-z]+]]:f64[] = mul [[X]] [[X]]
# CHECK-NEXT:    [[C:[a-z]+]]:f64[] = mul [[B]] [[X]]
# CHECK-NEXT:    [[D:[a-z]+]]:f64[] = add [[C]] 1.0
# CHECK-NEXT:  in ([[D]],) }
