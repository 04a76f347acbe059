"""A toy memory task small enough for a CPU, to show that the Multi-Conv DAPO trainer learns.

`python -m memrepro.toy --config config/toy.yaml --out results/toy`; see README.md here.
"""
