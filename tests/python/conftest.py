"""Shared pytest configuration for the bytelens Python tests.

Hypothesis profiles: "default" (quick, local runs) and "ci" (more examples);
pick one with HYPOTHESIS_PROFILE=ci. Neither has a deadline: a cold import
of numpy or the first view of a dtype can take longer than any fixed limit.

The ``compat`` marker picks the tests of what differs between the
interpreters and numpys the one abi3 wheel serves (CPython 3.11, 3.12,
3.13; numpy 1.26 and 2.x): the stable ABI's buffer protocol, DLPack
capsules and pickling, reference counting and lifetimes, numpy 1's and 2's
protocols, casting rules and file writers, argument conversion, child
processes. ``cargo xtask test`` runs every test under CPython 3.11 with
numpy 2, and ``-m compat`` under the others (``cargo xtask test python-all``
runs everything everywhere).
"""

import gc
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    max_examples=100,
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


#: The files whose every test is marked ``compat`` (see the module's docs);
#: the README's "How it is tested" lists them too.
COMPAT_FILES = frozenset(
    {
        "test_args.py",  # pyo3's argument conversion, on each C API
        "test_ascontiguous.py",  # numpy 1's and 2's casting, NaNs and byte orders
        "test_bindings_hostile.py",  # argument errors and their notes (PEP 678)
        "test_dlpack_view.py",  # capsules: numpy 1's legacy import, 2's versioned one
        "test_edges.py",
        "test_files.py",  # np.save / np.savez of each numpy, read back
        "test_lifetimes.py",  # reference counts, exports, garbage collection
        "test_oracle.py",  # views against each numpy's own view()
        "test_protocols.py",  # buffer protocol, __array_interface__, pickle 5
        "test_seeds.py",
        "test_shared.py",  # child processes, fork, pickling a segment
    }
)


def pytest_configure(config):
    config.addinivalue_line("markers", "compat: a test of what differs between CPython and numpy versions")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in COMPAT_FILES:
            item.add_marker(pytest.mark.compat)


@pytest.fixture
def collect():
    """A function that runs a full garbage collection (frees any reference cycles)."""
    return gc.collect
