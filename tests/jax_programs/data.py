"""Synthetic MNIST-shaped data (no download): 28x28 grey images in [0, 1] whose labels follow a
fixed random linear rule of the pixels, so that a classifier can learn them. Plain numpy, the
same arrays for the jax run and the dynjax run."""
import numpy as np


def mnist_like(num_train=512, num_test=256, seed=0):
    """``(train_images, train_labels, test_images, test_labels)``: images ``(n, 784)`` float64 in
    [0, 1], labels one-hot ``(n, 10)`` float64 (the layout JAX's examples load MNIST in)."""
    rng = np.random.RandomState(seed)
    n = num_train + num_test
    # smooth blobs: a few bright Gaussian spots per image
    yy, xx = np.mgrid[0:28, 0:28]
    images = np.zeros((n, 28, 28))
    for _ in range(3):
        cy, cx = rng.uniform(4, 24, (2, n, 1, 1))
        width = rng.uniform(2.0, 5.0, (n, 1, 1))
        images += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * width ** 2))
    images = np.clip(images, 0.0, 1.0).reshape(n, 784)
    rule = rng.randn(784, 10)
    labels = np.argmax(images @ rule + 0.1 * rng.randn(n, 10), axis=1)
    one_hot = np.eye(10)[labels]
    return images[:num_train], one_hot[:num_train], images[num_train:], one_hot[num_train:]


def batches(images, labels, batch_size, seed=0):
    """An endless stream of shuffled mini-batches (the last of each epoch may be smaller: a new
    batch size, which dynjax serves without retracing)."""
    rng = np.random.RandomState(seed)
    n = images.shape[0]
    while True:
        perm = rng.permutation(n)
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            yield images[idx], labels[idx]
