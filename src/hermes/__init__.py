"""Hermes: a self-hosted AI agent that remembers."""

import os

# numpy's BLAS would start a thread per core for every product; a search's products are small
# and many searches and the embedding model run side by side, so those threads only contend
# (bench: a LoCoMo search 172 -> 45 ms a question on two busy cores). Set before numpy loads;
# a value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
