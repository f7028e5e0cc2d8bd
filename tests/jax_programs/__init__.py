"""JAX-style example programs (classifiers, a VAE, DP-SGD, ADVI on synthetic MNIST-shaped data)
written against ``jax``, and the import swap that runs them, unmodified, on dynjax.

Each program is a module with ``main() -> dict`` of the numbers it prints. ``swap.run(path)``
executes a program with every ``jax`` import answered by ``dynjax`` (JAX's own
``jax.example_libraries.stax`` / ``optimizers`` included: their source files, from the installed
jax, execute under the same swap). ``tests/test_jax_programs.py`` compares the two runs."""
