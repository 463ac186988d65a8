"""Baselines that are not the library: R's recorded numbers, cone programs, the R bridge.

Nothing in this package imports :mod:`kerndwd`; it reads data and computes
its answers independently, so that agreement with the port means something.
"""
