"""Neural-network problems, torch-free: MLPs batched over clients and seeds, NumPy or CuPy.

- :mod:`fedtheory.problems.nn.model`: :class:`MLP`, hand-written forward/backward on stacked parameters.
- :mod:`fedtheory.problems.nn.conv`: :class:`Conv1DNet`, a small 1-D CNN in the same flat, batched style.
- :mod:`fedtheory.problems.nn.kernels`: bias+activation, softmax cross-entropy and server-optimizer
  updates, written once; fused with ``cupy.fuse`` / a ``RawKernel`` (``cuda/*.cu``) on CuPy.
- :mod:`fedtheory.problems.nn.data`: MNIST-1D and LEAF Synthetic generated locally, Dirichlet/i.i.d.
  partitions, validated loading, stacked :class:`FederatedData`.
- :mod:`fedtheory.problems.nn.problem`: :class:`MLPProblem`, the model as a federated Problem.
"""

from fedtheory.problems.nn.conv import Conv1DNet
from fedtheory.problems.nn.data import (
    DatasetError,
    FederatedData,
    dirichlet_partition,
    federated_mnist1d,
    federated_synthetic,
    iid_partition,
    leaf_synthetic,
    load_dataset,
    mnist1d,
)
from fedtheory.problems.nn.model import MLP
from fedtheory.problems.nn.problem import MLPProblem

__all__ = [
    "MLP",
    "Conv1DNet",
    "DatasetError",
    "FederatedData",
    "MLPProblem",
    "dirichlet_partition",
    "federated_mnist1d",
    "federated_synthetic",
    "iid_partition",
    "leaf_synthetic",
    "load_dataset",
    "mnist1d",
]
