"""A variational autoencoder on binarized MNIST-shaped images: a ``stax`` encoder with two heads
(``FanOut`` + ``parallel``: mean and ``Softplus`` variance), a ``stax`` decoder, the
reparameterized ELBO, and an epoch of momentum steps as one jitted ``lax.fori_loop`` whose
mini-batches are ``lax.dynamic_slice``s of the data set, binarized with ``random.bernoulli``.
Written against jax; ``swap.load_swapped`` runs it, unmodified, on dynjax."""
import jax.numpy as jnp
from jax import grad, jit, lax, random
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, FanOut, Relu, Softplus
from jax.nn import sigmoid

from jax_programs.data import mnist_like


def gaussian_kl(mu, sigmasq):
    """KL(N(mu, sigmasq) || N(0, 1)), summed."""
    return -0.5 * jnp.sum(1.0 + jnp.log(sigmasq) - mu ** 2.0 - sigmasq)


def gaussian_sample(rng, mu, sigmasq):
    return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)


def bernoulli_logpdf(logits, x):
    return -jnp.sum(jnp.logaddexp(0.0, jnp.where(x, -1.0, 1.0) * logits))


encoder_init, encode = stax.serial(
    Dense(256), Relu, Dense(256), Relu,
    FanOut(2), stax.parallel(Dense(10), stax.serial(Dense(10), Softplus)))
decoder_init, decode = stax.serial(Dense(256), Relu, Dense(256), Relu, Dense(28 * 28))


def elbo(rng, params, images):
    enc_params, dec_params = params
    mu_z, sigmasq_z = encode(enc_params, images)
    logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
    return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)


def image_sample(rng, params, nrow, ncol):
    _, dec_params = params
    code_rng, img_rng = random.split(rng)
    logits = decode(dec_params, random.normal(code_rng, (nrow * ncol, 10)))
    return random.bernoulli(img_rng, sigmoid(logits))


def main(num_epochs=2, batch_size=32, step_size=0.001):
    train_images, _, test_images, _ = mnist_like()
    num_batches = train_images.shape[0] // batch_size
    enc_key, dec_key, imgs_key = random.split(random.PRNGKey(0), 3)
    _, init_encoder_params = encoder_init(enc_key, (batch_size, 28 * 28))
    _, init_decoder_params = decoder_init(dec_key, (batch_size, 10))
    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=0.9)

    def binarize_batch(rng, i, images):
        batch = lax.dynamic_slice_in_dim(images, i * batch_size, batch_size)
        return random.bernoulli(rng, batch)

    @jit
    def run_epoch(rng, opt_state, images):
        def body_fun(i, opt_state):
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = binarize_batch(data_rng, i, images)
            loss = lambda params: -elbo(elbo_rng, params, batch) / batch_size
            return opt_update(i, grad(loss)(get_params(opt_state)), opt_state)
        return lax.fori_loop(0, num_batches, body_fun, opt_state)

    @jit
    def evaluate(opt_state, images):
        params = get_params(opt_state)
        elbo_rng, data_rng, image_rng = random.split(test_rng, 3)
        binarized = random.bernoulli(data_rng, images)
        test_elbo = elbo(elbo_rng, params, binarized) / images.shape[0]
        sampled = image_sample(image_rng, params, 4, 4)
        return test_elbo, jnp.sum(sampled)

    test_rng = random.PRNGKey(1)
    opt_state = opt_init((init_encoder_params, init_decoder_params))
    elbos, pixels = [], []
    for epoch in range(num_epochs):
        opt_state = run_epoch(random.PRNGKey(epoch), opt_state, train_images)
        test_elbo, on_pixels = evaluate(opt_state, test_images)
        elbos.append(float(test_elbo))
        pixels.append(int(on_pixels))
    return {"test_elbo": elbos, "sampled_on_pixels": pixels}


if __name__ == "__main__":
    for k, v in main().items():
        print(k, v)
