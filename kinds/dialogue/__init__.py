"""The dialogue kind (PersonaSteer, ALOE, RLPA): multi-round replies scored by an LLM judge."""
