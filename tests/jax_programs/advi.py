"""Automatic differentiation variational inference: a diagonal-Gaussian approximation of a 2-d
"banana" posterior, fitted by maximizing a Monte-Carlo ELBO (reparameterized samples drawn with
``random.normal``, averaged with ``vmap``) with ``optimizers.adam``; densities from
``jax.scipy.stats.norm``. Written against jax; ``swap.load_swapped`` runs it, unmodified, on
dynjax."""
from functools import partial

import jax.numpy as jnp
from jax import jit, random, value_and_grad, vmap
from jax.example_libraries import optimizers
from jax.scipy.stats import norm


def log_density(z):
    """An unnormalized banana-shaped density in two dimensions."""
    x, y = z[0], z[1]
    return norm.logpdf(x, 0.0, 1.5) + norm.logpdf(y, 0.5 * x ** 2 - 1.0, 0.6)


def diag_gaussian_sample(rng, mean, log_std):
    return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)


def diag_gaussian_logpdf(x, mean, log_std):
    return jnp.sum(vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))


def elbo(logprob, rng, mean, log_std):
    sample = diag_gaussian_sample(rng, mean, log_std)
    return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)


def batch_elbo(logprob, rng, params, num_samples):
    rngs = random.split(rng, num_samples)
    return jnp.mean(vmap(partial(elbo, logprob), in_axes=(0, None, None))(rngs, *params))


def main(num_steps=60, num_samples=40, step_size=0.1):
    def objective(params, t):
        return -batch_elbo(log_density, random.PRNGKey(t), params, num_samples)

    opt_init, opt_update, get_params = optimizers.adam(step_size)

    @jit
    def update(i, opt_state):
        value, g = value_and_grad(objective)(get_params(opt_state), i)
        return value, opt_update(i, g, opt_state)

    opt_state = opt_init((jnp.array([0.5, -0.5]), jnp.array([-1.0, -1.0])))
    trace = []
    for t in range(num_steps):
        value, opt_state = update(t, opt_state)
        trace.append(float(value))
    mean, log_std = get_params(opt_state)
    # a final, larger Monte-Carlo estimate (a second sample count: a new size for dynjax)
    final = float(batch_elbo(log_density, random.PRNGKey(123), (mean, log_std), 1000))
    return {"objective": trace[::10], "mean": [float(m) for m in mean],
            "log_std": [float(s) for s in log_std], "final_elbo": final}


if __name__ == "__main__":
    for k, v in main().items():
        print(k, v)
