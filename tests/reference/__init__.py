"""Reference implementations that share no code with receval (see ``oracle.py``)."""
