"""The agentbench benchmark: AgentBench (THUDM, v0.2 client) run outputs, validation and the overall score."""
