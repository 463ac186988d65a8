"""The validation suite: the port held against R's numbers, cone programs and live R.

Run ``python -m validation`` from the repository root; see README.md.
"""
