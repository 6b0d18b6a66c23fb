"""Mesh import (``load``: glTF, OBJ, PLY, STL through trimesh) and orientation (``orient``: which
way is up, and the rotation to Navi's +z), the first steps of compiling a mesh into a scene."""
