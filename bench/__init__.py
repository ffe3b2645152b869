"""tether's benchmarks (`python bench/run.py --list`), importable as `bench.*` from the
repository root so the scripts of one folder can use another's and the shared harness.

What it cannot do: nothing here is part of the installed package; scripts run from a checkout.
"""
