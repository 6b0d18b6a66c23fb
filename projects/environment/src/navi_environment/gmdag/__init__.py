"""The compiler side's product: GMDAG v1, the on-disk signed distance field of a scene.

``format`` (layout constants), ``writer`` (dense grids -> deduplicated DAG), ``reader`` (every
format rule checked before anything traces it), ``sample`` (point queries and dense grids for tests
and qualification); see ``docs/gmdag.md``. Nothing is imported here: each user loads what it needs.
"""
