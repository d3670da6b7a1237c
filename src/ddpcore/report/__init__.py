"""Plots (``ddp plot``) and the self-contained HTML report (``ddp report``). Needs ``ddpcore[plot]``."""
