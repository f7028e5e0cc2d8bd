# RUN: %PYTHON %s | filecheck %s
# Equal sizes computed twice are one dim: x[1:] and x[:-1] both have max(n - 1, 0) elements,
# bound once to a variable that both slices and the difference use.
import numpy as np

import dynjax
import dynjax.numpy as jnp


def diff(x):
    return x[1:] - x[:-1]


print(dynjax.make_jaxpr(diff, abstracted_axes={0: "n"})(np.ones(5)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[C:[a-z]+]]:i64[] = sub [[N]] 1
# CHECK-NEXT: [[D:[a-z]+]]:i64[] = max [[C]] 0
# CHECK-NEXT: [[HI:[a-z]+]]:f64[[[D]]] = dynamic_slice[slice_sizes=(None,)] [[X]] 1 [[D]]
# CHECK-NEXT: [[LO:[a-z]+]]:f64[[[D]]] = dynamic_slice[slice_sizes=(None,)] [[X]] 0 [[D]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[D]]] = sub [[HI]] [[LO]]
# CHECK-NEXT: in ([[D]], {{[a-z]+}}) }


def arange_from_one(x):
    return x * jnp.arange(1, x.shape[0] + 1)


# arange(1, n + 1) has n elements: the iota is sized by the input's own dim
print(dynjax.make_jaxpr(arange_from_one, abstracted_axes={0: "n"})(np.ones(5)))
# CHECK: { lambda ; [[N2:[a-z]+]]:i64[] [[X2:[a-z]+]]:f64[[[N2]]]. let
# CHECK-NEXT: {{[a-z]+}}:i64[[[N2]]] = iota[dimension=0 dtype=int64 shape=(None,)] [[N2]]
# CHECK-NOT: sub
# CHECK: in ({{[a-z]+}},) }

try:
    dynjax.make_jaxpr(lambda x, y: x[1:] + y, abstracted_axes=({0: "n"}, {0: "m"}))(np.ones(3), np.ones(2))
except TypeError as e:
    print("TypeError:", e)
# CHECK: TypeError: shapes float64[max(n - 1, 0)] and float64[m] cannot be broadcast together: the sizes max(n - 1, 0) and m are not known to be equal
