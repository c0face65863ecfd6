"""Sweeps on Ray (docs/CONTRACTS.md, Sweeps and population evaluation): scale-out is an optional
extra; a run directory stays the unit of state.

`spec` expands a sweep spec (grid and/or random draws over TrainConfig keys × seeds) into trials;
`runner` runs each trial as an ordinary run directory under the sweep directory, on a local Ray
instance or an existing cluster, and keeps `sweep.json`; `budget` is the one budget holder a
sweep's trials reserve from. Above optim in the layers: it may import optim, never the reverse.
"""
