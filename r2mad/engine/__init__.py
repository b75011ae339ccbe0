"""One engine for every run: requests -> resolved backbones, bank, admission, saved runs or eval rows, debates."""
