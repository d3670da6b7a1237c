"""Readers and writers: the only code in ddpcore that opens files."""
