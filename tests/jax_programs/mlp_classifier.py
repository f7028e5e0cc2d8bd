"""A multilayer-perceptron classifier on MNIST-shaped data, built with JAX's ``stax`` and trained
with ``optimizers.momentum`` under ``jit``. Written against jax; ``swap.load_swapped`` runs it,
unmodified, on dynjax. The last mini-batch of each epoch is smaller (512 = 5 x 100 + 12)."""
import jax.numpy as jnp
from jax import grad, jit, random
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, LogSoftmax, Relu

from jax_programs.data import batches, mnist_like

init_random_params, predict = stax.serial(
    Dense(1024), Relu,
    Dense(1024), Relu,
    Dense(10), LogSoftmax)


def loss(params, batch):
    inputs, targets = batch
    return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))


@jit
def accuracy(params, batch):
    inputs, targets = batch
    return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) == jnp.argmax(targets, axis=1))


def main(num_steps=12, batch_size=100):
    train_images, train_labels, test_images, test_labels = mnist_like()
    opt_init, opt_update, get_params = optimizers.momentum(0.05, mass=0.9)

    @jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(random.PRNGKey(0), (-1, 28 * 28))
    opt_state = opt_init(init_params)
    stream = batches(train_images, train_labels, batch_size)
    losses = []
    for i in range(num_steps):
        batch = next(stream)
        losses.append(float(loss(get_params(opt_state), batch)))
        opt_state = update(i, opt_state, batch)
    params = get_params(opt_state)
    out = {
        "first_weight": float(init_params[0][0][0, 0]),
        "losses": losses,
        "train_accuracy": float(accuracy(params, (train_images, train_labels))),
        "test_accuracy": float(accuracy(params, (test_images, test_labels))),
        "weight_norms": [float(jnp.linalg.norm(w)) for w, _ in params[::2]],
    }
    return out


if __name__ == "__main__":
    for k, v in main().items():
        print(k, v)
