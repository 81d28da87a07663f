"""The loop: ``agent_loop`` runs a conversation until the model answers in text."""
