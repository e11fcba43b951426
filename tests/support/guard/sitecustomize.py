"""Installs the fast tier's model guard in a Python subprocess of a test (see phr_test_guard)."""

import phr_test_guard

phr_test_guard.install()
