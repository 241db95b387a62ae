"""Plain-Python reference implementations of the chain updates (test oracle).

Deliberately naive: one block at a time, no numba, no vectorisation, written
straight from the equations, so the kernels can be checked against them.
``normal`` is any zero-argument callable returning a standard normal draw.
"""

from __future__ import annotations


def dead_zone(z, mu_right, mu_left):
    if z > mu_right:
        return z - mu_right
    if z < -mu_left:
        return z + mu_left
    return 0.0


def forces(x, k, y):
    """Spring force on each block from the previous positions."""
    n = len(x)
    out = []
    for j in range(n):
        left = x[j - 1] if j > 0 else 0.0
        right = x[j + 1] if j + 1 < n else y
        out.append(k * (right - 2.0 * x[j] + left))
    return out


def overdamped(n_blocks, mu_right, mu_left, noise, steps, normal, k=1.0, y=1.0, eta=0.01,
               synchronous=False):
    """x_l <- x_l + eta f(F_l + s xi_l) (paper Eqs. 5-6); returns final positions."""
    x = [0.0] * n_blocks
    for _ in range(steps):
        f = forces(x, k, y)
        shared = normal() if synchronous else None
        x = [x[j] + eta * dead_zone(f[j] + noise * (shared if synchronous else normal()),
                                    mu_right, mu_left)
             for j in range(n_blocks)]
    return x


def second_order(n_blocks, mu_right, mu_left, noise, steps, normal, k=1.0, y=1.0, eta=0.01,
                 gamma=4.0):
    """Damped second-order chain, static/sliding friction, semi-implicit Euler."""
    x = [0.0] * n_blocks
    v = [0.0] * n_blocks
    for _ in range(steps):
        f = forces(x, k, y)
        for j in range(n_blocks):
            applied = f[j] + noise * normal()
            if v[j] > 0:
                v[j] = max(v[j] + eta * (applied - gamma * v[j] - mu_right), 0.0)
            elif v[j] < 0:
                v[j] = min(v[j] + eta * (applied - gamma * v[j] + mu_left), 0.0)
            else:
                v[j] = eta * dead_zone(applied, mu_right, mu_left)
            x[j] += eta * v[j]
    return x


def langevin(n_blocks, mu_right, mu_left, noise, steps, normal, k=1.0, y=1.0, dt=0.05,
             gamma=1.0):
    """Second-order Langevin chain, per-step velocity kick, Euler-Maruyama."""
    x = [0.0] * n_blocks
    v = [0.0] * n_blocks
    for _ in range(steps):
        f = forces(x, k, y)
        for j in range(n_blocks):
            if v[j] > 0:
                accel = f[j] - gamma * v[j] - mu_right
            elif v[j] < 0:
                accel = f[j] - gamma * v[j] + mu_left
            else:
                accel = dead_zone(f[j], mu_right, mu_left)
            x[j] += dt * v[j]
            v[j] += dt * accel + noise * normal()
    return x
