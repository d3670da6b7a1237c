"""Engines that run the pipeline over a corpus: local (in-process and -j N), the journaled file run, Ray, shard merge."""
