"""The mobility kind (AgentSociety DailyMobility): generated users scored by Jensen-Shannon against a reference set."""
