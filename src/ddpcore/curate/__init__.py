"""Curation: select, sample and MIX counterfactual test sets by DDP."""
