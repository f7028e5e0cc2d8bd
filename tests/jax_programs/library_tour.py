"""Every layer of JAX's ``stax`` (init and apply, on a batch of images or vectors) and every
optimizer and schedule of ``optimizers`` (a few steps on a quadratic with a tree of parameters).
Written against jax; ``swap.load_swapped`` runs it, unmodified, on dynjax."""
import jax
import jax.numpy as jnp
from jax import grad, jit, random
from jax.example_libraries import optimizers, stax


def summary(tree):
    """A few numbers describing every leaf of a tree."""
    return [[float(jnp.sum(leaf)), float(jnp.sum(jnp.abs(leaf))), list(jnp.shape(leaf))]
            for leaf in jax.tree.leaves(tree)]


IMAGE_LAYERS = {
    "conv_same": stax.Conv(4, (3, 3), padding="SAME"),
    "general_conv": stax.GeneralConv(("NCHW", "OIHW", "NHWC"), 2, (2, 2), padding="SAME"),
    "conv_transpose": stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME"),
    "max_pool": stax.MaxPool((2, 2), strides=(2, 2)),
    "avg_pool_same": stax.AvgPool((3, 3), padding="SAME"),
    "sum_pool": stax.SumPool((2, 3)),
    "batch_norm": stax.BatchNorm(axis=(0, 1, 2)),
    "flatten": stax.Flatten,
    "identity": stax.Identity,
}
VECTOR_LAYERS = {
    name: layer for name, layer in [
        ("dense", stax.Dense(5)), ("tanh", stax.Tanh), ("relu", stax.Relu), ("exp", stax.Exp),
        ("log_softmax", stax.LogSoftmax), ("softmax", stax.Softmax), ("softplus", stax.Softplus),
        ("sigmoid", stax.Sigmoid), ("elu", stax.Elu), ("leaky_relu", stax.LeakyRelu),
        ("selu", stax.Selu), ("gelu", stax.Gelu),
        ("fan_in_sum", stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Dense(3)),
                                   stax.FanInSum)),
        ("fan_in_concat", stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(2), stax.Tanh),
                                      stax.FanInConcat())),
        ("dropout_train", stax.Dropout(0.7, mode="train")),
        ("dropout_test", stax.Dropout(0.7, mode="test")),
        ("shape_dependent", stax.shape_dependent(lambda shape: stax.Dense(shape[-1] + 1))),
    ]
}

SEQUENCE_LAYERS = {
    "conv1d_transpose": stax.Conv1DTranspose(2, (3,), strides=(2,), padding="VALID"),
}


def layer_tour(key):
    """Every layer's parameters and output, from one jitted program."""
    return {name: summary(arrays) for name, arrays in jit(layer_arrays)(key).items()}


def layer_arrays(key):
    out = {}
    images = random.uniform(key, (3, 8, 8, 2))
    for name, (init, apply) in IMAGE_LAYERS.items():
        k1, k2 = random.split(random.fold_in(key, len(out)))
        shape, params = init(k1, images.shape)
        y = apply(params, images, rng=k2)
        assert tuple(shape) == y.shape, (name, shape, y.shape)
        out[name] = (params, y)
    vectors = random.normal(key, (4, 6))
    for name, (init, apply) in VECTOR_LAYERS.items():
        k1, k2 = random.split(random.fold_in(key, len(out)))
        shape, params = init(k1, vectors.shape)
        y = apply(params, vectors, rng=k2)
        out[name] = (params, y)
    sequences = random.normal(key, (2, 7, 3))
    for name, (init, apply) in SEQUENCE_LAYERS.items():
        k1, k2 = random.split(random.fold_in(key, len(out)))
        shape, params = init(k1, sequences.shape)
        y = apply(params, sequences, rng=k2)
        assert tuple(shape) == y.shape, (name, shape, y.shape)
        out[name] = (params, y)
    return out


OPTIMIZERS = {
    "sgd": optimizers.sgd(0.1),
    "sgd_schedule": optimizers.sgd(optimizers.exponential_decay(0.1, 2, 0.5)),
    "momentum": optimizers.momentum(optimizers.inverse_time_decay(0.1, 3, 2.0), 0.9),
    "nesterov": optimizers.nesterov(optimizers.polynomial_decay(0.1, 5, 0.01, 2.0), 0.8),
    "adagrad": optimizers.adagrad(0.3),
    "rmsprop": optimizers.rmsprop(0.05),
    "rmsprop_momentum": optimizers.rmsprop_momentum(0.05),
    "adam": optimizers.adam(0.1),
    "adamax": optimizers.adamax(0.1),
}
# Left out, both for one reason: eager dynjax results are numpy arrays, not JAX arrays.
# optimizers.sm3 calls ndarray.max(list_of_axes) on them (numpy wants a tuple), and
# optimizers.piecewise_constant indexes a concrete array with a traced step inside jit.


def quadratic(params):
    return (jnp.sum((params["w"] - 1.0) ** 2) + jnp.sum(params["b"] ** 4)
            + jnp.sum(jnp.cos(params["m"])))


def optimizer_tour(key, num_steps=6):
    out = {}
    for name, (opt_init, opt_update, get_params) in OPTIMIZERS.items():
        params = {"w": random.normal(key, (3,)), "b": jnp.array([0.5, -1.0]),
                  "m": random.uniform(key, (2, 3))}
        opt_state = opt_init(params)

        def step(i, opt_state):
            g = grad(quadratic)(get_params(opt_state))
            g = optimizers.clip_grads(g, 2.0)
            return opt_update(i, g, opt_state)

        step = jit(step)

        for i in range(num_steps):
            opt_state = step(i, opt_state)
        packed = optimizers.unpack_optimizer_state(opt_state)
        restored = optimizers.pack_optimizer_state(packed)
        out[name] = summary(get_params(restored)) + [float(optimizers.l2_norm(get_params(opt_state)))]
    return out


def main():
    key = random.PRNGKey(42)
    return {"layers": layer_tour(key), "optimizers": optimizer_tour(key)}


if __name__ == "__main__":
    for k, v in main().items():
        print(k, v)
