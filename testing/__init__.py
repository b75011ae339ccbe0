"""The tests' names for the scripted servers, which live in the package (r2mad/bench/scripted/) so that
`r2mad bench` runs where the package is installed; only tests import from here."""
