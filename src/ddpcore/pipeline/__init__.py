"""One batch, one way: parse -> sentences -> items -> entities -> distances -> tables."""
