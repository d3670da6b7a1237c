"""What counts as an anchor (``rules``, pure data, no spaCy) and the spaCy boundary (``spacy_extract``)."""
