"""Simulated users talk to the methods: personas, the simulator's prompt, what each side sees, and the runs."""
