"""Questions over the state and the record: views, recall, and (later) spatial and semantic
retrieval. Read-only: nothing here writes."""
