"""The conversation benchmark: Human-vs-Agent (RecLLMSim) conversations of simulated and real users, their statistics,
the simulator's fidelity and the judge's optional annotation (README.md lists the metrics)."""
