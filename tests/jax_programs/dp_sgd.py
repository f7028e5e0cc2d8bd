"""Differentially private SGD on MNIST-shaped images: a ``stax`` convolutional network
(``Conv`` with SAME and VALID padding and strides, ``MaxPool``, ``Flatten``), per-example gradients
by ``vmap`` of ``grad``, each clipped to an L2 norm across the whole parameter tree
(``jax.tree.flatten``), summed, noised with ``random.normal`` and applied with ``optimizers.sgd``.
Written against jax; ``swap.load_swapped`` runs it, unmodified, on dynjax."""
import itertools
from functools import partial

import jax
import jax.numpy as jnp
from jax import grad, jit, random, vmap
from jax.example_libraries import optimizers, stax
from jax.nn import log_softmax

from jax_programs.data import batches, mnist_like

init_random_params, predict = stax.serial(
    stax.Conv(8, (8, 8), padding="SAME", strides=(2, 2)), stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Conv(16, (4, 4), padding="VALID", strides=(2, 2)), stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Flatten,
    stax.Dense(32), stax.Relu,
    stax.Dense(10))


def loss(params, batch):
    inputs, targets = batch
    logits = log_softmax(predict(params, inputs))
    return -jnp.mean(jnp.sum(logits * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) == jnp.argmax(targets, axis=1))


def clipped_grad(params, l2_norm_clip, single_example_batch):
    """The gradient of one example, scaled down to norm ``l2_norm_clip`` if it is longer."""
    grads = grad(loss)(params, single_example_batch)
    leaves, tree_def = jax.tree.flatten(grads)
    total_norm = jnp.linalg.norm(jnp.array([jnp.linalg.norm(g.ravel()) for g in leaves]))
    divisor = jnp.maximum(total_norm / l2_norm_clip, 1.0)
    return jax.tree.unflatten(tree_def, [g / divisor for g in leaves])


def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
    """Clipped per-example gradients, summed, noised and averaged."""
    clipped = vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
    leaves, tree_def = jax.tree.flatten(clipped)
    summed = [g.sum(0) for g in leaves]
    keys = random.split(rng, len(summed))
    noised = [(g + l2_norm_clip * noise_multiplier * random.normal(k, g.shape)) / batch_size
              for k, g in zip(keys, summed)]
    return jax.tree.unflatten(tree_def, noised)


def shape_as_image(images, labels):
    """Per-example batches for ``vmap``: ``(batch, 1, 28, 28, 1)`` images, ``(batch, 1, 10)``
    labels."""
    return jnp.reshape(images, (-1, 1, 28, 28, 1)), jnp.reshape(labels, (-1, 1, 10))


def main(num_steps=4, batch_size=32, l2_norm_clip=1.5, noise_multiplier=1.1, step_size=0.15):
    train_images, train_labels, test_images, test_labels = mnist_like()
    opt_init, opt_update, get_params = optimizers.sgd(step_size)

    @partial(jit, static_argnums=(3,))
    def private_update(rng, i, opt_state, batch_size, batch):
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)
        g = private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size)
        return opt_update(i, g, opt_state)

    key = random.PRNGKey(0)
    _, init_params = init_random_params(key, (-1, 28, 28, 1))
    opt_state = opt_init(init_params)
    stream = batches(train_images, train_labels, batch_size, seed=2)
    step = itertools.count()
    for _ in range(num_steps):
        opt_state = private_update(key, next(step), opt_state, batch_size,
                                   shape_as_image(*next(stream)))
    params = get_params(opt_state)
    test = (jnp.reshape(test_images, (-1, 28, 28, 1)), test_labels)
    test_loss, test_accuracy = jit(lambda p, b: (loss(p, b), accuracy(p, b)))(params, test)
    return {
        "test_loss": float(test_loss),
        "test_accuracy": float(test_accuracy),
        "kernel_norms": [float(jnp.linalg.norm(p[0])) for p in params if len(p) == 2],
    }


if __name__ == "__main__":
    for k, v in main().items():
        print(k, v)
