"""Episodes: the multi-turn tool loop, the simulated user of dialogue tasks, task probes."""
