"""The scene graph's pure parts: rooms (floor polygons, lookup, connectivity) and spatial
relations between object boxes (on, under, in, contains, next_to, near), maintained
incrementally."""
