"""Fixtures shared by several test modules."""

import pytest


@pytest.fixture(scope="module")
def one_torch_thread():
    """Short training runs on one torch thread: more only adds noise on a shared machine."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
