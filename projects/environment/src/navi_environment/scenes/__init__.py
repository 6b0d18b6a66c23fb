"""Procedural scene families (apartment, maze, warehouse, building, hall): layouts, their
rasterisation into distance grids, mesh export, and the ``procedural:<family>`` source syntax
(``registry``)."""
