"""openprogram: give a model a menu of functions and let it pick until it answers in text."""
