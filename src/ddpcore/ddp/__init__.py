"""DDP profiling: stages, the local driver, the parse stage (the DDP half of ddpcore)."""
