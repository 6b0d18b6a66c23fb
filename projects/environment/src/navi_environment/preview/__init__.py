"""A picture of a compiled scene: top view, side view, floor plan and a panorama from a spawn."""
