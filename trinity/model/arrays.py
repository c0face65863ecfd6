"""numpy array types of the router's values, one name each (θ, logits, features, indices).

θ and the ES's numbers are float64; features and logits out of the encoder are float32;
token ids int64; what `argmax` / sampling return is `intp`. `FloatArray` is either float width,
for inputs a function converts itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

Float64Array = NDArray[np.float64]
Float32Array = NDArray[np.float32]
FloatArray = NDArray[np.floating[Any]]
Int64Array = NDArray[np.int64]
IndexArray = NDArray[np.intp]

__all__ = ["Float32Array", "Float64Array", "FloatArray", "IndexArray", "Int64Array"]
