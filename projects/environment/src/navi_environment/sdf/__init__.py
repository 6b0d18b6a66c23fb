"""Signed distance grids: of a triangle mesh (``mesh_sdf``, exact near the surface with a robust
winding-number sign) and the exact Euclidean distance transform that fills them (``edt``)."""
