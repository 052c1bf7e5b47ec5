"""Evidence kept per object beyond its observations: keyframes (:mod:`.keyframes`), the few
camera frames that saw an object best, chosen by a pure, deterministic retention policy."""
