"""Pictures of a memory: its story on a time line in Rerun (:mod:`locimem.viz.rerun`, the
``rerun`` extra) and a self-contained browser map with a time slider (:mod:`locimem.viz.map`).
Both draw the frames of :func:`locimem.viz.story.iter_story`."""
