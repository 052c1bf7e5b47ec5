"""Words about objects, below every reader: matching labels on whole words (:mod:`.text`),
routing a short question to its retriever (:mod:`.router`), how sure a sentence may sound
(:mod:`.hedge`) and text encoders for semantic search (:mod:`.encoder`). Pure: nothing here
reads a memory.
"""
