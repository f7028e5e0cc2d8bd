"""A classifier written with ``jax.numpy`` alone (no libraries): parameters from numpy's RNG,
tanh layers, a log-softmax via ``jax.scipy.special.logsumexp``, plain SGD in a jitted update.
Written against jax; ``swap.load_swapped`` runs it, unmodified, on dynjax."""
import numpy.random as npr

import jax.numpy as jnp
from jax import grad, jit
from jax.scipy.special import logsumexp

from jax_programs.data import batches, mnist_like


def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
    return [(scale * rng.randn(m, n), scale * rng.randn(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def predict(params, inputs):
    activations = inputs
    for w, b in params[:-1]:
        activations = jnp.tanh(jnp.dot(activations, w) + b)
    final_w, final_b = params[-1]
    logits = jnp.dot(activations, final_w) + final_b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def loss(params, batch):
    inputs, targets = batch
    return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) == jnp.argmax(targets, axis=1))


def main(num_steps=15, batch_size=128, step_size=0.05):
    train_images, train_labels, test_images, test_labels = mnist_like()
    params = init_random_params(0.1, [784, 256, 128, 10], rng=npr.RandomState(0))

    @jit
    def update(params, batch):
        grads = grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db) for (w, b), (dw, db) in zip(params, grads)]

    stream = batches(train_images, train_labels, batch_size, seed=1)
    for _ in range(num_steps):
        params = update(params, next(stream))
    return {
        "train_loss": float(loss(params, (train_images, train_labels))),
        "train_accuracy": float(accuracy(params, (train_images, train_labels))),
        "test_accuracy": float(accuracy(params, (test_images, test_labels))),
        "bias_sums": [float(jnp.sum(b)) for _, b in params],
    }


if __name__ == "__main__":
    for k, v in main().items():
        print(k, v)
