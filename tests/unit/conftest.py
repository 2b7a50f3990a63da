"""Fixtures the unit tests share."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """One torch thread for the test (timings and float sums as the app runs them)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
